// safetensors: a memory-mapped, validating reader (single files and sharded checkpoints) and an
// atomic writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tb {

enum class DType {
    F32,
    F16,
    BF16,
    F64,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    U64,
    Bool,
    F8E4M3,
    F8E5M2
};

const char* dtypeName(DType dtype);  // safetensors spelling: "F32", "BF16", ...
size_t dtypeSize(DType dtype);       // bytes per element
bool parseDtype(const std::string& name, DType* out);

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0;  // byte offset in the data section
    uint64_t end = 0;
    int64_t numel() const;
};

struct SafetensorsHeader {
    std::vector<TensorInfo> tensors;              // sorted by begin offset
    std::map<std::string, std::string> metadata;  // "__metadata__"
    uint64_t dataOffset = 0;                      // 8 + header length
};

// Validates a whole safetensors image in memory: header length bound, valid JSON object, known
// dtypes, shape x dtype size == byte range, ranges inside the data section and not overlapping.
// `path` only labels error messages.
SafetensorsHeader parseSafetensorsHeader(const uint8_t* bytes, size_t size,
                                         const std::string& path);

// A memory-mapped .safetensors file.
class SafetensorsFile {
public:
    static std::shared_ptr<SafetensorsFile> open(const std::string& path);
    ~SafetensorsFile();
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;

    const std::string& path() const { return m_path; }
    const SafetensorsHeader& header() const { return m_header; }
    const TensorInfo* find(const std::string& name) const;
    const uint8_t* data(const TensorInfo& info) const
    {
        return m_base + m_header.dataOffset + info.begin;
    }

private:
    SafetensorsFile() = default;
    std::string m_path;
    const uint8_t* m_base = nullptr;
    size_t m_size = 0;
    SafetensorsHeader m_header;
    std::map<std::string, size_t> m_index;
};

// All tensors of a checkpoint folder: model.safetensors, or the shards listed by
// model.safetensors.index.json (each shard validated, every indexed tensor present).
class Checkpoint {
public:
    static Checkpoint open(const std::string& dirOrFile);
    struct Entry {
        std::shared_ptr<SafetensorsFile> file;
        const TensorInfo* info = nullptr;
    };
    const Entry* find(const std::string& name) const;
    std::vector<std::string> names() const;
    const std::string& location() const { return m_location; }

private:
    std::string m_location;
    std::vector<std::shared_ptr<SafetensorsFile>> m_files;
    std::map<std::string, Entry> m_entries;
};

// A checkpoint saved already quantised in a format Tunebench does not read, recognised by its
// tensor names: "GPTQ" (qweight, qzeros, g_idx), "AWQ" (qweight, qzeros, no g_idx), "bitsandbytes
// 4-bit" (absmax, quant_map, quant_state), "bitsandbytes int8" (SCB); empty when none. `tensor`
// gets the first tensor that shows it.
std::string quantizedCheckpointFormat(const Checkpoint& checkpoint, std::string* tensor = nullptr);

// One tensor to write: raw little-endian bytes.
struct TensorBlob {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::string bytes;
};

// Writes a .safetensors file atomically, tensors in the given order, 8-byte aligned header.
void writeSafetensors(const std::string& path, const std::vector<TensorBlob>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace tb
