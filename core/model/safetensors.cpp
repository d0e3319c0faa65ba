// safetensors reader (mmap + strict header validation), sharded checkpoints and the atomic writer.
#include "model/safetensors.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tb {
namespace {

struct DTypeEntry {
    DType dtype;
    const char* name;
    size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {DType::F32, "F32", 4},   {DType::F16, "F16", 2},        {DType::BF16, "BF16", 2},
    {DType::F64, "F64", 8},   {DType::I64, "I64", 8},        {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},   {DType::I8, "I8", 1},          {DType::U8, "U8", 1},
    {DType::U16, "U16", 2},   {DType::U32, "U32", 4},        {DType::U64, "U64", 8},
    {DType::Bool, "BOOL", 1}, {DType::F8E4M3, "F8_E4M3", 1}, {DType::F8E5M2, "F8_E5M2", 1},
};

// Header larger than this is refused before parsing: real checkpoints stay far below it.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // bytes

uint64_t readLe64(const uint8_t* p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

}  // namespace

const char* dtypeName(DType dtype)
{
    for (const auto& e : kDTypes)
        if (e.dtype == dtype)
            return e.name;
    return "?";
}

size_t dtypeSize(DType dtype)
{
    for (const auto& e : kDTypes)
        if (e.dtype == dtype)
            return e.size;
    return 0;
}

bool parseDtype(const std::string& name, DType* out)
{
    for (const auto& e : kDTypes)
        if (name == e.name) {
            *out = e.dtype;
            return true;
        }
    return false;
}

int64_t TensorInfo::numel() const
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

SafetensorsHeader parseSafetensorsHeader(const uint8_t* bytes, size_t size, const std::string& path)
{
    if (size < 8)
        fail(path, ": not a safetensors file (", size,
             " bytes, shorter than the 8-byte header length)");
    const uint64_t headerLen = readLe64(bytes);
    if (headerLen > kMaxHeaderBytes)
        fail(path, ": header length ", headerLen,
             " exceeds the 100 MiB bound (corrupt or not safetensors)");
    if (headerLen > size - 8)
        fail(path, ": header length ", headerLen, " runs past the end of the file (", size,
             " bytes): truncated?");

    checkJsonDepth(std::string_view(reinterpret_cast<const char*>(bytes) + 8, headerLen),
                   path + ": header");
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(bytes + 8, bytes + 8 + headerLen);
    } catch (const nlohmann::json::exception& e) {
        fail(path, ": header is not valid JSON (", e.what(), ")");
    }
    if (!header.is_object())
        fail(path, ": header is not a JSON object");

    SafetensorsHeader out;
    out.dataOffset = 8 + headerLen;
    const uint64_t dataSize = size - out.dataOffset;

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const auto& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object())
                fail(path, ": __metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string())
                    fail(path, ": __metadata__ value of '", m.key(), "' is not a string");
                out.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object())
            fail(path, ": tensor '", name, "': entry is not an object");
        auto dt = v.find("dtype");
        auto sh = v.find("shape");
        auto off = v.find("data_offsets");
        if (dt == v.end() || !dt->is_string())
            fail(path, ": tensor '", name, "': missing or non-string dtype");
        if (sh == v.end() || !sh->is_array())
            fail(path, ": tensor '", name, "': missing or non-array shape");
        if (off == v.end() || !off->is_array() || off->size() != 2)
            fail(path, ": tensor '", name, "': data_offsets must be an array of two integers");

        TensorInfo info;
        info.name = name;
        if (!parseDtype(dt->get<std::string>(), &info.dtype))
            fail(path, ": tensor '", name, "': unknown dtype '", dt->get<std::string>(), "'");
        // Element count with overflow checks: a lying shape must not wrap around.
        unsigned __int128 numel = 1;
        for (const auto& d : *sh) {
            if (!d.is_number_unsigned())
                fail(path, ": tensor '", name, "': shape entries must be non-negative integers");
            uint64_t dim = d.get<uint64_t>();
            if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail(path, ": tensor '", name, "': dimension ", dim, " is too large");
            info.shape.push_back(static_cast<int64_t>(dim));
            numel *= dim;
            if (numel > (static_cast<unsigned __int128>(1) << 62))
                fail(path, ": tensor '", name, "': shape is impossibly large");
        }
        for (const auto& o : *off)
            if (!o.is_number_unsigned())
                fail(path, ": tensor '", name, "': data_offsets must be non-negative integers");
        info.begin = (*off)[0].get<uint64_t>();
        info.end = (*off)[1].get<uint64_t>();
        if (info.end < info.begin)
            fail(path, ": tensor '", name, "': data_offsets [", info.begin, ", ", info.end,
                 "] end before they begin");
        const unsigned __int128 expected = numel * dtypeSize(info.dtype);
        if (expected != info.end - info.begin)
            fail(path, ": tensor '", name, "': shape x dtype size is ",
                 static_cast<uint64_t>(expected), " bytes but data_offsets span ",
                 info.end - info.begin, " bytes");
        if (info.end > dataSize)
            fail(path, ": tensor '", name, "': data_offsets [", info.begin, ", ", info.end,
                 "] run past the end of the data section (", dataSize, " bytes): truncated file?");
        out.tensors.push_back(std::move(info));
    }

    std::sort(out.tensors.begin(), out.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
    });
    for (size_t i = 1; i < out.tensors.size(); ++i) {
        const auto& prev = out.tensors[i - 1];
        const auto& cur = out.tensors[i];
        if (cur.begin < prev.end)
            fail(path, ": tensors '", prev.name, "' and '", cur.name,
                 "' overlap in the data section");
    }
    return out;
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path)
{
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fail(path, ": cannot open (", std::strerror(errno), ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(path, ": not a regular file");
    }
    std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
    file->m_path = path;
    file->m_size = static_cast<size_t>(st.st_size);
    if (file->m_size > 0) {
        void* p = ::mmap(nullptr, file->m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            fail(path, ": mmap failed (", std::strerror(errno), ")");
        }
        file->m_base = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    static const uint8_t kEmpty[1] = {0};
    file->m_header =
        parseSafetensorsHeader(file->m_base ? file->m_base : kEmpty, file->m_size, path);
    for (size_t i = 0; i < file->m_header.tensors.size(); ++i)
        file->m_index[file->m_header.tensors[i].name] = i;
    return file;
}

SafetensorsFile::~SafetensorsFile()
{
    if (m_base)
        ::munmap(const_cast<uint8_t*>(m_base), m_size);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const
{
    auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_header.tensors[it->second];
}

Checkpoint Checkpoint::open(const std::string& dirOrFile)
{
    Checkpoint ckpt;
    ckpt.m_location = dirOrFile;
    auto addFile = [&ckpt](const std::string& path) {
        auto file = SafetensorsFile::open(path);
        for (const auto& info : file->header().tensors) {
            if (ckpt.m_entries.count(info.name))
                fail(path, ": tensor '", info.name, "' also appears in another shard");
            ckpt.m_entries[info.name] = Entry{file, &info};
        }
        ckpt.m_files.push_back(file);
    };

    if (!isDirectory(dirOrFile)) {
        addFile(dirOrFile);
        return ckpt;
    }
    const std::string single = joinPath(dirOrFile, "model.safetensors");
    const std::string indexPath = joinPath(dirOrFile, "model.safetensors.index.json");
    if (fileExists(single)) {
        addFile(single);
        return ckpt;
    }
    if (!fileExists(indexPath))
        fail(dirOrFile, ": no model.safetensors or model.safetensors.index.json (only safetensors "
                        "weights are supported)");

    const std::string indexText = readFile(indexPath);
    checkJsonDepth(indexText, indexPath);
    nlohmann::json index;
    try {
        index = nlohmann::json::parse(indexText);
    } catch (const nlohmann::json::exception& e) {
        fail(indexPath, ": not valid JSON (", e.what(), ")");
    }
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
        fail(indexPath, ": missing object 'weight_map'");
    std::set<std::string> shards;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
        if (!it.value().is_string())
            fail(indexPath, ": weight_map entry '", it.key(), "' is not a file name");
        const std::string shard = it.value().get<std::string>();
        if (shard.find('/') != std::string::npos || shard.find("..") != std::string::npos)
            fail(indexPath, ": weight_map entry '", it.key(),
                 "' points outside the folder: ", shard);
        shards.insert(shard);
    }
    for (const auto& shard : shards)
        addFile(joinPath(dirOrFile, shard));
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
        auto found = ckpt.m_entries.find(it.key());
        if (found == ckpt.m_entries.end())
            fail(indexPath, ": tensor '", it.key(), "' is listed in weight_map but missing from ",
                 it.value().get<std::string>());
    }
    return ckpt;
}

const Checkpoint::Entry* Checkpoint::find(const std::string& name) const
{
    auto it = m_entries.find(name);
    return it == m_entries.end() ? nullptr : &it->second;
}

std::vector<std::string> Checkpoint::names() const
{
    std::vector<std::string> out;
    for (const auto& [name, entry] : m_entries)
        out.push_back(name);
    return out;
}

void writeSafetensors(const std::string& path, const std::vector<TensorBlob>& tensors,
                      const std::map<std::string, std::string>& metadata)
{
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty())
        header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        int64_t numel = 1;
        for (int64_t d : t.shape)
            numel *= d;
        if (static_cast<uint64_t>(numel) * dtypeSize(t.dtype) != t.bytes.size())
            fail(path, ": tensor '", t.name, "' has ", t.bytes.size(), " bytes, shape needs ",
                 numel * static_cast<int64_t>(dtypeSize(t.dtype)));
        header[t.name] = {{"dtype", dtypeName(t.dtype)},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string json = header.dump();
    while ((8 + json.size()) % 8 != 0)
        json.push_back(' ');
    std::string out;
    out.reserve(8 + json.size() + offset);
    uint64_t len = json.size();
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    out += json;
    for (const auto& t : tensors)
        out += t.bytes;
    writeFileAtomic(path, out);
}

std::string quantizedCheckpointFormat(const Checkpoint& checkpoint, std::string* tensor)
{
    std::string qweight, gIdx, bnb4, bnb8;
    for (const std::string& name : checkpoint.names()) {
        if (qweight.empty() && name.ends_with(".qweight"))
            qweight = name;
        else if (gIdx.empty() && name.ends_with(".g_idx"))
            gIdx = name;
        else if (bnb4.empty() && (name.ends_with(".absmax") || name.ends_with(".quant_map") ||
                                  name.find(".quant_state.bitsandbytes__") != std::string::npos))
            bnb4 = name;
        else if (bnb8.empty() && name.ends_with(".SCB"))
            bnb8 = name;
    }
    auto found = [&](const char* format, const std::string& name) {
        if (tensor)
            *tensor = name;
        return std::string(format);
    };
    if (!qweight.empty())
        return found(gIdx.empty() ? "AWQ" : "GPTQ", qweight);
    if (!bnb4.empty())
        return found("bitsandbytes 4-bit", bnb4);
    if (!bnb8.empty())
        return found("bitsandbytes int8", bnb8);
    return {};
}

}  // namespace tb
