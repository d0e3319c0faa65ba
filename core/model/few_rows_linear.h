// The few-rows kernels (model/few_rows_kernel.h) on tensors: what linearForward (model/layers.cpp)
// and the kernels' check (model/few_rows_check.cpp) both call.
#pragma once

#include "model/few_rows_kernel.h"

#include <torch/torch.h>

namespace tb {

// y[:, begin:end] = x W^T (+ b) by the kernel of `isa`, for x fp32 [rows, in], W [out, in] and b
// [out] (undefined: none) both fp32 or both bf16, y fp32 [rows, out], all contiguous on the CPU.
void fewRowsProductOf(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                      int64_t begin, int64_t end, torch::Tensor& y,
                      FewRowsIsa isa = fewRowsBestIsa());

}  // namespace tb
