// Dequantising a QuantizedWeight with the CUDA kernels of kernels/ (when the build has them).
// Internal to core: includes LibTorch.
#pragma once

#include "quant/quantize.h"

namespace tb {

// q on a CUDA device: out = its [rows, cols] weight in dtype, through the kernels; false (out
// untouched) when this build has no kernels, and the caller takes dequantizeWeightTorch.
bool dequantizeWeightCuda(const QuantizedWeight& q, torch::Dtype dtype, torch::Tensor& out);

}  // namespace tb
