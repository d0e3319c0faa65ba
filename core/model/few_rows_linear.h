// The few-rows kernels (model/few_rows_kernel.h) on tensors: what linearForward (model/layers.cpp)
// and the kernels' check (model/few_rows_check.cpp) both call.
#pragma once

#include "model/few_rows_kernel.h"

#include <torch/torch.h>

#include <algorithm>

namespace tb {

// y[:, begin:end] = x W^T (+ b) by the kernel of `isa`, for x fp32 [rows, in], W [out, in] and b
// [out] (undefined: none) both fp32 or both bf16, y fp32 [rows, out], all contiguous on the CPU.
void fewRowsProductOf(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                      int64_t begin, int64_t end, torch::Tensor& y,
                      FewRowsIsa isa = fewRowsBestIsa());

// Products whose weights hold less than this stay on one thread: below it, the split costs about
// what it saves (a 384 x 384 bf16 matrix, 288 KiB, is worth splitting on two threads).
constexpr int64_t kFewRowsSplitBytes = int64_t(1) << 17;

// f(begin, end) over W's rows [0, rows) in whole blocks of 16 rows split over the intra-op
// threads when the weights read hold at least kFewRowsSplitBytes, else f(0, rows) on this thread.
// (Parallel only in files compiled with OpenMP: at::parallel_for's OpenMP code is inline.)
template <typename F> void splitFewRows(int64_t rows, int64_t bytes, const F& f)
{
    const int threads = at::get_num_threads();
    if (threads > 1 && bytes >= kFewRowsSplitBytes) {
        const int64_t blocks = (rows + 15) / 16;
        at::parallel_for(0, blocks, (blocks + threads - 1) / threads,
                         [&](int64_t b0, int64_t b1) { f(b0 * 16, std::min(b1 * 16, rows)); });
    } else {
        f(0, rows);
    }
}

}  // namespace tb
