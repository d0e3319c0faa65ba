// Aliasing vector loads and stores and e^x in each lane, for the kernels whose rows are read and
// written in place (attention_kernel_body.h, swiglu_kernel_body.h, train/loss_rows_kernel_body.h):
// included after model/vec_body.h inside a namespace that defines kLanes and under that set's
// `#pragma GCC target`. No include guard on purpose: each instruction set's namespace gets its own.

// Vector loads and stores through pointers that may alias the floats: the memcpy of vec_body.h's
// load() is expanded here in 16-byte halves, whose reload as one register stalls store forwarding
// (an 8-wide head of 8 ran three times slower than the portable loop).
typedef float VecFA __attribute__((vector_size(kLanes * 4), aligned(4), may_alias));
typedef uint16_t VecHA __attribute__((vector_size(kLanes * 2), aligned(2), may_alias));

inline VecF loadv(const float* p)
{
    return *reinterpret_cast<const VecFA*>(p);
}

inline VecF loadv(const uint16_t* p)
{
#ifdef TB_ISA_AVX512
    return load(p);  // its 256-bit integer load may alias anything
#else
    const VecU u = __builtin_convertvector(*reinterpret_cast<const VecHA*>(p), VecU) << 16;
    return reinterpret_cast<VecF>(u);  // bf16 widened exactly: the high half of fp32's pattern
#endif
}

inline VecF splat(float v)
{
    return VecF{} + v;
}

inline void store(float* p, VecF v)
{
    *reinterpret_cast<VecFA*>(p) = v;
}

// kLanes floats rounded to bf16 as bf16Bits rounds them (NaN kept NaN), stored through a pointer
// that may alias the floats (a row rounded in place).
inline void store(uint16_t* p, VecF v)
{
    VecU u;
    std::memcpy(&u, &v, sizeof u);
    const VecU rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const VecU bits = v != v ? VecU{} + 0x7fc0u : rounded;
    const VecH h = __builtin_convertvector(bits, VecH);
    std::memcpy(p, &h, sizeof h);
}

// e^x in each lane, Cephes' expf: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by a polynomial, 2^n
// put into the exponent bits; within 2 ulps. Below -88 (and -inf, a masked key) it gives 0, and
// softmax never gives it an x above 0.
inline VecF expOf(VecF x)
{
    const VecF lowest = splat(-88.0f), highest = splat(88.0f);
    x = x < lowest ? lowest : x;
    x = x > highest ? highest : x;
    const VecF fx = x * 1.44269504088896341f + 0.5f;
    VecI n = __builtin_convertvector(fx, VecI);    // truncated: one too high below zero
    n += (__builtin_convertvector(n, VecF) > fx);  // a true comparison is -1: floor(fx)
    const VecF nf = __builtin_convertvector(n, VecF);
    const VecF r = x - nf * 0.693359375f - nf * -2.12194440e-4f;
    VecF y = splat(1.9875691500e-4f);
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    const VecI bits = (n + 127) << 23;  // 2^n; n = -127 (x near -88) gives 0
    VecF twoToN;
    std::memcpy(&twoToN, &bits, sizeof twoToN);
    return y * twoToN;
}
