// SwiGLU's product and gradients (see swiglu_kernel.h), compiled for AVX-512, for AVX2 + FMA and
// portably from one body (swiglu_kernel_body.h), the set chosen as the few-rows kernels'.
#include "model/swiglu_kernel.h"

#include <cstring>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>  // the AVX-512 bodies of model/per_isa.h
#endif

namespace tb {

#define TB_ISA_BODY "model/swiglu_kernel_body.h"
#include "model/per_isa.h"

namespace {

template <typename T> void forwardIn(const T* g, const T* u, T* out, int64_t n, FewRowsIsa isa)
{
    switch (isa) {
#ifdef TB_ISA_X86
    case FewRowsIsa::avx512:
        avx512::swigluRange(g, u, out, n);
        return;
    case FewRowsIsa::avx2:
        avx2::swigluRange(g, u, out, n);
        return;
#endif
    default:
        portable::swigluRange(g, u, out, n);
        return;
    }
}

template <typename T>
void backwardIn(const T* dy, const T* g, const T* u, T* dg, T* du, int64_t n, FewRowsIsa isa)
{
    switch (isa) {
#ifdef TB_ISA_X86
    case FewRowsIsa::avx512:
        avx512::swigluBackwardRange(dy, g, u, dg, du, n);
        return;
    case FewRowsIsa::avx2:
        avx2::swigluBackwardRange(dy, g, u, dg, du, n);
        return;
#endif
    default:
        portable::swigluBackwardRange(dy, g, u, dg, du, n);
        return;
    }
}

}  // namespace

void swigluForward(const float* g, const float* u, float* out, int64_t n, FewRowsIsa isa)
{
    forwardIn(g, u, out, n, isa);
}

void swigluForward(const uint16_t* g, const uint16_t* u, uint16_t* out, int64_t n, FewRowsIsa isa)
{
    forwardIn(g, u, out, n, isa);
}

void swigluBackward(const float* dy, const float* g, const float* u, float* dg, float* du,
                    int64_t n, FewRowsIsa isa)
{
    backwardIn(dy, g, u, dg, du, n, isa);
}

void swigluBackward(const uint16_t* dy, const uint16_t* g, const uint16_t* u, uint16_t* dg,
                    uint16_t* du, int64_t n, FewRowsIsa isa)
{
    backwardIn(dy, g, u, dg, du, n, isa);
}

}  // namespace tb
