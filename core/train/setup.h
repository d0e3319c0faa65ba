// Setting up a run before its first step: the device, the base model in fp32 with the method
// applied, and the tokenized train / validation / general sets. Internal to core (LibTorch types).
#pragma once

#include "model/causal_lm.h"
#include "tokenizer/tokenizer.h"
#include "train/batching.h"
#include "train/run_store.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace tb {

// The run's device: `device` through the one rule of model/ (auto = the first CUDA device when
// LibTorch sees one, else the CPU); errors name the config file and key.
torch::Device runDevice(const TrainConfig& config);

// Autocast for a run's precision: bf16 or fp16 compute over fp32 weights; off for fp32.
AutocastGuard precisionAutocast(const torch::Device& device, Precision precision);

// The base model of a run in fp32 on the run's device, with the run's method applied.
// The precision a run computes in (chooseMixedPrecision).
struct PrecisionChoice {
    Precision precision = Precision::Fp32;  // bf16 asked for may fall back to fp32
    std::string path;                       // in words, for the run's log and run.json
    bool fellBack = false;                  // bf16 asked for, but the CPU has no bf16 instructions
};

struct PreparedModel {
    std::shared_ptr<CausalLM> module;
    std::unique_ptr<Tokenizer> tokenizer;
    torch::Device device{torch::kCPU};
    PrecisionChoice precision;
};
PreparedModel prepareModel(const TrainConfig& config);
// The precision a run computes in, after its method is applied: fp32 as is; bf16 / fp16 autocast
// with every frozen linear weight cast once to the half type (trainable weights stay fp32 masters).
// bf16 on a CPU without bf16 instructions falls back to fp32, with the reason in precisionPath.
// fusedHeadLoss: the run's loss applies the head itself (supervised, loss full), so a head tied
// to a frozen embedding is held in the half type too (CausalLM::holdTiedHeadCopy).
PrecisionChoice chooseMixedPrecision(CausalLM& model, const torch::Device& device,
                                     Precision requested, bool fusedHeadLoss);

// Fails unless every token id in `ids` lies inside the model's embedding (config.json's
// vocab_size = vocab), naming the first id outside it, its piece, `where` it is and both files: a
// tokenizer whose added tokens (chat markers, a pad token) the embedding was never resized for
// would otherwise stop the run in the embedding with a message that names nothing.
void checkTokenIds(const std::vector<int32_t>& ids, int64_t vocab, const Tokenizer& tokenizer,
                   const TrainConfig& config, const std::string& where);

// The examples of a run's data as it selects them: train and general from their files or
// snapshots, validation from its file or snapshot or the seeded val_ratio split of train.
struct RunExamples {
    std::vector<Example> train, val, general;
    int64_t rejectedRows = 0;
    std::vector<std::string> warnings;
    std::string hash;      // SHA-256 over the data files, or of the snapshots' contents
    std::string dataName;  // the training file, or "STORE snapshot ID"
    nlohmann::json snapshots = nlohmann::json::object();
};
RunExamples runExamples(const TrainConfig& config);

// Tokenized train / validation / general sets of a run.
struct PreparedData {
    SequenceSet train, val, general;
    int64_t rejectedRows = 0;
    std::vector<std::string> warnings;
    std::vector<Example> stopProbe;  // held-out conversations the stop rate probes
    std::vector<Example> heldOut;    // the validation examples (generation-based evaluation)
    std::string hash;                // SHA-256 over the data files, or of the snapshots' contents
    nlohmann::json snapshots =
        nlohmann::json::object();  // role -> {id, sha256, records} when from a store
};
PreparedData prepareData(const TrainConfig& config, const Tokenizer& tokenizer);

// checkTokenIds over the training, validation and general sequences.
void checkTokenIds(const PreparedData& data, int64_t vocab, const Tokenizer& tokenizer,
                   const TrainConfig& config);

// run.json of a new run: the resolved config, the model (path, SHA-256 over config.json and the
// weights), the data (files or snapshots, hash, sequence counts, packing: PackingStats or null),
// seed, planned steps, versions.
// SHA-256 of a model folder's config.json and its safetensors files (in name order).
std::string modelFolderHash(const std::string& folder);

nlohmann::json runInfo(const TrainConfig& config, const PreparedData& data, int64_t plannedSteps,
                       int64_t trainableParameters);
// The same with the data record given (preference runs: train/pair_data.h).
nlohmann::json runInfo(const TrainConfig& config, const nlohmann::json& data, int64_t plannedSteps,
                       int64_t trainableParameters);

// run.json's record of the trainable token rows the model trains: {"ids": [...], "tokens":
// [pieces]} (empty lists when none).
nlohmann::json trainableTokensRecord(CausalLM& model, const Tokenizer& tokenizer);
// A run's config from its run.json (runDir/run.json): trainable tokens are the ids the run recorded
// (none for a run from before trainable tokens), whatever the model folder's files say now.
TrainConfig runConfig(const nlohmann::json& info, const std::string& runDir);
// A finished (or stopped) run loaded for use: its config (device replaced), run.json, and the base
// model with the run's method and the newest complete checkpoint's trainable tensors, in eval
// mode; the checkpoint stays loaded for tensors kept beside the model (a reward head). Throws
// "RUN: no complete checkpoint to <purpose>" when there is none.
struct LoadedRun {
    TrainConfig config;
    nlohmann::json info;
    PreparedModel model;
    CheckpointLoad checkpoint;
};
// quantizedBase false: a run trained on a quantised base loads on its original base instead (what
// its PEFT adapter applies to).
LoadedRun loadRun(const std::string& runDir, const std::string& device, const char* purpose,
                  bool quantizedBase = true);

// Sets config.trainableTokens to the ids of info's record (none without one).
void useRecordedTrainableTokens(TrainConfig& config, const nlohmann::json& info);

}  // namespace tb
