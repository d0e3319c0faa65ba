// The run directory: run.json, append-only metrics.jsonl, and checkpoints written to a temporary
// folder, verified by a SHA-256 manifest and renamed into place.
#include "train/run_store.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"
#include "util/sha256.h"
#include "util/staged_folder.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kManifest = "manifest.json";
constexpr const char* kState = "state.json";
constexpr const char* kMetrics = "metrics.jsonl";

// ---- file system helpers ----

void writeAll(int fd, const std::string& bytes, const std::string& path)
{
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail(path, ": write failed (", std::strerror(errno), ")");
        done += static_cast<size_t>(n);
    }
}

// "step-40" -> 40; -1 for anything else.
int64_t stepOfFolder(const std::string& name)
{
    if (name.rfind("step-", 0) != 0 || name.size() == 5 || name.size() > 5 + 18)
        return -1;
    int64_t step = 0;
    for (size_t i = 5; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        step = step * 10 + (name[i] - '0');
    }
    return step;
}

// step-N folders (complete or not), newest first.
std::vector<std::pair<int64_t, std::string>> stepFolders(const std::string& checkpointsDir)
{
    std::vector<std::pair<int64_t, std::string>> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(checkpointsDir, ec)) {
        const int64_t step = stepOfFolder(entry.path().filename().string());
        std::error_code dirEc;
        if (step >= 0 && entry.is_directory(dirEc))
            out.emplace_back(step, entry.path().string());
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    return out;
}

void checkFileName(const std::string& name);

void checkCheckpointData(const std::string& dir, const CheckpointData& data)
{
    if (data.step < 0)
        fail(dir, ": checkpoint step must be >= 0 (got ", data.step, ")");
    std::vector<std::string> names;
    for (const auto& [name, tensors] : data.tensorFiles) {
        checkFileName(name);
        if (std::find(names.begin(), names.end(), name) != names.end())
            fail("checkpoint tensor file '", name, "' appears twice");
        names.push_back(name);
    }
}

void checkFileName(const std::string& name)
{
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
        name == "state" || name == "manifest")
        fail("checkpoint tensor file name '", name,
             "' is not allowed (a plain name other than "
             "state and manifest)");
}

// Verifies one step-N folder against its manifest and reads it; throws tb::Error saying what is
// wrong.
CheckpointData readCheckpoint(const std::string& folder, int64_t step)
{
    const std::string manifestPath = joinPath(folder, kManifest);
    if (!fileExists(manifestPath))
        fail("manifest.json missing");
    const json manifest = json::parse(readFile(manifestPath), nullptr, false);
    if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("files") ||
        !manifest["files"].is_array())
        fail("manifest.json is not a valid manifest");
    if (!manifest.contains("step") || !manifest["step"].is_number_integer() ||
        manifest["step"].get<int64_t>() != step)
        fail("manifest.json names step ", manifest.value("step", json()).dump(), ", not ", step);

    CheckpointData data;
    data.step = step;
    bool haveState = false;
    for (const auto& entry : manifest["files"]) {
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
            !entry.contains("size") || !entry["size"].is_number_unsigned() ||
            !entry.contains("sha256") || !entry["sha256"].is_string())
            fail("manifest.json has a malformed file entry ", entry.dump());
        const std::string name = entry["name"].get<std::string>();
        if (name.empty() || name.find('/') != std::string::npos)
            fail("manifest.json lists an invalid file name '", name, "'");
        const std::string path = joinPath(folder, name);
        std::error_code ec;
        const auto size = fs::file_size(path, ec);
        if (ec)
            fail(name, " missing");
        if (size != entry["size"].get<uint64_t>())
            fail(name, " has ", size, " bytes, manifest says ", entry["size"].get<uint64_t>());
        const std::string bytes = readFile(path);
        if (sha256Hex(bytes) != entry["sha256"].get<std::string>())
            fail(name, " SHA-256 mismatch");
        if (name == kState) {
            data.state = json::parse(bytes, nullptr, false);
            if (data.state.is_discarded())
                fail("state.json is not valid JSON");
            haveState = true;
            continue;
        }
        const std::string suffix = ".safetensors";
        if (name.size() <= suffix.size() ||
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
            fail("manifest.json lists an unexpected file '", name, "'");
        // Parsed from the bytes already read for the hash (validates the header like open() does).
        const SafetensorsHeader header = parseSafetensorsHeader(
            reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
        std::vector<TensorBlob> tensors;
        for (const auto& info : header.tensors)
            tensors.push_back(
                {info.name, info.dtype, info.shape,
                 bytes.substr(header.dataOffset + info.begin, info.end - info.begin)});
        data.tensorFiles.emplace_back(name.substr(0, name.size() - suffix.size()),
                                      std::move(tensors));
    }
    if (!haveState)
        fail("state.json missing from the manifest");
    return data;
}

}  // namespace

RunStore::RunStore(std::string runDir) : m_dir(std::move(runDir)) {}

RunStore RunStore::create(std::string runDir)
{
    RunStore store(std::move(runDir));
    store.ensureFolder(joinPath(store.m_dir, "checkpoints"));
    return store;
}

void RunStore::ensureFolder(const std::string& folder) const
{
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec || !isDirectory(folder))
        fail(folder, ": cannot create the run directory (", ec ? ec.message() : "not a folder",
             ")");
}

void RunStore::writeRunInfo(const nlohmann::json& info) const
{
    ensureFolder(m_dir);
    writeFileAtomic(joinPath(m_dir, "run.json"), info.dump(2) + "\n");
}

namespace {

// The parts of run.json that resuming, exporting and generating read, checked for their types
// (the file is ours, but a hand-edited one must be named, not fail in the JSON library).
void checkRunInfo(const json& info, const std::string& path)
{
    if (!info.is_object())
        fail(path, ": expected a JSON object, found ", info.type_name());
    const auto config = info.find("config");
    if (config == info.end() || !config->is_object())
        fail(path, ": key 'config' ", config == info.end() ? "is missing" : "is not an object");
    if (const auto dist = info.find("dist"); dist != info.end() && !dist->is_null()) {
        const auto size = dist->is_object() ? dist->find("world_size") : dist->end();
        if (!dist->is_object() || size == dist->end() || !size->is_number_integer() ||
            size->get<int64_t>() < 1 || size->get<int64_t>() > 65536)
            fail(path, ": key 'dist.world_size' must be a whole number from 1 to 65536");
    }
    if (const auto tokens = info.find("trainable_tokens"); tokens != info.end()) {
        const auto ids = tokens->is_object() ? tokens->find("ids") : tokens->end();
        if (!tokens->is_object() || (ids != tokens->end() && !ids->is_array()))
            fail(path, ": key 'trainable_tokens' must be an object with a list 'ids'");
        if (ids != tokens->end())
            for (size_t i = 0; i < ids->size(); ++i)
                if (!(*ids)[i].is_number_integer() || (*ids)[i].get<int64_t>() < 0)
                    fail(path, ": key 'trainable_tokens.ids' item ", i + 1,
                         " is not a token id (a whole number from 0)");
    }
}

}  // namespace

nlohmann::json RunStore::readRunInfo() const
{
    const std::string path = joinPath(m_dir, "run.json");
    if (!fileExists(path)) {
        // A run stopped while it wrote its first file has its folder and nothing to resume.
        if (isDirectory(joinPath(m_dir, "checkpoints")))
            fail(path, ": not found: the run stopped before it recorded its configuration, so "
                       "there is nothing to resume; start it again with tunebench train --config");
        fail(path, ": not found");
    }
    const std::string text = readFile(path);
    checkJsonDepth(text, path);
    json info;
    try {
        info = json::parse(text);
    } catch (const json::parse_error& e) {
        fail(path, ": invalid JSON (", e.what(), ")");
    }
    checkRunInfo(info, path);
    return info;
}

void RunStore::appendMetrics(const nlohmann::json& line) const
{
    appendLine(joinPath(m_dir, kMetrics), line);
}

std::string RunStore::rankMetricsPath(int rank) const
{
    return joinPath(joinPath(m_dir, "ranks"), "rank-" + std::to_string(rank) + ".jsonl");
}

void RunStore::appendRankMetrics(int rank, const nlohmann::json& line) const
{
    ensureFolder(joinPath(m_dir, "ranks"));
    appendLine(rankMetricsPath(rank), line);
}

void RunStore::appendLine(const std::string& path, const nlohmann::json& line) const
{
    const int flags = O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC;
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0 && errno == ENOENT) {  // the first line of a run whose folder nothing made yet
        ensureFolder(m_dir);
        fd = ::open(path.c_str(), flags, 0644);
    }
    if (fd < 0)
        fail(path, ": cannot open for appending (", std::strerror(errno), ")");
    try {
        // A kill mid-write leaves a torn last line without '\n'; appending to it would glue two
        // records into one bad line in the middle. End it first: keep it when it parses, else cut
        // it off.
        struct stat st {};
        char last = '\n';
        if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) != 1)
            last = '\n';
        std::string text;
        if (last != '\n') {
            const std::string content = readFile(path);
            const size_t cut =
                content.rfind('\n') == std::string::npos ? 0 : content.rfind('\n') + 1;
            if (json::accept(content.substr(cut)))
                text = "\n";
            else if (::ftruncate(fd, static_cast<off_t>(cut)) != 0)
                fail(path, ": cannot cut a torn last line (", std::strerror(errno), ")");
        }
        text += line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        writeAll(fd, text, path);  // one write: O_APPEND keeps the line in one piece
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0)
        fail(path, ": cannot close (", std::strerror(errno), ")");
}

std::vector<nlohmann::json> RunStore::readMetrics(std::vector<int64_t>* lineNumbers) const
{
    const std::string path = joinPath(m_dir, kMetrics);
    std::vector<json> out;
    if (!fileExists(path))
        return out;
    const std::string content = readFile(path);
    size_t start = 0;
    int64_t lineNo = 0;
    while (start < content.size()) {
        const size_t end = std::min(content.find('\n', start), content.size());
        const std::string line = content.substr(start, end - start);
        ++lineNo;
        start = end + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        json value = json::parse(line, nullptr, false);
        if (!value.is_discarded()) {
            out.push_back(std::move(value));
            if (lineNumbers)
                lineNumbers->push_back(lineNo);
            continue;
        }
        if (content.find_first_not_of(" \t\r\n", start) == std::string::npos)
            break;  // the last line is torn (killed mid-write): skipped
        fail(path, ":", lineNo, ": invalid JSON line: ", line.substr(0, 80));
    }
    return out;
}

void RunStore::truncateMetrics(int64_t step) const
{
    const std::string path = joinPath(m_dir, kMetrics);
    if (!fileExists(path))
        return;
    std::string kept;
    for (const auto& line : readMetrics()) {
        // Lines without a numeric step (events, notes) stay.
        if (line.is_object() && line.contains("step") && line["step"].is_number() &&
            line["step"].get<double>() > static_cast<double>(step))
            continue;
        kept += line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
    writeFileAtomic(path, kept);
}

std::string RunStore::saveCheckpoint(const CheckpointData& data, int keep) const
{
    checkCheckpointData(m_dir, data);  // before anything is created
    return saveCheckpoint(data, keep, checkpointStaging(data.step), {});
}

std::string RunStore::checkpointStaging(int64_t step) const
{
    const std::string checkpoints = joinPath(m_dir, "checkpoints");
    ensureFolder(checkpoints);
    const std::string tmp = joinPath(checkpoints, ".step-" + std::to_string(step) + ".tmp-" +
                                                      std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec))
        fail(tmp, ": cannot create (", ec.message(), ")");
    return tmp;
}

std::string RunStore::saveCheckpoint(const CheckpointData& data, int keep,
                                     const std::string& staging,
                                     const std::vector<std::string>& stagedFiles) const
{
    checkCheckpointData(m_dir, data);

    const std::string checkpoints = joinPath(m_dir, "checkpoints");
    ensureFolder(checkpoints);
    const std::string folderName = "step-" + std::to_string(data.step);
    const std::string final = joinPath(checkpoints, folderName);
    const std::string& tmp = staging;
    std::error_code ec;
    for (const std::string& name : stagedFiles) {
        checkFileName(name);
        if (!fileExists(joinPath(tmp, name)))
            fail(joinPath(tmp, name), ": a shard of checkpoint step ", data.step, " is missing");
    }

    try {
        json files = json::array();
        auto record = [&](const std::string& name) {
            const std::string path = joinPath(tmp, name);
            std::error_code sizeEc;
            const uint64_t size = fs::file_size(path, sizeEc);
            if (sizeEc)
                fail(path, ": cannot stat (", sizeEc.message(), ")");
            files.push_back({{"name", name}, {"size", size}, {"sha256", sha256File(path)}});
        };
        // Each file is fsynced by its atomic writer; the manifest goes last, so a folder with a
        // manifest has every file it lists.
        for (const auto& [name, tensors] : data.tensorFiles) {
            writeSafetensors(joinPath(tmp, name + ".safetensors"), tensors);
            record(name + ".safetensors");
        }
        for (const std::string& name : stagedFiles)
            record(name);
        writeFileAtomic(joinPath(tmp, kState), data.state.dump(2) + "\n");
        record(kState);
        const json manifest = {{"format", "tunebench-checkpoint"},
                               {"version", 1},
                               {"step", data.step},
                               {"files", files}};
        writeFileAtomic(joinPath(tmp, kManifest), manifest.dump(2) + "\n");
        syncPath(tmp, true);

        replaceFolder(tmp, final);  // flushes checkpoints/ too
    } catch (...) {
        fs::remove_all(tmp, ec);
        throw;
    }

    // Keep the one just written and the newest others, up to `keep` complete checkpoints.
    if (keep > 0) {
        int kept = 1;
        for (const auto& [step, folder] : stepFolders(checkpoints)) {
            if (step == data.step || !fileExists(joinPath(folder, kManifest)))
                continue;
            if (kept < keep)
                ++kept;
            else
                fs::remove_all(folder, ec);
        }
    }
    std::vector<fs::path> stale;
    for (const auto& entry : fs::directory_iterator(checkpoints, ec))
        // A temporary or replaced checkpoint (".step-N.tmp-PID", ".step-N.old-PID") whose
        // writer is gone.
        if (isStaleWork(entry.path().filename().string(), ".step-"))
            stale.push_back(entry.path());
    for (const auto& path : stale)
        fs::remove_all(path, ec);
    return final;
}

std::vector<int64_t> RunStore::checkpointSteps() const
{
    std::vector<int64_t> out;
    for (const auto& [step, folder] : stepFolders(joinPath(m_dir, "checkpoints")))
        if (fileExists(joinPath(folder, kManifest)))
            out.push_back(step);
    return out;
}

std::optional<CheckpointLoad> RunStore::loadLatestCheckpoint(std::string* skipped) const
{
    CheckpointLoad load;
    for (const auto& [step, folder] : stepFolders(joinPath(m_dir, "checkpoints"))) {
        try {
            load.data = readCheckpoint(folder, step);
            load.dir = folder;
            return load;
        } catch (const std::exception& e) {
            // tb::Error, or a filesystem/JSON exception from a folder changed under us.
            load.warnings.push_back(folder + " is incomplete or corrupt (" + e.what() +
                                    "): skipped");
        }
    }
    if (skipped) {
        skipped->clear();
        for (const std::string& w : load.warnings)
            *skipped += (skipped->empty() ? "" : "; ") + w;
    }
    return std::nullopt;
}

}  // namespace tb
