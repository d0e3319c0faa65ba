// Rotary tables of real angles for the fused operators' checks (decode_ops_check.h,
// train_ops_check.h): positions 5.. (per row: row b from 5 + 3b), base 10000, the angles
// duplicated over both halves. Internal to core (LibTorch types).
#pragma once

#include <torch/torch.h>

#include <utility>

namespace tb {

// cos and sin, [seq, dim] shared by the rows or [batch, 1, seq, dim] per row, in dtype.
std::pair<torch::Tensor, torch::Tensor> checkRopeTables(int64_t batch, int64_t seq, int64_t dim,
                                                        bool perRow, torch::ScalarType dtype);

}  // namespace tb
