// y = x W^T + b with W held quantised: dequantised just in time into the compute dtype for the
// forward pass and again for the input gradient, and freed after each, so at most one layer's
// dequantised weight is alive. Internal to core: includes LibTorch.
#pragma once

#include "quant/quantize.h"

#include <memory>

namespace tb {

// x: [..., cols] -> [..., rows]. The compute dtype is autocast's when it is on for x's device,
// else x's dtype. W is frozen: no gradient for it; bias (frozen or not) gets one when it requires
// it. Saves nothing for backward but the quantised weight it already holds.
torch::Tensor quantizedLinear(const torch::Tensor& x,
                              const std::shared_ptr<const QuantizedWeight>& weight,
                              const torch::Tensor& bias = {});

}  // namespace tb
