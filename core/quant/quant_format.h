// Quantised formats for frozen base weights (QLoRA's NF4, FP4, LLM.int8()'s row-wise int8): the
// closed choice, its options as a run config gives them, and the bytes each format takes, as
// bitsandbytes lays them out. Torch-free: memory/ plans with it, ui/ shows it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tb {

// none: weights in the load dtype; nf4 / fp4: 4-bit codes in blocks of 64 with an absmax per block
// (bitsandbytes' quantize_4bit); int8: row-wise absmax int8 (bitsandbytes' int8_vectorwise_quant).
enum class QuantKind { None, Nf4, Fp4, Int8 };
const char* quantKindName(QuantKind kind);  // "none", "nf4", "fp4", "int8"
std::optional<QuantKind> parseQuantKind(const std::string& name);

constexpr int kQuantBlockSize = 64;         // 4-bit formats: elements per absmax
constexpr int kQuantDoubleBlockSize = 256;  // double quantisation: absmax values per second absmax
constexpr int kQuantDynamicMapEntries = 256;  // double quantisation: the 8-bit dynamic code table

struct QuantOptions {
    QuantKind kind = QuantKind::None;
    // 4-bit formats: the absmax values quantised again to 8 bits (bitsandbytes'
    // compress_statistics, QLoRA's double quantisation).
    bool doubleQuant = false;
    // Also quantise the output head (only when it is not tied to the token embedding). Norms and
    // embeddings are never quantised.
    bool head = false;

    bool enabled() const { return kind != QuantKind::None; }
    bool operator==(const QuantOptions&) const = default;
};

// For people: "NF4 (double quant)", "NF4", "FP4", "int8", "none".
std::string quantDescription(const QuantOptions& options);

// Bytes one quantised [rows, cols] weight holds, item by item, as core/quant stores it.
struct QuantBytes {
    int64_t data = 0;     // packed 4-bit codes ((n + 1) / 2 bytes) or int8 values (n bytes)
    int64_t absmax = 0;   // 4-bit: float32 per block, or uint8 per block when double-quantised;
                          // int8: float32 per row
    int64_t absmax2 = 0;  // double quantisation: float32 per 256 blocks
    int64_t code2 = 0;    // double quantisation: the 256-entry float32 dynamic map
    int64_t total() const { return data + absmax + absmax2 + code2; }
};
QuantBytes quantizedBytes(const QuantOptions& options, int64_t rows, int64_t cols);

// Average bits per parameter of a [rows, cols] weight in the format (statistics included).
double quantBitsPerParameter(const QuantOptions& options, int64_t rows, int64_t cols);

}  // namespace tb
