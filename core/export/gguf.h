// GGUF v3 files, the format llama.cpp loads: a streaming writer (metadata values, tensor infos,
// aligned data, written to a temp file then fsync + rename), a validating reader of the header, and
// the export of a merged Llama/Mistral/Qwen2/Qwen3 run (or its base model) with its sentencepiece
// or byte-level BPE vocabulary, and of a LoRA run's factors as a llama.cpp LoRA adapter. Torch-free
// header.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tb {

class CausalLM;
struct TrainConfig;
struct ExportOptions;
struct ExportReport;

// GGUF metadata value types (gguf_type in ggml's gguf.h).
enum class GgufValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12
};
// Tensor data types written here (ggml_type numbering).
enum class GgufTensorType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 8, BF16 = 30 };

const char* ggufTensorTypeName(GgufTensorType type);  // "F32", "F16", "Q8_0", "BF16"
// Storage in blocks along the fastest-varying dimension: elements and bytes per block (1 and 4 or 2
// for the float types, 32 and 34 for Q8_0). A row must hold whole blocks.
struct GgufTypeLayout {
    int64_t blockSize = 1;
    int64_t blockBytes = 4;
};
GgufTypeLayout ggufTypeLayout(GgufTensorType type);

// One metadata value, already encoded as GGUF lays it out after the type tag (little-endian).
struct GgufValue {
    GgufValueType type = GgufValueType::U32;
    GgufValueType elemType = GgufValueType::U8;  // arrays
    uint64_t count = 0;                          // arrays: number of elements
    std::string bytes;                           // scalar: the value; array: the elements

    static GgufValue u8(uint8_t v);
    static GgufValue i8(int8_t v);
    static GgufValue u16(uint16_t v);
    static GgufValue i16(int16_t v);
    static GgufValue u32(uint32_t v);
    static GgufValue i32(int32_t v);
    static GgufValue f32(float v);
    static GgufValue boolean(bool v);
    static GgufValue string(const std::string& v);
    static GgufValue u64(uint64_t v);
    static GgufValue i64(int64_t v);
    static GgufValue f64(double v);
    static GgufValue strings(const std::vector<std::string>& v);
    static GgufValue f32s(const std::vector<float>& v);
    static GgufValue i32s(const std::vector<int32_t>& v);
    static GgufValue booleans(const std::vector<bool>& v);  // one byte each, 0 or 1
};

struct GgufKeyValue {
    std::string key;
    GgufValue value;
};

// One tensor to write. shape is row-major as in PyTorch ([out, in]); the file stores it reversed
// (fastest-varying dimension first). data() is called once, in order, and returns exactly
// numel x type size bytes, so a large model never needs two copies of every tensor at once.
struct GgufTensor {
    std::string name;
    GgufTensorType type = GgufTensorType::F32;
    std::vector<int64_t> shape;
    std::function<std::string()> data;
};

constexpr uint32_t kGgufAlignment =
    32;  // general.alignment: tensor data offsets are multiples of this

// Writes a GGUF v3 file: header, the key/values in order (general.alignment must be among them or
// the default 32 is used; any other value is refused), tensor infos with offsets relative to the
// data section, padding, data. Streams to path + ".tmp.<pid>", fsyncs and renames, so a killed
// export leaves no torn file. Throws tb::Error naming the path or tensor when something cannot be
// written.
void writeGguf(const std::string& path, const std::vector<GgufKeyValue>& metadata,
               const std::vector<GgufTensor>& tensors);

// What a GGUF file says about itself, for checks after writing (scalars shown as text, arrays as
// "[type x count]", strings as they are).
struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> dims;  // as stored: fastest-varying first
    uint32_t type = 0;
    uint64_t offset = 0;  // relative to the data section
};
struct GgufSummary {
    uint32_t version = 0;
    uint64_t fileSize = 0;    // bytes
    uint64_t dataOffset = 0;  // start of the data section
    std::map<std::string, std::string> metadata;
    std::vector<GgufTensorInfo> tensors;
};

// Reads and validates a GGUF file's header: magic, version 3, every key/value and tensor info in
// bounds, offsets aligned, each tensor's bytes inside the file. Throws tb::Error naming the file.
GgufSummary readGgufSummary(const std::string& path);

// Throws tb::Error unless the run's model can be written as GGUF: method full, partial or lora
// (merged), architecture llama or mistral without biases (rope scaling: Llama 3's only), qwen2 with
// its q/k/v biases only, or qwen3 with its q/k norms; a sentencepiece tokenizer.model or a
// byte-level BPE tokenizer.json whose pre-tokenizer llama.cpp knows by name (GPT-2, Llama-3,
// Qwen2). Reads config.json and the tokenizer files only.
void checkGgufExportable(const TrainConfig& run);

// Writes the merged (LoRA folded in) model as GGUF to options.outDir (a path ending in .gguf) with
// options.dtype f32 | f16 | bf16 | q8_0 for 2-D weights (norms and biases stay f32; under q8_0 a
// matrix whose rows are not whole 32-weight blocks is written f16, as llama.cpp's converter does,
// and listed in report.warnings). What checkGgufExportable refuses throws tb::Error saying what is
// supported. headCopy: a tied head is written too, as output.weight (a copy of token_embd), for the
// base of a gguf-lora adapter with trainable tokens (exportGgufLora).
void exportGgufModel(CausalLM& model, const TrainConfig& run, const ExportOptions& options,
                     ExportReport& report, bool headCopy = false);

// Replaces, in place, every weight that a q8_0 export writes as Q8_0 by what the file gives back
// (quantise, dequantise), so that the model computes as the exported file does. Returns the tensors
// changed.
int64_t roundTripGgufQ8_0(CausalLM& model);

// Writes a LoRA run's factors as a llama.cpp LoRA adapter (`llama-cli -m BASE.gguf --lora
// FILE.gguf`): general.type "adapter", adapter.type "lora", adapter.lora.alpha = scaling x rank
// (llama.cpp scales by alpha / rank, so rsLoRA's alpha / sqrt(rank) comes through exactly); per
// adapted weight
// "<its GGUF name>.lora_a" [rank, in] and ".lora_b" [out, rank], q/k rows of B in GGML's rotary
// order as the base export writes q/k. Pair it with the same run's base model as GGUF (--format
// gguf-base). Trainable token rows become exact rank-k pairs at scale 1: token_embd (llama.cpp's
// flipped layout: lora_a [vocab, k] one-hot columns, lora_b [hidden, k] the deltas) and output
// (lora_a [k, hidden] the head's deltas, lora_b [vocab, k] one-hot), also for a tied head, whose
// base file then holds output.weight (llama.cpp applies a tied head's token_embd pair to the
// output matmul in the wrong layout and aborts). Throws tb::Error for other methods, a LoRA target
// without a GGUF tensor, or (unless options.force) an adapter that changes no fp32 base weight.
void exportGgufLora(CausalLM& model, const TrainConfig& run, const ExportOptions& options,
                    ExportReport& report);

}  // namespace tb
