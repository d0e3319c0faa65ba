// GGUF v3: the streaming writer, the header reader used for checks, and the Llama/Mistral/Qwen2
// exports (merged or base model, LoRA adapter).
#include "export/gguf.h"

#include "export/export.h"
#include "export/gguf_quant.h"
#include "export/gguf_vocab.h"
#include "model/causal_lm.h"
#include "model/config.h"
#include "tokenizer/tokenizer.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sys/stat.h>
#include <unistd.h>

namespace tb {
namespace {

template <typename T> void putLe(std::string& out, T v)
{
    static_assert(std::is_trivially_copyable_v<T>);
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T)); // x86-64 and aarch64 are little-endian, as GGUF is
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

// A temp file written in order and renamed into place; removed when destroyed before commit().
class AtomicFile {
  public:
    explicit AtomicFile(std::string path)
        : m_path(std::move(path)), m_tmp(m_path + ".tmp." + std::to_string(::getpid()))
    {
        m_fd = ::open(m_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (m_fd < 0)
            fail(m_path, ": cannot create (", std::strerror(errno), ")");
    }
    ~AtomicFile()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        if (!m_committed)
            ::unlink(m_tmp.c_str());
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const char* data, size_t size)
    {
        size_t done = 0;
        while (done < size) {
            const ssize_t n = ::write(m_fd, data + done, size - done);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                fail(m_path, ": write failed after ", m_written + done, " bytes (",
                     std::strerror(errno), ")");
            }
            done += static_cast<size_t>(n);
        }
        m_written += size;
    }
    void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
    void pad(uint64_t alignment)
    {
        const std::string zeros(alignUp(m_written, alignment) - m_written, '\0');
        write(zeros);
    }
    uint64_t written() const { return m_written; }

    void commit()
    {
        const int fd = m_fd;
        m_fd = -1;
        if (::fsync(fd) != 0 || ::close(fd) != 0)
            fail(m_path, ": cannot flush to disk (", std::strerror(errno), ")");
        if (::rename(m_tmp.c_str(), m_path.c_str()) != 0)
            fail(m_path, ": cannot replace (", std::strerror(errno), ")");
        m_committed = true;
    }

  private:
    std::string m_path, m_tmp;
    int m_fd = -1;
    uint64_t m_written = 0;
    bool m_committed = false;
};

} // namespace

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

GgufValue GgufValue::strings(const std::vector<std::string>& v)
{
    GgufValue value;
    value.type = GgufValueType::Array;
    value.elemType = GgufValueType::String;
    value.count = v.size();
    for (const auto& s : v)
        putString(value.bytes, s);
    return value;
}

GgufValue GgufValue::f32s(const std::vector<float>& v)
{
    GgufValue value;
    value.type = GgufValueType::Array;
    value.elemType = GgufValueType::F32;
    value.count = v.size();
    for (float x : v)
        putLe(value.bytes, x);
    return value;
}

GgufValue GgufValue::i32s(const std::vector<int32_t>& v)
{
    GgufValue value;
    value.type = GgufValueType::Array;
    value.elemType = GgufValueType::I32;
    value.count = v.size();
    for (int32_t x : v)
        putLe(value.bytes, x);
    return value;
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
        for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) // fastest-varying first
            putLe<uint64_t>(head, static_cast<uint64_t>(*it));
        const GgufTypeLayout layout = ggufTypeLayout(t.type);
        if (t.shape.back() % layout.blockSize != 0)
            fail(path, ": tensor '", t.name, "' has rows of ", t.shape.back(), " values, not whole ",
                 ggufTensorTypeName(t.type), " blocks of ", layout.blockSize);
        putLe<uint32_t>(head, static_cast<uint32_t>(t.type));
        putLe<uint64_t>(head, offset);
        sizes.push_back(numel / static_cast<uint64_t>(layout.blockSize) * static_cast<uint64_t>(layout.blockBytes));
        offset = alignUp(offset + sizes.back(), alignment);
    }

    std::error_code ec;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty())
        std::filesystem::create_directories(parent, ec);
    if (ec)
        fail(path, ": cannot create folder ", parent.string(), " (", ec.message(), ")");
    AtomicFile file(path);
    file.write(head);
    file.pad(alignment);
    for (size_t i = 0; i < tensors.size(); ++i) {
        const std::string bytes = tensors[i].data ? tensors[i].data() : std::string();
        if (bytes.size() != sizes[i])
            fail(path, ": tensor '", tensors[i].name, "' has ", bytes.size(),
                 " bytes, its shape and type need ", sizes[i]);
        file.write(bytes);
        if (i + 1 < tensors.size())
            file.pad(alignment);
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
    if (auto it = s.metadata.find("general.alignment"); it != s.metadata.end())
        alignment = std::stoull(it->second);
    if (alignment == 0)
        fail(path, ": general.alignment is 0");
    for (uint64_t i = 0; i < tensorCount; ++i) {
        GgufTensorInfo t;
        t.name = str("a tensor name");
        const uint32_t nDims = u32("a tensor's dimension count");
        if (nDims == 0 || nDims > 4)
            fail(path, ": tensor '", t.name, "' has ", nDims, " dimensions");
        for (uint32_t d = 0; d < nDims; ++d)
            t.dims.push_back(static_cast<int64_t>(u64("a dimension")));
        t.type = u32("a tensor type");
        t.offset = u64("a tensor offset");
        if (t.offset % alignment != 0)
            fail(path, ": tensor '", t.name, "' offset ", t.offset, " is not a multiple of ",
                 alignment);
        s.tensors.push_back(std::move(t));
    }
    s.dataOffset = alignUp(pos, alignment);
    for (const auto& t : s.tensors) {
        uint64_t numel = 1;
        for (int64_t d : t.dims)
            numel *= static_cast<uint64_t>(d);
        uint64_t bytes = 0;
        if (t.type == 0)
            bytes = numel * 4;
        else if (t.type == 1 || t.type == 30)
            bytes = numel * 2;
        else if (t.type == 8) // Q8_0
            bytes = numel / kQ8_0BlockSize * kQ8_0BlockBytes;
        else
            continue; // other quantised types: block sizes not checked here
        if (s.dataOffset + t.offset + bytes > s.fileSize)
            fail(path, ": tensor '", t.name, "' ends past the end of the file");
    }
    return s;
}

namespace {

// Our parameter name -> llama.cpp's tensor name, or "" when it has none.
std::string ggufTensorName(const std::string& name)
{
    static const std::map<std::string, std::string> kTop = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"}};
    static const std::map<std::string, std::string> kBlock = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"}, // qwen2
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"}};
    if (auto it = kTop.find(name); it != kTop.end())
        return it->second;
    static const std::regex kLayer(R"(model\.layers\.(\d+)\.(.+))");
    std::smatch m;
    if (std::regex_match(name, m, kLayer))
        if (auto it = kBlock.find(m[2].str()); it != kBlock.end())
            return "blk." + m[1].str() + "." + it->second;
    return {};
}

// HF's rotate-half layout of q/k rows -> GGML's interleaved pairs, per head (the inverse of what
// transformers' GGUF loader undoes): rows [heads, 2, head_dim/2] -> [heads, head_dim/2, 2].
// w: [heads * head_dim, in]
torch::Tensor interleaveRopeRows(const torch::Tensor& w, int64_t heads)
{
    const int64_t rows = w.size(0);
    return w.reshape({heads, 2, rows / heads / 2, w.size(1)})
        .transpose(1, 2)
        .reshape({rows, w.size(1)})
        .contiguous();
}

std::string tensorBytes(const torch::Tensor& t, GgufTensorType type)
{
    if (type == GgufTensorType::Q8_0) {
        const torch::Tensor f = t.detach().to(torch::kCPU).to(torch::kFloat32).contiguous();
        return quantizeQ8_0(f.data_ptr<float>(), f.numel());
    }
    const auto dtype = type == GgufTensorType::F32   ? torch::kFloat32
                       : type == GgufTensorType::F16 ? torch::kFloat16
                                                     : torch::kBFloat16;
    const torch::Tensor c = t.detach().to(torch::kCPU).to(dtype).contiguous();
    return std::string(static_cast<const char*>(c.data_ptr()),
                       static_cast<size_t>(c.numel()) * c.element_size());
}

// --dtype -> the type of 2-D weights and general.file_type (llama_ftype: ALL_F32 = 0, MOSTLY_F16 = 1,
// MOSTLY_BF16 = 32).
std::pair<GgufTensorType, uint32_t> ggufWeightType(const std::string& dtype)
{
    if (dtype == "f32")
        return {GgufTensorType::F32, 0};
    if (dtype == "f16")
        return {GgufTensorType::F16, 1};
    if (dtype == "bf16")
        return {GgufTensorType::BF16, 32};
    if (dtype == "q8_0")
        return {GgufTensorType::Q8_0, 7};  // LLAMA_FTYPE_MOSTLY_Q8_0
    fail("export: unknown GGUF dtype '", dtype, "' (allowed: f32, f16, bf16, q8_0)");
}

// The GGUF tensor a rotary-ordered q/k weight goes to: its head count (q: attention heads, k: KV heads),
// else 0. qwen2 keeps HF's rotate-half order.
int64_t ropeHeads(const ModelConfig& c, const std::string& gguf)
{
    if (c.architecture == Architecture::Qwen2)
        return 0;
    return gguf.ends_with(".attn_q.weight") ? c.numHeads : gguf.ends_with(".attn_k.weight") ? c.numKvHeads : 0;
}

} // namespace

void checkGgufExportable(const TrainConfig& run)
{
    if (run.method == Method::Adapter || run.method == Method::Prompt)
        fail("export: a ", methodName(run.method), " run cannot be written as GGUF (",
             run.method == Method::Adapter ? "bottleneck adapters add non-linear layers"
                                           : "a soft prompt is an input, not a weight",
             " that a merged model cannot hold); use --format peft");
    const ModelConfig c = loadModelConfig(run.model);
    const bool qwen2 = c.architecture == Architecture::Qwen2;
    if (c.architecture != Architecture::Llama && c.architecture != Architecture::Mistral && !qwen2)
        fail("export: GGUF export supports llama, mistral and qwen2 models; ", c.sourcePath, " is ",
             c.modelType, " (use --format merged and llama.cpp's convert_hf_to_gguf.py)");
    if ((c.qkvBias && !qwen2) || c.oBias || c.mlpBias || c.qkNorm)
        fail("export: GGUF export supports llama/mistral without biases and qwen2 with its q/k/v "
             "biases only; ",
             c.sourcePath, " sets attention_bias or mlp_bias");
    if (!c.ropeScaling.type.empty())
        fail("export: GGUF export does not write rope_scaling yet; ", c.sourcePath, " uses '",
             c.ropeScaling.type, "'");
    if (c.hiddenAct != "silu")
        fail("export: GGUF llama models use silu; ", c.sourcePath, " has hidden_act '", c.hiddenAct,
             "'");
    if (c.headDim % 2 != 0)
        fail("export: head_dim ", c.headDim, " in ", c.sourcePath,
             " is odd; rotary rows come in pairs");
    if (qwen2 && c.headDim * c.numHeads != c.hiddenSize) // transformers' qwen2 GGUF reader
        fail("export: GGUF qwen2 models need head_dim = hidden_size / heads; ", c.sourcePath,
             " has head_dim ", c.headDim);
    checkGgufTokenizer(run.model);
}

void exportGgufModel(CausalLM& model, const TrainConfig& run, const ExportOptions& o,
                     ExportReport& report)
{
    checkGgufExportable(run);
    const ModelConfig& c = model.config();
    const auto [weightType, fileType] = ggufWeightType(o.dtype);

    // Vocabulary: sentencepiece pieces or byte-level BPE tokens; embedding rows beyond the
    // tokenizer become unused [PAD<id>] tokens so that the token count equals the embedding rows.
    const GgufVocab vocab = readGgufVocab(run.model, c);
    // llama.cpp names Mistral "llama" too; qwen2 has its own architecture (with q/k/v biases and
    // HF's rotary layout, so no q/k row permutation).
    const bool qwen2 = c.architecture == Architecture::Qwen2;
    const std::string arch = qwen2 ? "qwen2" : "llama";
    auto u32 = [](int64_t v) { return GgufValue::u32(static_cast<uint32_t>(v)); };

    std::vector<GgufKeyValue> kv = {
        {"general.architecture", GgufValue::string(arch)},
        {"general.name", GgufValue::string(run.name)},
        {"general.alignment", GgufValue::u32(kGgufAlignment)},
        {"general.file_type", GgufValue::u32(fileType)},
        {"general.quantization_version", GgufValue::u32(2)},
        {arch + ".context_length", u32(c.maxPositions)},
        {arch + ".embedding_length", u32(c.hiddenSize)},
        {arch + ".block_count", u32(c.numLayers)},
        {arch + ".feed_forward_length", u32(c.intermediateSize)},
        {arch + ".rope.dimension_count", u32(c.headDim)},
        {arch + ".rope.freq_base", GgufValue::f32(static_cast<float>(c.ropeTheta))},
        {arch + ".attention.head_count", u32(c.numHeads)},
        {arch + ".attention.head_count_kv", u32(c.numKvHeads)},
        {arch + ".attention.layer_norm_rms_epsilon", GgufValue::f32(static_cast<float>(c.normEps))},
        {arch + ".vocab_size", u32(c.vocabSize)},
    };
    if (c.headDim * c.numHeads != c.hiddenSize) { // llama.cpp assumes hidden / heads otherwise
        kv.push_back({arch + ".attention.key_length", u32(c.headDim)});
        kv.push_back({arch + ".attention.value_length", u32(c.headDim)});
    }
    kv.push_back({"tokenizer.ggml.model", GgufValue::string(vocab.model)});
    if (!vocab.pre.empty())
        kv.push_back({"tokenizer.ggml.pre", GgufValue::string(vocab.pre)});
    kv.push_back({"tokenizer.ggml.tokens", GgufValue::strings(vocab.tokens)});
    if (!vocab.scores.empty())
        kv.push_back({"tokenizer.ggml.scores", GgufValue::f32s(vocab.scores)});
    kv.push_back({"tokenizer.ggml.token_type", GgufValue::i32s(vocab.types)});
    if (vocab.model == "gpt2")
        kv.push_back({"tokenizer.ggml.merges", GgufValue::strings(vocab.merges)});
    if (vocab.bos >= 0)
        kv.push_back({"tokenizer.ggml.bos_token_id", u32(vocab.bos)});
    if (vocab.eos >= 0)
        kv.push_back({"tokenizer.ggml.eos_token_id", u32(vocab.eos)});
    if (vocab.unk >= 0)
        kv.push_back({"tokenizer.ggml.unknown_token_id", u32(vocab.unk)});
    if (vocab.pad >= 0)
        kv.push_back({"tokenizer.ggml.padding_token_id", u32(vocab.pad)});
    kv.push_back({"tokenizer.ggml.add_bos_token", GgufValue::boolean(vocab.addBos)});
    kv.push_back({"tokenizer.ggml.add_eos_token", GgufValue::boolean(vocab.addEos)});
    if (!vocab.chatTemplate.empty())
        kv.push_back({"tokenizer.chat_template", GgufValue::string(vocab.chatTemplate)});

    // Tensors in the model's order (embedding, blocks, final norm, head); a tied head is not
    // written.
    std::vector<GgufTensor> tensors;
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        if (name.find("lora_") != std::string::npos)
            continue;
        const std::string gguf = ggufTensorName(name);
        if (gguf.empty())
            fail("export: tensor '", name,
                 "' has no GGUF name (GGUF export writes plain llama/mistral/qwen2 weights)");
        torch::Tensor value = item.value().detach();
        const bool matrix = value.dim() == 2;
        // Biases and norms stay f32, as llama.cpp keeps 1-D tensors.
        GgufTensor t;
        t.name = gguf;
        t.type = matrix ? weightType : GgufTensorType::F32;
        t.shape = value.sizes().vec();
        if (matrix && t.shape.back() % ggufTypeLayout(t.type).blockSize != 0) {
            t.type = GgufTensorType::F16;  // rows that are not whole blocks: f16, as llama.cpp's converter
            report.warnings.push_back(gguf + ": rows of " + std::to_string(t.shape.back()) + " weights are not whole " +
                                      ggufTensorTypeName(weightType) + " blocks; written F16");
        }
        const int64_t heads = ropeHeads(c, gguf);
        t.data = [value, heads, type = t.type] {
            return tensorBytes(heads ? interleaveRopeRows(value, heads) : value, type);
        };
        tensors.push_back(std::move(t));
    }
    writeGguf(o.outDir, kv, tensors);
    report.files.push_back(o.outDir);
    report.tensors = static_cast<int64_t>(tensors.size());
}

void exportGgufLora(CausalLM& model, const TrainConfig& run, const ExportOptions& o, ExportReport& report)
{
    if (run.method != Method::Lora)
        fail("export: --format gguf-lora writes LoRA factors; this is a ", methodName(run.method),
             " run (use --format gguf for the merged model)");
    checkGgufExportable(run);
    const ModelConfig& c = model.config();
    const auto [weightType, fileType] = ggufWeightType(o.dtype);
    if (weightType == GgufTensorType::Q8_0)
        fail("export: a LoRA adapter is written f32, f16 or bf16 (its rank-wide rows are not whole Q8_0 blocks, "
             "and it is small); quantise the base model instead");
    const std::string arch = c.architecture == Architecture::Qwen2 ? "qwen2" : "llama";

    std::vector<GgufTensor> tensors;
    double scaling = 0;
    int64_t rank = 0;
    bool learned = false;
    for (auto& [name, layer] : model.linearLayers()) {
        if (!layer->hasLora())
            continue;
        const std::string gguf = ggufTensorName(name + ".weight");
        if (gguf.empty() || (gguf == "output.weight" && c.tieWordEmbeddings))
            fail("export: LoRA on '", name, "' has no llama.cpp tensor to adapt; use --format gguf for the merged "
                 "model");
        const torch::Tensor a = layer->lora_A->weight.detach(); // [rank, in]
        const torch::Tensor b = layer->lora_B->weight.detach(); // [out, rank]
        scaling = layer->loraScaling();
        rank = a.size(0);
        // As for a merged export: what the adapter changes in the fp32 weight it is added to.
        const torch::Tensor w = layer->weight.detach();
        const double change = ((w + layer->loraDelta()) - w).abs().max().item<double>();
        learned = learned || change > 0;
        report.maxAbsChange = std::max(report.maxAbsChange, change);
        const int64_t heads = ropeHeads(c, gguf);
        GgufTensor ta;
        ta.name = gguf + ".lora_a";
        ta.type = weightType;
        ta.shape = a.sizes().vec();
        ta.data = [a, type = weightType] { return tensorBytes(a, type); };
        tensors.push_back(std::move(ta));
        GgufTensor tb;
        tb.name = gguf + ".lora_b";
        tb.type = weightType;
        tb.shape = b.sizes().vec();
        tb.data = [b, heads, type = weightType] { return tensorBytes(heads ? interleaveRopeRows(b, heads) : b, type); };
        tensors.push_back(std::move(tb));
    }
    if (tensors.empty())
        fail("export: the run has no LoRA factors to write");
    if (!learned && !o.force)
        fail("export: the adapter leaves every base weight as it is (nothing was learned); pass --force to export "
             "anyway");

    const std::vector<GgufKeyValue> kv = {
        {"general.architecture", GgufValue::string(arch)},
        {"general.type", GgufValue::string("adapter")},
        {"general.name", GgufValue::string(run.name)},
        {"general.alignment", GgufValue::u32(kGgufAlignment)},
        {"general.file_type", GgufValue::u32(fileType)},
        {"general.quantization_version", GgufValue::u32(2)},
        {"adapter.type", GgufValue::string("lora")},
        // llama.cpp scales each product by alpha / rank: alpha = scaling x rank keeps ours (rsLoRA included).
        {"adapter.lora.alpha", GgufValue::f32(static_cast<float>(scaling * static_cast<double>(rank)))},
    };
    writeGguf(o.outDir, kv, tensors);
    report.files.push_back(o.outDir);
    report.tensors = static_cast<int64_t>(tensors.size());
}

} // namespace tb
