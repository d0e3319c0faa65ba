// The body of the few-rows kernels, written once in GCC's vector extensions and compiled once per
// instruction set: model/few_rows_kernel.cpp includes this file inside a namespace that defines
// kLanes (floats per vector register) and under that set's `#pragma GCC target`. No include guard
// on purpose; nothing else includes it.

#include "model/vec_body.h"

// KW rows of W against KX rows of x: KW * KX accumulators, each W and x vector loaded once per
// step. With Ahead, rows of a later block of W are fetched into the cache meanwhile (`aheadRows` of
// them from `ahead`, `aheadStride` elements apart): the hardware prefetcher alone leaves a large W
// that comes from memory (a head of 32,000 rows) half as fast as one that sits in the cache.
template <int KW, int KX, bool Ahead, typename W>
inline void block(const float* x, int64_t in, const W* w, const W* bias, float* y, int64_t ldy,
                  const W* ahead, int aheadRows = KW, int64_t aheadStride = 0)
{
    VecF acc[KW][KX];
#pragma GCC unroll 16
    for (int i = 0; i < KW; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < KX; ++j)
            acc[i][j] = VecF{};
    int64_t k = 0;
    for (; k + kLanes <= in; k += kLanes) {
        VecF wv[KW];
#pragma GCC unroll 16
        for (int i = 0; i < KW; ++i)
            wv[i] = load(w + i * in + k);
        if constexpr (Ahead)
            for (int a = 0; a < aheadRows; ++a)
                __builtin_prefetch(ahead + a * aheadStride + k);
#pragma GCC unroll 4
        for (int j = 0; j < KX; ++j) {
            const VecF xv = load(x + j * in + k);
#pragma GCC unroll 16
            for (int i = 0; i < KW; ++i)
                acc[i][j] += wv[i] * xv;
        }
    }
    float total[KW * KX];
    sums(&acc[0][0], KW * KX, total);
    for (int i = 0; i < KW; ++i)
        for (int j = 0; j < KX; ++j) {
            float s = total[i * KX + j];
            for (int64_t t = k; t < in; ++t)
                s += widen(w[i * in + t]) * x[j * in + t];
            y[j * ldy + i] = bias ? s + widen(bias[i]) : s;
        }
}

template <int KW, bool Ahead, typename W>
inline void blockOf(int kx, const float* x, int64_t in, const W* w, const W* bias, float* y,
                    int64_t ldy, const W* ahead, int aheadRows, int64_t aheadStride)
{
    switch (kx) {
    case 4:
        block<KW, 4, Ahead>(x, in, w, bias, y, ldy, ahead, aheadRows, aheadStride);
        break;
    case 3:
        block<KW, 3, Ahead>(x, in, w, bias, y, ldy, ahead, aheadRows, aheadStride);
        break;
    case 2:
        block<KW, 2, Ahead>(x, in, w, bias, y, ldy, ahead, aheadRows, aheadStride);
        break;
    default:
        block<KW, 1, Ahead>(x, in, w, bias, y, ldy, ahead, aheadRows, aheadStride);
        break;
    }
}

// All rows of x, up to four at a time, against KW rows of W from row o. The KW rows of W at `ahead`
// are fetched meanwhile, shared out over the first KW groups of x's rows (all by the first when
// there is one group), so that no group waits on memory for all of them.
template <int KW, typename W>
inline void rowsAgainst(const float* x, int64_t rows, int64_t in, const W* w, const W* bias,
                        float* y, int64_t ldy, const W* ahead)
{
    const int64_t groups = (rows + 3) / 4;
    const int64_t sharing =
        groups < KW ? 1 : KW;  // groups that fetch a row each, or one fetching all
    for (int64_t r = 0, g = 0; r < rows; r += 4, ++g) {
        const float* xr = x + r * in;
        float* yr = y + r * ldy;
        const int kx = rows - r >= 4 ? 4 : static_cast<int>(rows - r);
        if (ahead && g < sharing) {
            if (sharing == 1)
                blockOf<KW, true>(kx, xr, in, w, bias, yr, ldy, ahead, KW, in);
            else
                blockOf<KW, true>(kx, xr, in, w, bias, yr, ldy, ahead + g * in, 1, in);
        } else {
            blockOf<KW, false>(kx, xr, in, w, bias, yr, ldy, ahead, 0, 0);
        }
    }
}

// One row of x (a single sequence's decoding step): W's rows one after another, as they lie, each
// with two accumulators, fetched kAheadBytes ahead of the reads, and the sums of kLanes rows at a
// time by the tree. Read as one stream, W comes from memory at about what the memory system gives
// (bf16 on an AMD EPYC, two threads: 37-42 GB/s, the streaming peak); kLanes rows side by side,
// each a stream of its own (block<kLanes, 1>), ran at 18-26.
template <typename W>
inline void oneRow(const float* x, int64_t in, const W* w, const W* bias, int64_t begin,
                   int64_t end, float* y)
{
    constexpr int64_t kStep = 2 * kLanes;
    constexpr int64_t kStepBytes = kStep * static_cast<int64_t>(sizeof(W));
    constexpr int64_t kAheadBytes = 512;
    for (int64_t o0 = begin; o0 < end; o0 += kLanes) {
        const int n = end - o0 < kLanes ? static_cast<int>(end - o0) : kLanes;
        VecF acc[kLanes];
        float tail[kLanes];
        for (int r = 0; r < n; ++r) {
            const W* wr = w + (o0 + r) * in;
            VecF a0{}, a1{};
            int64_t k = 0;
            for (; k + kStep <= in; k += kStep) {
                const char* next = reinterpret_cast<const char*>(wr + k) + kAheadBytes;
                for (int64_t b = 0; b < kStepBytes; b += 64)
                    __builtin_prefetch(next + b);
                a0 += load(wr + k) * load(x + k);
                a1 += load(wr + k + kLanes) * load(x + k + kLanes);
            }
            if (k + kLanes <= in) {
                a0 += load(wr + k) * load(x + k);
                k += kLanes;
            }
            acc[r] = a0 + a1;
            float t = 0;
            for (; k < in; ++k)
                t += widen(wr[k]) * x[k];
            tail[r] = t;
        }
        float total[kLanes];
        sums(acc, n, total);
        for (int r = 0; r < n; ++r) {
            const float s = total[r] + tail[r];
            y[o0 + r] = bias ? s + widen(bias[o0 + r]) : s;
        }
    }
}

// More rows of x: blocks of four of W's rows against up to four rows of x at once, then the rest
// one by one.
template <typename W>
void product(const float* x, int64_t rows, int64_t in, const W* w, const W* bias, int64_t begin,
             int64_t end, float* y, int64_t ldy)
{
    if (rows == 1) {
        oneRow(x, in, w, bias, begin, end, y);
        return;
    }
    const int64_t step = 4;
    int64_t o = begin;
    for (; o + step <= end; o += step) {
        const W* wo = w + o * in;
        const W* bo = bias ? bias + o : nullptr;
        // Two blocks ahead: one block's products are too short to hide the fetch of the next.
        const W* ahead = o + 3 * step <= end ? wo + 2 * step * in : nullptr;
        rowsAgainst<4>(x, rows, in, wo, bo, y + o, ldy, ahead);
    }
    for (; o < end; ++o)
        rowsAgainst<1>(x, rows, in, w + o * in, bias ? bias + o : nullptr, y + o, ldy,
                       static_cast<const W*>(nullptr));
}
