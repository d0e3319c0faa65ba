// Linear layers that read the same input (a Llama block's q, k and v; its gate and up) as one
// matrix product in CPU bf16 autocast. Each layer on its own casts the fp32 norm output to bf16
// (and its gradient back to fp32) and multiplies it by a narrow matrix: five casts each way for q,
// k, v and LoRA's A on q and v, where stacked there is one, and one product [tokens, q + k + v]
// with one input-gradient product in place of three. Frozen weights held in bf16
// (CausalLM::castFrozenLinearWeights) lie as consecutive rows of one buffer (holdStacked), which
// the product reads as it lies; trainable ones are cast and stacked at each forward, as autocast
// would cast each. LoRA branches add onto their layer's slice of the output (LinearImpl::withLora)
// and read the one bf16 input. Internal to core.
#pragma once

#include "model/causal_lm.h"

#include <vector>

namespace tb {

// Whether layers (two or more, in order) multiply x as one stacked product: x on the CPU in fp32
// or bf16 under bf16 autocast, more rows than a decoding step's (model/decode_ops.h), and every
// layer a plain [out, in] weight (fp32 or bf16, not quantised, not GPT-2's Conv1D layout) of the
// same in, all with a bias or none.
bool linearsStack(const torch::Tensor& x, const std::vector<LinearImpl*>& layers);

// x [..., in] -> [..., sum of out]: every layer's x W^T + b side by side, bf16, without LoRA.
// x16, when given, receives x in bf16 (the one cast, for LoRA's branches).
torch::Tensor stackedProduct(const torch::Tensor& x, const std::vector<LinearImpl*>& layers,
                             torch::Tensor* x16 = nullptr);

// Each layer's output as its forward gives it (its LoRA branch added), bf16: the stacked product's
// slices, views where no branch adds.
std::vector<torch::Tensor> stackedLinears(const torch::Tensor& x,
                                          const std::vector<LinearImpl*>& layers);

// The layers' weights as one [sum of out, in] tensor where they lie as consecutive rows of one
// buffer (holdStacked), else undefined.
torch::Tensor stackedWeightView(const std::vector<LinearImpl*>& layers);

// Casts the frozen fp32 weights of layers (two or more, not quantised, [out, in] of the same in,
// on one device) to dtype into one buffer, each weight a view of its rows, when every one of them
// qualifies; returns the bytes they held before, 0 when they stay as they were.
int64_t holdStacked(const std::vector<LinearImpl*>& layers, torch::Dtype dtype);

}  // namespace tb
