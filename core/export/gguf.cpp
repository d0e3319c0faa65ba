// GGUF v3: the streaming writer and the header reader used for checks (the exports are in
// gguf_export.cpp).
#include "export/gguf.h"

#include "export/gguf_quant.h"
#include "util/error.h"
#include "util/file_util.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>
#include <vector>

namespace tb {
namespace {

// ggml numbers its tensor types from 0 up to about 40 (GGML_TYPE_COUNT, growing as formats are
// added); a type past this bound is no ggml type.
constexpr uint32_t kGgmlTypeBound = 64;

template <typename T> void putLe(std::string& out, T v)
{
    static_assert(std::is_trivially_copyable_v<T>);
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));  // x86-64 and aarch64 are little-endian, as GGUF is
    out.append(raw, sizeof(T));
}

void putString(std::string& out, const std::string& s)
{
    putLe<uint64_t>(out, s.size());
    out += s;
}

template <typename T> GgufValue scalar(GgufValueType type, T v)
{
    GgufValue value;
    value.type = type;
    putLe(value.bytes, v);
    return value;
}

uint64_t alignUp(uint64_t n, uint64_t alignment)
{
    return (n + alignment - 1) / alignment * alignment;
}

}  // namespace

const char* ggufTensorTypeName(GgufTensorType type)
{
    switch (type) {
    case GgufTensorType::F32:
        return "F32";
    case GgufTensorType::F16:
        return "F16";
    case GgufTensorType::Q8_0:
        return "Q8_0";
    case GgufTensorType::BF16:
        return "BF16";
    }
    return "?";
}

GgufTypeLayout ggufTypeLayout(GgufTensorType type)
{
    switch (type) {
    case GgufTensorType::F32:
        return {1, 4};
    case GgufTensorType::F16:
    case GgufTensorType::BF16:
        return {1, 2};
    case GgufTensorType::Q8_0:
        return {kQ8_0BlockSize, kQ8_0BlockBytes};
    }
    fail("GGUF: unknown tensor type ", static_cast<uint32_t>(type));
}

GgufValue GgufValue::u8(uint8_t v)
{
    return scalar(GgufValueType::U8, v);
}
GgufValue GgufValue::i8(int8_t v)
{
    return scalar(GgufValueType::I8, v);
}
GgufValue GgufValue::u16(uint16_t v)
{
    return scalar(GgufValueType::U16, v);
}
GgufValue GgufValue::i16(int16_t v)
{
    return scalar(GgufValueType::I16, v);
}
GgufValue GgufValue::u32(uint32_t v)
{
    return scalar(GgufValueType::U32, v);
}
GgufValue GgufValue::i32(int32_t v)
{
    return scalar(GgufValueType::I32, v);
}
GgufValue GgufValue::f32(float v)
{
    return scalar(GgufValueType::F32, v);
}
GgufValue GgufValue::boolean(bool v)
{
    return scalar(GgufValueType::Bool, static_cast<uint8_t>(v ? 1 : 0));
}
GgufValue GgufValue::u64(uint64_t v)
{
    return scalar(GgufValueType::U64, v);
}
GgufValue GgufValue::i64(int64_t v)
{
    return scalar(GgufValueType::I64, v);
}
GgufValue GgufValue::f64(double v)
{
    return scalar(GgufValueType::F64, v);
}

GgufValue GgufValue::string(const std::string& v)
{
    GgufValue value;
    value.type = GgufValueType::String;
    putString(value.bytes, v);
    return value;
}

namespace {

// An array of `elem` values, each laid out by put(bytes, element).
template <class V, class Put> GgufValue arrayValue(GgufValueType elem, const V& v, Put put)
{
    GgufValue value;
    value.type = GgufValueType::Array;
    value.elemType = elem;
    value.count = v.size();
    for (const auto& x : v)
        put(value.bytes, x);
    return value;
}

}  // namespace

GgufValue GgufValue::strings(const std::vector<std::string>& v)
{
    return arrayValue(GgufValueType::String, v,
                      [](std::string& b, const std::string& x) { putString(b, x); });
}

GgufValue GgufValue::f32s(const std::vector<float>& v)
{
    return arrayValue(GgufValueType::F32, v, [](std::string& b, float x) { putLe(b, x); });
}

GgufValue GgufValue::i32s(const std::vector<int32_t>& v)
{
    return arrayValue(GgufValueType::I32, v, [](std::string& b, int32_t x) { putLe(b, x); });
}

GgufValue GgufValue::booleans(const std::vector<bool>& v)
{
    return arrayValue(GgufValueType::Bool, v,
                      [](std::string& b, bool x) { b.push_back(x ? 1 : 0); });
}

void writeGguf(const std::string& path, const std::vector<GgufKeyValue>& metadata,
               const std::vector<GgufTensor>& tensors)
{
    uint64_t alignment = kGgufAlignment;
    for (const auto& kv : metadata) {
        if (kv.key != "general.alignment")
            continue;
        uint32_t a = 0;
        if (kv.value.type != GgufValueType::U32 || kv.value.bytes.size() != 4)
            fail(path, ": general.alignment must be a uint32");
        std::memcpy(&a, kv.value.bytes.data(), 4);
        if (a == 0 || (a & (a - 1)) != 0 || a % 8 != 0)
            fail(path, ": general.alignment ", a, " is not a power of two of at least 8");
        alignment = a;
    }

    // Header, key/values and tensor infos, built in memory (small next to the data).
    std::string head;
    head += "GGUF";
    putLe<uint32_t>(head, 3);
    putLe<uint64_t>(head, tensors.size());
    putLe<uint64_t>(head, metadata.size());
    for (const auto& kv : metadata) {
        putString(head, kv.key);
        putLe<uint32_t>(head, static_cast<uint32_t>(kv.value.type));
        if (kv.value.type == GgufValueType::Array) {
            putLe<uint32_t>(head, static_cast<uint32_t>(kv.value.elemType));
            putLe<uint64_t>(head, kv.value.count);
        }
        head += kv.value.bytes;
    }
    std::vector<uint64_t> sizes;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        if (t.shape.empty() || t.shape.size() > 4)
            fail(path, ": tensor '", t.name, "' has ", t.shape.size(),
                 " dimensions (GGUF takes 1 to 4)");
        uint64_t numel = 1;
        for (int64_t d : t.shape) {
            if (d <= 0)
                fail(path, ": tensor '", t.name, "' has a dimension of ", d);
            numel *= static_cast<uint64_t>(d);
        }
        putString(head, t.name);
        putLe<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
        for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)  // fastest-varying first
            putLe<uint64_t>(head, static_cast<uint64_t>(*it));
        const GgufTypeLayout layout = ggufTypeLayout(t.type);
        if (t.shape.back() % layout.blockSize != 0)
            fail(path, ": tensor '", t.name, "' has rows of ", t.shape.back(),
                 " values, not whole ", ggufTensorTypeName(t.type), " blocks of ",
                 layout.blockSize);
        putLe<uint32_t>(head, static_cast<uint32_t>(t.type));
        putLe<uint64_t>(head, offset);
        sizes.push_back(numel / static_cast<uint64_t>(layout.blockSize) *
                        static_cast<uint64_t>(layout.blockBytes));
        offset = alignUp(offset + sizes.back(), alignment);
    }

    std::error_code ec;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty())
        std::filesystem::create_directories(parent, ec);
    if (ec)
        fail(path, ": cannot create folder ", parent.string(), " (", ec.message(), ")");
    AtomicFileWriter file(path);
    uint64_t written = 0;
    const auto write = [&file, &written](std::string_view bytes) {
        file.write(bytes);
        written += bytes.size();
    };
    const auto pad = [&write, &written, alignment] {
        write(std::string(alignUp(written, alignment) - written, '\0'));
    };
    write(head);
    pad();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string bytes = tensors[i].data ? tensors[i].data() : std::string();
        if (bytes.size() != sizes[i])
            fail(path, ": tensor '", tensors[i].name, "' has ", bytes.size(),
                 " bytes, its shape and type need ", sizes[i]);
        write(bytes);
        if (i + 1 < tensors.size())
            pad();
    }
    file.commit();
}

GgufSummary readGgufSummary(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, ": cannot open (", std::strerror(errno), ")");
    GgufSummary s;
    std::error_code ec;
    s.fileSize = std::filesystem::file_size(path, ec);
    if (ec)
        fail(path, ": cannot stat (", ec.message(), ")");
    uint64_t pos = 0;
    auto need = [&](uint64_t n, const char* what) {
        if (n > s.fileSize - pos)
            fail(path, ": truncated at byte ", pos, " reading ", what);
    };
    auto raw = [&](void* dst, uint64_t n, const char* what) {
        need(n, what);
        in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
        if (!in)
            fail(path, ": read error at byte ", pos);
        pos += n;
    };
    auto u32 = [&](const char* what) {
        uint32_t v = 0;
        raw(&v, sizeof v, what);
        return v;
    };
    auto u64 = [&](const char* what) {
        uint64_t v = 0;
        raw(&v, sizeof v, what);
        return v;
    };
    auto str = [&](const char* what) {
        const uint64_t n = u64(what);
        need(n, what);
        std::string v(n, '\0');
        raw(v.data(), n, what);
        return v;
    };
    char magic[4];
    raw(magic, 4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0)
        fail(path, ": not a GGUF file (no GGUF magic)");
    s.version = u32("the version");
    if (s.version != 3)
        fail(path, ": GGUF version ", s.version, " (only version 3 is read)");
    const uint64_t tensorCount = u64("the tensor count");
    const uint64_t kvCount = u64("the key/value count");
    static const size_t kSize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    // Reads one value of `type` as text (arrays: "[type x count]", skipped).
    std::function<std::string(uint32_t, const std::string&)> value = [&](uint32_t type,
                                                                         const std::string& key) {
        if (type > 12)
            fail(path, ": key '", key, "' has unknown value type ", type);
        if (type == 8)
            return str("a string value");
        if (type == 9) {
            const uint32_t elem = u32("an array type");
            const uint64_t count = u64("an array length");
            if (elem > 12 || elem == 9)
                fail(path, ": key '", key, "' is an array of unsupported type ", elem);
            if (elem == 8) {
                for (uint64_t i = 0; i < count; ++i)
                    str("an array string");
            } else {
                if (count > s.fileSize)  // before the product below could wrap
                    need(count, "array elements");
                need(count * kSize[elem], "array elements");
                in.seekg(static_cast<std::streamoff>(count * kSize[elem]), std::ios::cur);
                pos += count * kSize[elem];
            }
            return cat("[", elem, " x ", count, "]");
        }
        uint64_t bits = 0;
        raw(&bits, kSize[type], "a value");
        switch (type) {
        case 0:
            return std::to_string(static_cast<uint8_t>(bits));
        case 1:
            return std::to_string(static_cast<int8_t>(bits));
        case 2:
            return std::to_string(static_cast<uint16_t>(bits));
        case 3:
            return std::to_string(static_cast<int16_t>(bits));
        case 4:
            return std::to_string(static_cast<uint32_t>(bits));
        case 5:
            return std::to_string(static_cast<int32_t>(bits));
        case 6: {
            float f;
            std::memcpy(&f, &bits, 4);
            return cat(f);
        }
        case 7:
            return std::string(bits ? "true" : "false");
        case 10:
            return std::to_string(bits);
        case 11:
            return std::to_string(static_cast<int64_t>(bits));
        default: {
            double d;
            std::memcpy(&d, &bits, 8);
            return cat(d);
        }
        }
    };
    for (uint64_t i = 0; i < kvCount; ++i) {
        const std::string key = str("a key");
        s.metadata[key] = value(u32("a value type"), key);
    }
    uint64_t alignment = kGgufAlignment;
    if (auto it = s.metadata.find("general.alignment"); it != s.metadata.end()) {
        // A power of two as a whole number (GGUF stores it as a u32); text that is not one
        // (a string, a negative int32, a float) is refused rather than wrapped.
        const std::string& text = it->second;
        const bool digits =
            !text.empty() && text.size() <= 10 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        alignment = digits ? std::stoull(text) : 0;
        if (alignment == 0 || alignment > (uint64_t(1) << 30) || (alignment & (alignment - 1)))
            fail(path, ": key 'general.alignment' is ", text,
                 ", where GGUF needs a power of two (32 by default)");
    }
    for (uint64_t i = 0; i < tensorCount; ++i) {
        GgufTensorInfo t;
        t.name = str("a tensor name");
        const uint32_t nDims = u32("a tensor's dimension count");
        if (nDims == 0 || nDims > 4)
            fail(path, ": tensor '", t.name, "' has ", nDims, " dimensions");
        for (uint32_t d = 0; d < nDims; ++d) {
            const uint64_t dim = u64("a dimension");
            if (dim > uint64_t(INT64_MAX))
                fail(path, ": tensor '", t.name, "' has dimension ", dim, " (too large)");
            if (dim == 0)
                fail(path, ": tensor '", t.name, "' has a dimension of 0");
            t.dims.push_back(static_cast<int64_t>(dim));
        }
        t.type = u32("a tensor type");
        if (t.type >= kGgmlTypeBound)
            fail(path, ": tensor '", t.name, "' has type ", t.type,
                 ", which is no ggml tensor type");
        t.offset = u64("a tensor offset");
        if (t.offset % alignment != 0)
            fail(path, ": tensor '", t.name, "' offset ", t.offset, " is not a multiple of ",
                 alignment);
        s.tensors.push_back(std::move(t));
    }
    s.dataOffset = alignUp(pos, alignment);
    std::vector<std::pair<uint64_t, uint64_t>> extents;  // [offset, offset + bytes) of each sized
    std::vector<const GgufTensorInfo*> sized;
    for (const auto& t : s.tensors) {
        // Sizes from the file, multiplied and added without wrapping: a product or sum that
        // overflows 64 bits cannot fit in the file either.
        const auto pastEnd = [&] {
            fail(path, ": tensor '", t.name, "' ends past the end of the file");
        };
        uint64_t numel = 1;
        for (int64_t d : t.dims)
            if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
                pastEnd();
        uint64_t bytes = 0;
        bool overflow = false;
        if (t.type == 0)
            overflow = __builtin_mul_overflow(numel, uint64_t(4), &bytes);
        else if (t.type == 1 || t.type == 30)
            overflow = __builtin_mul_overflow(numel, uint64_t(2), &bytes);
        else if (t.type == 8)  // Q8_0
            overflow =
                __builtin_mul_overflow(numel / kQ8_0BlockSize, uint64_t(kQ8_0BlockBytes), &bytes);
        else
            continue;  // other quantised types: block sizes not checked here
        uint64_t end = 0;
        if (overflow || __builtin_add_overflow(s.dataOffset, t.offset, &end) ||
            __builtin_add_overflow(end, bytes, &end) || end > s.fileSize)
            pastEnd();
        extents.emplace_back(t.offset, t.offset + bytes);
        sized.push_back(&t);
    }
    // Two tensors sharing bytes: a writer's error, or a file made to look smaller than it reads.
    std::vector<size_t> order(extents.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return extents[a].first < extents[b].first; });
    for (size_t k = 1; k < order.size(); ++k)
        if (extents[order[k]].first < extents[order[k - 1]].second)
            fail(path, ": tensors '", sized[order[k - 1]]->name, "' and '", sized[order[k]]->name,
                 "' overlap in the data section");
    return s;
}

}  // namespace tb
