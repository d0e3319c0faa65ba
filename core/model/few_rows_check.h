// Torch-free check of the few-rows kernels (model/few_rows_kernel.h) against LibTorch: what
// test_few_rows_kernel calls.
#pragma once

#include "model/few_rows_kernel.h"

#include <cstdint>

namespace tb {

struct FewRowsCheck {
    // The kernel of the given instruction set against at::linear in float64 on the same values.
    double kernelMaxAbsDiff = 0;
    // linearForward (what the model calls: the best set, W's rows split over the intra-op threads,
    // bf16 rounded back) against at::linear in the weight's own dtype.
    double linearMaxAbsDiff = 0;
    // max over outputs of sum_k |x_k w_k| (+ |b|): the scale rounding errors are measured against.
    double scale = 0;
    // max |y| of the float64 reference: bf16's rounding of the output is relative to it.
    double maxAbsOutput = 0;
    bool tookKernel = false;  // linearForward took the few-rows path (false: LibTorch's own)
};

// x [rows, in], W [out, in] and, with `bias`, b [out] drawn from a normal distribution (`seed`), in
// fp32 or, with `bf16`, rounded to bf16 (x then given to linearForward in bf16 as well).
FewRowsCheck checkFewRowsKernel(int64_t rows, int64_t in, int64_t out, bool bf16, bool bias,
                                FewRowsIsa isa, uint64_t seed);

}  // namespace tb
