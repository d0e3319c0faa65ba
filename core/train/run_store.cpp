// The run directory: run.json, append-only metrics.jsonl, and checkpoints written to a temporary
// folder, verified by a SHA-256 manifest and renamed into place; plus a self-contained SHA-256.
#include "train/run_store.h"

#include "util/error.h"
#include "util/file_util.h"

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

// ---- SHA-256 (FIPS 180-4) ----

class Sha256 {
  public:
    void update(const void* data, size_t size)
    {
        const auto* bytes = static_cast<const uint8_t*>(data);
        m_length += size;
        while (size > 0) {
            const size_t take = std::min(size, 64 - m_used);
            std::memcpy(m_block.data() + m_used, bytes, take);
            m_used += take;
            bytes += take;
            size -= take;
            if (m_used == 64) {
                compress(m_block.data());
                m_used = 0;
            }
        }
    }

    std::string hex()
    {
        const uint64_t bits = m_length * 8;
        const uint8_t pad = 0x80;
        update(&pad, 1);
        const uint8_t zero = 0;
        while (m_used != 56)
            update(&zero, 1);
        uint8_t length[8];
        for (int i = 0; i < 8; ++i)
            length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
        update(length, 8);
        static const char* digits = "0123456789abcdef";
        std::string out;
        for (uint32_t word : m_state)
            for (int shift = 28; shift >= 0; shift -= 4)
                out.push_back(digits[(word >> shift) & 0xf]);
        return out;
    }

  private:
    static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

    void compress(const uint8_t* block)
    {
        static constexpr uint32_t k[64] = {
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
            0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
            0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
            0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
            0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
            0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
            0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
            0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
            0xc67178f2};
        uint32_t w[64];
        for (int i = 0; i < 16; ++i)
            w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
                   uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
        for (int i = 16; i < 64; ++i) {
            const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
            const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = m_state[0], b = m_state[1], c = m_state[2], d = m_state[3];
        uint32_t e = m_state[4], f = m_state[5], g = m_state[6], h = m_state[7];
        for (int i = 0; i < 64; ++i) {
            const uint32_t t1 =
                h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
            const uint32_t t2 =
                (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        const uint32_t add[8] = {a, b, c, d, e, f, g, h};
        for (int i = 0; i < 8; ++i)
            m_state[i] += add[i];
    }

    std::array<uint32_t, 8> m_state{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::array<uint8_t, 64> m_block{};
    size_t m_used = 0;
    uint64_t m_length = 0; // bytes
};

// ---- file system helpers ----

void syncPath(const std::string& path, bool directory)
{
    const int fd =
        ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        fail(path, ": cannot open to flush (", std::strerror(errno), ")");
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0)
        fail(path, ": cannot flush to disk (", std::strerror(err), ")");
}

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

// A temporary or replaced folder (".step-N.tmp-PID", ".step-N.old-PID") whose writer is gone: no
// process with that id, or this process (a save that failed earlier).
bool isStaleWork(const std::string& name)
{
    if (name.rfind(".step-", 0) != 0)
        return false;
    size_t mark = name.rfind(".tmp-");
    if (mark == std::string::npos)
        mark = name.rfind(".old-");
    if (mark == std::string::npos)
        return false;
    long pid = 0;
    try {
        pid = std::stol(name.substr(mark + 5));
    } catch (const std::exception&) {
        return true;
    }
    if (pid <= 0 || pid == static_cast<long>(::getpid()))
        return true;
    return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
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

} // namespace

std::string sha256Hex(const std::string& bytes)
{
    Sha256 hash;
    hash.update(bytes.data(), bytes.size());
    return hash.hex();
}

std::string sha256File(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, ": cannot open (", std::strerror(errno), ")");
    Sha256 hash;
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        hash.update(buffer.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad())
        fail(path, ": read error");
    return hash.hex();
}

RunStore::RunStore(std::string runDir) : m_dir(std::move(runDir))
{
    std::error_code ec;
    fs::create_directories(joinPath(m_dir, "checkpoints"), ec);
    if (ec || !isDirectory(joinPath(m_dir, "checkpoints")))
        fail(m_dir, ": cannot create the run directory (", ec ? ec.message() : "not a folder", ")");
}

void RunStore::writeRunInfo(const nlohmann::json& info) const
{
    writeFileAtomic(joinPath(m_dir, "run.json"), info.dump(2) + "\n");
}

nlohmann::json RunStore::readRunInfo() const
{
    const std::string path = joinPath(m_dir, "run.json");
    if (!fileExists(path))
        fail(path, ": not found");
    const std::string text = readFile(path);
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        fail(path, ": invalid JSON (", e.what(), ")");
    }
}

void RunStore::appendMetrics(const nlohmann::json& line) const
{
    const std::string path = joinPath(m_dir, kMetrics);
    const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
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
        writeAll(fd, text, path); // one write: O_APPEND keeps the line in one piece
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0)
        fail(path, ": cannot close (", std::strerror(errno), ")");
}

std::vector<nlohmann::json> RunStore::readMetrics() const
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
            continue;
        }
        if (content.find_first_not_of(" \t\r\n", start) == std::string::npos)
            break; // the last line is torn (killed mid-write): skipped
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
    if (data.step < 0)
        fail(m_dir, ": checkpoint step must be >= 0 (got ", data.step, ")");
    std::vector<std::string> names;
    for (const auto& [name, tensors] : data.tensorFiles) {
        checkFileName(name);
        if (std::find(names.begin(), names.end(), name) != names.end())
            fail("checkpoint tensor file '", name, "' appears twice");
        names.push_back(name);
    }

    const std::string checkpoints = joinPath(m_dir, "checkpoints");
    const std::string folderName = "step-" + std::to_string(data.step);
    const std::string final = joinPath(checkpoints, folderName);
    const std::string pid = std::to_string(::getpid());
    const std::string tmp = joinPath(checkpoints, "." + folderName + ".tmp-" + pid);
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec))
        fail(tmp, ": cannot create (", ec.message(), ")");

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
        writeFileAtomic(joinPath(tmp, kState), data.state.dump(2) + "\n");
        record(kState);
        const json manifest = {{"format", "tunebench-checkpoint"},
                               {"version", 1},
                               {"step", data.step},
                               {"files", files}};
        writeFileAtomic(joinPath(tmp, kManifest), manifest.dump(2) + "\n");
        syncPath(tmp, true);

        if (fileExists(final) &&
            ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final.c_str(), RENAME_EXCHANGE) == 0) {
            fs::remove_all(tmp, ec); // now holds the replaced checkpoint
        } else if (fileExists(final)) {
            // No atomic exchange on this file system: move the old folder aside, the new one in.
            const std::string old = joinPath(checkpoints, "." + folderName + ".old-" + pid);
            fs::remove_all(old, ec);
            if (::rename(final.c_str(), old.c_str()) != 0)
                fail(final, ": cannot move aside (", std::strerror(errno), ")");
            if (::rename(tmp.c_str(), final.c_str()) != 0) {
                const int err = errno;
                ::rename(old.c_str(), final.c_str()); // put the previous checkpoint back
                fail(final, ": cannot rename into place (", std::strerror(err), ")");
            }
            fs::remove_all(old, ec);
        } else if (::rename(tmp.c_str(), final.c_str()) != 0) {
            fail(final, ": cannot rename into place (", std::strerror(errno), ")");
        }
        syncPath(checkpoints, true);
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
        if (isStaleWork(entry.path().filename().string()))
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

std::optional<CheckpointLoad> RunStore::loadLatestCheckpoint() const
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
    return std::nullopt;
}

} // namespace tb
