// The fused head loss's softmax rows (train/chunked_loss.cpp): each fp32 row of logits becomes
// softmax(row) - onehot(label) in place, and its cross-entropy, logsumexp(row) - row[label], is
// returned. Three passes over a row that stays in cache (its maximum; e^(x - max) and their sum;
// the scaling) and one exponential per element, where LibTorch's logsumexp, subtraction, exp and
// scatter take five passes and two exponentials. Raw pointers, no LibTorch: compiled for AVX-512,
// AVX2 + FMA and portably from loss_rows_kernel_body.h, the set chosen as the few-rows kernels'.
#pragma once

#include "model/few_rows_kernel.h"

#include <cstdint>

namespace tb {

// Rows [begin, end) of x (row r at x + r * ld, vocab floats each); labels[r] in [0, vocab) (the
// caller checks). rowLoss[r] gets row r's cross-entropy. A row holding NaN or infinity becomes NaN
// and so does its loss, as LibTorch's operators propagate them.
void softmaxMinusOnehotRows(float* x, int64_t ld, int64_t vocab, const int64_t* labels,
                            int64_t begin, int64_t end, double* rowLoss,
                            FewRowsIsa isa = fewRowsBestIsa());

// The same on bf16 rows (raw 16-bit patterns), in place: each row widened exactly into one fp32 row
// of scratch, computed as above, and rounded back to nearest-even bf16 (NaN stays NaN): the numbers
// of converting the rows to fp32, the fp32 kernel and converting back, without the fp32 rows.
// scratch: vocab floats, one per calling thread.
void softmaxMinusOnehotRowsBf16(uint16_t* x, int64_t ld, int64_t vocab, const int64_t* labels,
                                int64_t begin, int64_t end, double* rowLoss, float* scratch,
                                FewRowsIsa isa = fewRowsBestIsa());

}  // namespace tb
