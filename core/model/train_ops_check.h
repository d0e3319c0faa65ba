// Torch-free check of training's RMSNorm and rotary embedding (model/train_ops.h) against
// LibTorch's operators and their autograd, and of the width bf16 attention trains in: what
// test_train_ops calls.
#pragma once

#include <cstdint>

namespace tb {

// Each pair: the largest |ours - LibTorch's| and the largest |LibTorch's| of one tensor.
struct TrainOpsCheck {
    bool tookTrainOp = false;        // the layer took the train op with grad mode on
    bool tookItWithoutGrad = false;  // ... and with grad mode off (must be false)
    double outputDiff = 0, outputMax = 0;
    double inputGradDiff = 0, inputGradMax = 0;
    double weightGradDiff = 0, weightGradMax = 0;  // RMSNorm's weight, when it trains
    bool sameStrides = false;  // output and input gradient laid out as LibTorch's
    double noGradDiff = -1;    // the layer's output with grad mode off against on (must be 0)
};

// RMSNorm (RMSNormImpl, eps 1e-5) of x [rows, dim] ~ N(0, 3), weight ~ N(1, 0.5), fp32, through
// the layer in grad mode; inputTrains / weightTrains: which of the two needs a gradient. The
// backward is driven by a random upstream gradient.
TrainOpsCheck checkTrainRmsNorm(int64_t rows, int64_t dim, bool inputTrains, bool weightTrains,
                                uint64_t seed);

// applyRope of x [batch, heads, seq, dim], a transposed view of [batch, seq, heads, dim], with
// real rotary tables shared ([seq, dim]) or per row ([batch, 1, seq, dim]); x in fp32 or bf16,
// the tables in fp32 or x's dtype.
TrainOpsCheck checkTrainRope(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool perRow,
                             bool bf16, bool fp32Tables, uint64_t seed);

// SwiGLU's product of gate and up [rows, dim] ~ N(0, 3) (bf16 values when bf16) through the Llama
// MLP's choice (trainSwiglu when it takes it) against LibTorch's silu(gate) * up and autograd, with
// a random upstream gradient; weightGrad* carry up's gradient. isa: the kernels' instruction set
// (model/swiglu_kernel.h) for a second run of the raw kernels, whose largest difference from the
// first run (the op where taken, else LibTorch's) goes to noGradDiff.
TrainOpsCheck checkTrainSwiglu(int64_t rows, int64_t dim, bool bf16, int isa, uint64_t seed);

// SwiGLU's packed op (trainSwigluPacked) of gu [rows, 2 dim] ~ N(0, 3) in bf16 against LibTorch's
// silu(gate) * up of its halves and autograd (weightGrad*: up's half of the gradient, inputGrad*
// gate's); noGradDiff: the largest difference, output and gradient, from trainSwiglu on the halves
// made contiguous (must be 0: the same kernels).
TrainOpsCheck checkTrainSwigluPacked(int64_t rows, int64_t dim, uint64_t seed);

// Stacked products (model/stacked_linears.h) of three linear layers in -> outs[j] reading x [rows,
// in] ~ N(0, 1) fp32 that needs a gradient, under CPU bf16 autocast, with LoRA (B random, so the
// branch counts) on the first and the last, against each layer's own forward on the same weights:
// each tensor's largest difference relative to its largest value, the largest such ratio of the
// outputs, of x's gradient and of the trainable weights' gradients (LoRA's A and B, and the base
// weights' when weightsTrain; else the frozen weights are cast to bf16 first by holdStacked, as
// CausalLM::castFrozenLinearWeights does).
struct StackedLinearsCheck {
    bool stacked = false;    // linearsStack took the layers
    bool together = false;   // the weights lie as one buffer (stackedWeightView)
    bool heldBytes = false;  // holdStacked reported the fp32 bytes (frozen weights)
    int tensors = 0;         // outputs and gradients compared
    double outputRel = 0, inputGradRel = 0, weightGradRel = 0;
    double smallestMax = 0;  // the smallest largest value of the tensors compared
};
StackedLinearsCheck checkStackedLinears(int64_t rows, int64_t in, bool weightsTrain, uint64_t seed);

// Training's attention under bf16 autocast on the CPU (cachedAttention without a cache) of q, k, v
// [batch, heads, seq, dim] (bf16 values, needing gradients; a random upstream gradient), against
// LibTorch's flash attention run on the same values in fp32 and in bf16: the largest difference
// of the output and of the three input gradients from each.
struct AttentionWidthCheck {
    bool widened = false;  // attentionWidensToFp32 said so
    double fp32Diff = 0;   // against the fp32 kernel (output rounded to bf16, gradients to bf16)
    double bf16Diff = 0;   // against the bf16 kernel
    double outputMax = 0, gradMax = 0;
};
AttentionWidthCheck checkTrainAttentionWidth(int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                                             uint64_t seed);

}  // namespace tb
