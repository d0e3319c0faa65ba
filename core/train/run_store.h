// The run directory on disk: run.json, metrics.jsonl and checkpoints/step-N/, every write atomic so
// a process killed at any instant never leaves a corrupt checkpoint. Torch-free: tensors arrive as
// TensorBlob.
#pragma once

#include "model/safetensors.h"
#include "util/sha256.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Contents of one checkpoint: named tensor files (each a safetensors file: "trainable",
// "optimizer"), and a JSON state (scheduler step, RNG state, data position, anything the job needs
// to resume).
struct CheckpointData {
    int64_t step = 0;
    std::vector<std::pair<std::string, std::vector<TensorBlob>>> tensorFiles;  // name -> tensors
    nlohmann::json state;
};

struct CheckpointLoad {
    CheckpointData data;
    std::string dir;  // the checkpoint folder used
    std::vector<std::string>
        warnings;  // e.g. "checkpoints/step-40 is incomplete or corrupt (...): skipped"
};

class RunStore {
public:
    // Opens runDir without touching it: reading a run never writes to it. Writes create the folders
    // they write into.
    explicit RunStore(std::string runDir);
    // A new run's directory: creates runDir and its checkpoints/ folder (throws naming the folder).
    static RunStore create(std::string runDir);

    const std::string& dir() const { return m_dir; }

    // run.json, written atomically.
    void writeRunInfo(const nlohmann::json& info) const;
    nlohmann::json readRunInfo() const;  // throws tb::Error naming the file when missing or invalid

    // Appends one JSON object as a line to metrics.jsonl and flushes it (fsync every call is not
    // required; a torn last line after a kill is tolerated by readMetrics, which skips it).
    void appendMetrics(const nlohmann::json& line) const;
    // lineNumbers, when given, receives each value's line in the file (1-based).
    std::vector<nlohmann::json> readMetrics(std::vector<int64_t>* lineNumbers = nullptr) const;
    // Data parallelism: ranks other than 0 append their own step lines (the same records as
    // metrics.jsonl: progress, tokens/s, memory) to ranks/rank-<R>.jsonl.
    void appendRankMetrics(int rank, const nlohmann::json& line) const;
    std::string rankMetricsPath(int rank) const;
    // Rewrites metrics.jsonl keeping only lines whose "step" <= step (used when resuming from a
    // checkpoint older than the last logged step), atomically.
    void truncateMetrics(int64_t step) const;

    // Writes checkpoints/step-<N>/ atomically: files go to a temporary folder which is fsynced and
    // renamed; a manifest.json with each file's size and SHA-256 is written last. Keeps the newest
    // `keep` complete checkpoints and deletes older ones (keep <= 0: keep all). Returns the
    // checkpoint folder.
    std::string saveCheckpoint(const CheckpointData& data, int keep) const;
    // The same for a checkpoint whose files several processes write (data parallelism): staging is
    // the folder from checkpointStaging(), where the other ranks have already written stagedFiles
    // (their optimizer shards); they are listed in the manifest with the rest, so the checkpoint is
    // complete only when every shard is in.
    std::string saveCheckpoint(const CheckpointData& data, int keep, const std::string& staging,
                               const std::vector<std::string>& stagedFiles) const;
    // A fresh temporary folder for checkpoint `step`, for saveCheckpoint's staged form.
    std::string checkpointStaging(int64_t step) const;

    // Steps of complete checkpoints (manifest present), newest first.
    std::vector<int64_t> checkpointSteps() const;

    // Loads the newest checkpoint whose files match its manifest (size and SHA-256); corrupt or
    // incomplete ones are skipped with a warning. nullopt when none is usable; then `skipped`
    // (when given) says why each one was not ("" when there was none).
    std::optional<CheckpointLoad> loadLatestCheckpoint(std::string* skipped = nullptr) const;

private:
    void ensureFolder(const std::string& folder) const;
    void appendLine(const std::string& path, const nlohmann::json& line) const;
    std::string m_dir;
};

}  // namespace tb
