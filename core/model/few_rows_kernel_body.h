// The body of the few-rows kernels, written once in GCC's vector extensions and compiled once per
// instruction set: model/few_rows_kernel.cpp includes this file inside a namespace that defines
// kLanes (floats per vector register) and under that set's `#pragma GCC target`. No include guard
// on purpose; nothing else includes it.

typedef float VecF __attribute__((vector_size(kLanes * 4), aligned(4)));
typedef uint32_t VecU __attribute__((vector_size(kLanes * 4), aligned(4)));
typedef uint16_t VecH __attribute__((vector_size(kLanes * 2), aligned(2)));

inline VecF load(const float* p)
{
    VecF v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// bf16 widened exactly: its 16 bits are the high half of the fp32 pattern.
inline VecF load(const uint16_t* p)
{
    VecH h;
    std::memcpy(&h, p, sizeof h);
    const VecU u = __builtin_convertvector(h, VecU) << 16;
    VecF v;
    std::memcpy(&v, &u, sizeof v);
    return v;
}

typedef int32_t VecI __attribute__((vector_size(kLanes * 4)));

// Sums of kLanes accumulators at once, as a tree over pairs: at each level two vectors whose lanes
// hold partial sums in groups of G lanes become one with groups of G / 2 (two permutes and one
// add), so kLanes vectors become one vector of kLanes sums in log2(kLanes) levels; kSumOwner says
// which accumulator each lane of the result sums. Far cheaper than reducing each accumulator on its
// own.
struct LaneIndex {
    int32_t lane[kLanes];
};

template <int G> constexpr LaneIndex foldMask(bool upper)
{
    LaneIndex mask{};
    for (int lane = 0; lane < kLanes; ++lane) {
        const int group = lane / (G / 2);  // output group: input group t of a (2t) or b (2t + 1)
        const int t = group / 2;
        const int which = group % 2;
        mask.lane[lane] = which * kLanes + t * G + (upper ? G / 2 : 0) + lane % (G / 2);
    }
    return mask;
}

template <int G> inline void foldLevel(VecF* v, int count)
{
    static constexpr LaneIndex loIndex = foldMask<G>(false);
    static constexpr LaneIndex hiIndex = foldMask<G>(true);
    VecI lo, hi;
    std::memcpy(&lo, loIndex.lane, sizeof lo);
    std::memcpy(&hi, hiIndex.lane, sizeof hi);
    for (int p = 0; p < count / 2; ++p)
        v[p] = __builtin_shuffle(v[2 * p], v[2 * p + 1], lo) +
               __builtin_shuffle(v[2 * p], v[2 * p + 1], hi);
    if constexpr (G > 2)
        foldLevel<G / 2>(v, count / 2);
}

// owner[lane] of the tree's result, by following the groups through the levels.
constexpr LaneIndex sumOwner()
{
    int owner[kLanes][kLanes] = {};  // owner[vector][group]
    for (int n = 0; n < kLanes; ++n)
        owner[n][0] = n;
    int count = kLanes;
    for (int g = kLanes; g > 1; g /= 2) {
        int next[kLanes][kLanes] = {};
        const int groups = kLanes / g;
        for (int p = 0; p < count / 2; ++p)
            for (int t = 0; t < groups; ++t)
                for (int which = 0; which < 2; ++which)
                    next[p][2 * t + which] = owner[2 * p + which][t];
        for (int p = 0; p < count / 2; ++p)
            for (int t = 0; t < 2 * groups; ++t)
                owner[p][t] = next[p][t];
        count /= 2;
    }
    LaneIndex result{};
    for (int lane = 0; lane < kLanes; ++lane)
        result.lane[lane] = owner[0][lane];
    return result;
}

constexpr LaneIndex kSumOwner = sumOwner();

// out[n] = the sum of acc[n]'s lanes, for n < count (count need not be a multiple of kLanes).
inline void sums(const VecF* acc, int count, float* out)
{
    for (int first = 0; first < count; first += kLanes) {
        VecF v[kLanes];
        for (int n = 0; n < kLanes; ++n)
            v[n] = first + n < count ? acc[first + n] : VecF{};
        foldLevel<kLanes>(v, kLanes);
        for (int lane = 0; lane < kLanes; ++lane)
            if (first + kSumOwner.lane[lane] < count)
                out[first + kSumOwner.lane[lane]] = v[0][lane];
    }
}

// KW rows of W against KX rows of x: KW * KX accumulators, each W and x vector loaded once per
// step. With Ahead, `ahead` is the next block of W, fetched into the cache meanwhile: the hardware
// prefetcher alone leaves a large W that comes from memory (a head of 32,000 rows) half as fast as
// one that sits in the cache.
template <int KW, int KX, bool Ahead, typename W>
inline void block(const float* x, int64_t in, const W* w, const W* bias, float* y, int64_t ldy,
                  const W* ahead)
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
        for (int i = 0; i < KW; ++i) {
            wv[i] = load(w + i * in + k);
            if constexpr (Ahead)
                __builtin_prefetch(ahead + i * in + k);
        }
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
                    int64_t ldy, const W* ahead)
{
    switch (kx) {
    case 4:
        block<KW, 4, Ahead>(x, in, w, bias, y, ldy, ahead);
        break;
    case 3:
        block<KW, 3, Ahead>(x, in, w, bias, y, ldy, ahead);
        break;
    case 2:
        block<KW, 2, Ahead>(x, in, w, bias, y, ldy, ahead);
        break;
    default:
        block<KW, 1, Ahead>(x, in, w, bias, y, ldy, ahead);
        break;
    }
}

// All rows of x, up to four at a time, against KW rows of W from row o.
template <int KW, typename W>
inline void rowsAgainst(const float* x, int64_t rows, int64_t in, const W* w, const W* bias,
                        float* y, int64_t ldy, const W* ahead)
{
    for (int64_t r = 0; r < rows; r += 4) {
        const float* xr = x + r * in;
        float* yr = y + r * ldy;
        const int kx = rows - r >= 4 ? 4 : static_cast<int>(rows - r);
        if (r == 0 && ahead)
            blockOf<KW, true>(kx, xr, in, w, bias, yr, ldy, ahead);
        else
            blockOf<KW, false>(kx, xr, in, w, bias, yr, ldy, ahead);
    }
}

// Blocks of four of W's rows (kLanes for one row of x, whose product is bound by reading W and
// wants more independent sums in flight), then the rest one by one.
template <typename W>
void product(const float* x, int64_t rows, int64_t in, const W* w, const W* bias, int64_t begin,
             int64_t end, float* y, int64_t ldy)
{
    const int64_t step = rows == 1 ? kLanes : 4;
    int64_t o = begin;
    for (; o + step <= end; o += step) {
        const W* wo = w + o * in;
        const W* bo = bias ? bias + o : nullptr;
        const W* ahead = o + 2 * step <= end ? wo + step * in : nullptr;
        if (rows > 1)
            rowsAgainst<4>(x, rows, in, wo, bo, y + o, ldy, ahead);
        else if (ahead)
            block<kLanes, 1, true>(x, in, wo, bo, y + o, ldy, ahead);
        else
            block<kLanes, 1, false>(x, in, wo, bo, y + o, ldy, ahead);
    }
    for (; o < end; ++o)
        rowsAgainst<1>(x, rows, in, w + o * in, bias ? bias + o : nullptr, y + o, ldy,
                       static_cast<const W*>(nullptr));
}
