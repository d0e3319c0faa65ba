// Quantised weights written out to look at: each tensor's bitsandbytes pieces, for comparing the
// bytes with bitsandbytes'. Torch-free header.
#pragma once

#include "quant/quant_format.h"

#include <cstdint>
#include <string>

namespace tb {

// Quantises every 2-D F32, F16 or BF16 tensor of the safetensors file `in` and writes, for each
// tensor NAME, into the safetensors file `out`: NAME.data (U8 packed 4-bit codes, or I8),
// NAME.absmax (F32, or U8 with double quantisation), NAME.absmax2, NAME.code2 and NAME.offset
// (F32 [1]) with double quantisation, NAME.dequant (F32) and NAME.dequant_bf16 (BF16). Returns
// the number of tensors quantised.
int64_t quantizeTensorFile(const std::string& in, const QuantOptions& options,
                           const std::string& out);

}  // namespace tb
