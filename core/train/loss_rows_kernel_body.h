// The body of the fused head loss's softmax rows (loss_rows_kernel.h), written once in GCC's
// vector extensions and compiled once per instruction set: train/loss_rows_kernel.cpp includes
// this file inside a namespace that defines kLanes and under that set's `#pragma GCC target`. No
// include guard on purpose; nothing else includes it.

#include "model/vec_body.h"
#include "model/vec_math_body.h"

// Row x (vocab floats) -> softmax(x) - onehot(label) in place; returns logsumexp(x) - x[label].
inline double softmaxMinusOnehotRow(float* x, int64_t vocab, int64_t label)
{
    const float picked = x[label];
    const int64_t full = vocab - vocab % kLanes;
    VecF best = splat(-__builtin_inff());
    VecF bad = splat(0.0f);  // NaN or infinity seen: x - x is not 0
    for (int64_t j = 0; j < full; j += kLanes) {
        const VecF v = loadv(x + j);
        best = v > best ? v : best;
        bad += v - v;
    }
    float top = -__builtin_inff();
    float badSum = 0.0f;
    for (int lane = 0; lane < kLanes; ++lane) {
        top = best[lane] > top ? best[lane] : top;
        badSum += bad[lane];
    }
    for (int64_t j = full; j < vocab; ++j) {
        top = x[j] > top ? x[j] : top;
        badSum += x[j] - x[j];
    }
    if (badSum != 0.0f || !(top > -__builtin_inff())) {  // NaN, +-inf or an empty row
        for (int64_t j = 0; j < vocab; ++j)
            x[j] = __builtin_nanf("");
        return __builtin_nan("");
    }
    // e^(x - top) in place and their sum; the tail padded with -inf, whose e^x is 0.
    VecF sum = splat(0.0f);
    for (int64_t j = 0; j < full; j += kLanes) {
        const VecF e = expOf(loadv(x + j) - top);
        store(x + j, e);
        sum += e;
    }
    if (full < vocab) {
        float tail[kLanes];
        for (int lane = 0; lane < kLanes; ++lane)
            tail[lane] = full + lane < vocab ? x[full + lane] - top : -__builtin_inff();
        VecF e = expOf(loadv(tail));
        sum += e;
        store(tail, e);
        for (int64_t j = full; j < vocab; ++j)
            x[j] = tail[j - full];
    }
    double total = 0.0;
    for (int lane = 0; lane < kLanes; ++lane)
        total += sum[lane];
    const float inv = static_cast<float>(1.0 / total);
    const VecF scale = splat(inv);
    for (int64_t j = 0; j < full; j += kLanes)
        store(x + j, loadv(x + j) * scale);
    for (int64_t j = full; j < vocab; ++j)
        x[j] *= inv;
    x[label] -= 1.0f;
    return static_cast<double>(top) + __builtin_log(total) - static_cast<double>(picked);
}

inline void softmaxMinusOnehotRange(float* x, int64_t ld, int64_t vocab, const int64_t* labels,
                                    int64_t begin, int64_t end, double* rowLoss)
{
    for (int64_t r = begin; r < end; ++r)
        rowLoss[r] = softmaxMinusOnehotRow(x + r * ld, vocab, labels[r]);
}

// bf16 rows (raw 16-bit patterns): each row widened exactly into `row` (vocab floats, in cache),
// made softmax - onehot there as above, and rounded back to nearest-even bf16 in place, NaN kept
// NaN: the numbers of widening the logits to fp32, the fp32 rows, and rounding the result to bf16
// as LibTorch's conversions do, without a [rows, vocab] fp32 buffer.
inline void softmaxMinusOnehotRangeBf16(uint16_t* x, int64_t ld, int64_t vocab,
                                        const int64_t* labels, int64_t begin, int64_t end,
                                        double* rowLoss, float* row)
{
    const int64_t full = vocab - vocab % kLanes;
    for (int64_t r = begin; r < end; ++r) {
        uint16_t* xr = x + r * ld;
        for (int64_t j = 0; j < full; j += kLanes)
            store(row + j, loadv(xr + j));
        for (int64_t j = full; j < vocab; ++j)
            row[j] = widen(xr[j]);
        rowLoss[r] = softmaxMinusOnehotRow(row, vocab, labels[r]);
        for (int64_t j = 0; j < full; j += kLanes)
            store(xr + j, loadv(row + j));
        for (int64_t j = full; j < vocab; ++j)
            xr[j] = bf16Bits(row[j]);
    }
}
