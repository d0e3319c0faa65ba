// Names of the quantised formats and the bytes each takes (torch-free).
#include "quant/quant_format.h"

namespace tb {

const char* quantKindName(QuantKind kind)
{
    switch (kind) {
    case QuantKind::None:
        return "none";
    case QuantKind::Nf4:
        return "nf4";
    case QuantKind::Fp4:
        return "fp4";
    case QuantKind::Int8:
        return "int8";
    }
    return "none";
}

std::optional<QuantKind> parseQuantKind(const std::string& name)
{
    for (QuantKind k : {QuantKind::None, QuantKind::Nf4, QuantKind::Fp4, QuantKind::Int8})
        if (name == quantKindName(k))
            return k;
    return std::nullopt;
}

std::string quantDescription(const QuantOptions& options)
{
    switch (options.kind) {
    case QuantKind::None:
        return "none";
    case QuantKind::Int8:
        return "int8";
    case QuantKind::Nf4:
    case QuantKind::Fp4:
        break;
    }
    const std::string name = options.kind == QuantKind::Nf4 ? "NF4" : "FP4";
    return options.doubleQuant ? name + " (double quant)" : name;
}

QuantBytes quantizedBytes(const QuantOptions& options, int64_t rows, int64_t cols)
{
    QuantBytes b;
    const int64_t n = rows * cols;
    switch (options.kind) {
    case QuantKind::None:
        return b;
    case QuantKind::Int8:
        b.data = n;           // int8 values
        b.absmax = rows * 4;  // float32 absmax per row
        return b;
    case QuantKind::Nf4:
    case QuantKind::Fp4:
        break;
    }
    const int64_t blocks = (n + kQuantBlockSize - 1) / kQuantBlockSize;
    b.data = (n + 1) / 2;  // two codes a byte, an odd count padded
    if (options.doubleQuant) {
        b.absmax = blocks;  // uint8 codes of absmax - mean
        b.absmax2 = (blocks + kQuantDoubleBlockSize - 1) / kQuantDoubleBlockSize * 4;
        b.code2 = int64_t(kQuantDynamicMapEntries) * 4;
    } else {
        b.absmax = blocks * 4;
    }
    return b;
}

double quantBitsPerParameter(const QuantOptions& options, int64_t rows, int64_t cols)
{
    const int64_t n = rows * cols;
    if (n <= 0)
        return 0;
    if (!options.enabled())
        return 32;
    return 8.0 * static_cast<double>(quantizedBytes(options, rows, cols).total()) /
           static_cast<double>(n);
}

}  // namespace tb
