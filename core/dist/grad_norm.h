// The sum of squares behind the global gradient norm, in float64: the single-process optimizer
// (whole gradients) and ZeRO (this rank's shards, summed across ranks) add the same squares in
// other orders, and in float64 both totals round to the same clipping factor, so that ZeRO's
// updates are ZeRO-0's. Internal to core (LibTorch types).
#pragma once

#include <torch/torch.h>

namespace tb {

// Σ x² over every element of t, as a float64 scalar tensor on t's device. An fp32 tensor on the
// CPU is read once, in fixed blocks (the same sum on any number of threads); elsewhere t is cast
// in chunks, so the float64 copy stays small next to a large gradient.
torch::Tensor squaresF64(const torch::Tensor& t);

}  // namespace tb
