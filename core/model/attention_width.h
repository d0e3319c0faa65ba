// Where training's bf16 attention on the CPU runs in fp32 instead (cachedAttention in
// model/causal_lm.cpp; the estimator counts what it keeps). Torch-free: memory/ reads it.
#pragma once

#include <cstdint>

namespace tb {

// Queries from which LibTorch's CPU flash attention trains faster in bf16 than in fp32: its
// query blocks grow from 32 to 64 rows there. Below it, a bf16 attention that needs gradients
// runs the fp32 kernel on the same values (1.5-2.6 times faster forward and backward,
// docs/benchmarks.md) and rounds its output to bf16 once.
inline constexpr int64_t kFlashAttentionBf16MinQueries = 192;

}  // namespace tb
