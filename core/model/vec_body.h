// The vector helpers the CPU kernels share (few_rows_kernel_body.h, attention_kernel_body.h,
// swiglu_kernel_body.h, train/loss_rows_kernel_body.h), in GCC's vector extensions: included by
// those bodies inside a namespace that defines kLanes (floats per vector register) and under that
// set's
// `#pragma GCC target`. No include guard on purpose: each instruction set's namespace gets its own.

// bf16 (raw 16-bit pattern) widened exactly: its 16 bits are the high half of the fp32 pattern.
inline float widen(float v)
{
    return v;
}

inline float widen(uint16_t v)
{
    const uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// fp32 -> bf16 bits, rounded to nearest even, NaN kept NaN (as c10::BFloat16).
inline uint16_t bf16Bits(float v)
{
    if (v != v)
        return 0x7fc0;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// A float rounded to T: fp32 as it is, bf16 by bf16Bits.
inline float narrowTo(float v, const float*)
{
    return v;
}

inline uint16_t narrowTo(float v, const uint16_t*)
{
    return bf16Bits(v);
}

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
#ifdef TB_ISA_AVX512
    // One zero-extending load and a shift: GCC makes the vector-extension form below into two
    // 256-bit halves joined again, three more instructions per 16 weights.
    // (The masked form: the plain one merges into an "undefined" register GCC 12 warns about.)
    const __m512i wide = _mm512_maskz_cvtepu16_epi32(
        static_cast<__mmask16>(0xffff), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    VecU u;
    std::memcpy(&u, &wide, sizeof u);
    u <<= 16;
    VecF v;
    std::memcpy(&v, &u, sizeof v);
    return v;
#else
    VecH h;
    std::memcpy(&h, p, sizeof h);
    const VecU u = __builtin_convertvector(h, VecU) << 16;
    VecF v;
    std::memcpy(&v, &u, sizeof v);
    return v;
#endif
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
