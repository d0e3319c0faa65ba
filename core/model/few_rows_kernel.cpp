// The few-rows products of a decoding step (see few_rows_kernel.h), compiled for AVX-512, for AVX2
// + FMA and portably from one body (few_rows_kernel_body.h), the set chosen once at run time.
#include "model/few_rows_kernel.h"

#include <cstring>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>  // the AVX-512 bodies of model/per_isa.h
#endif

namespace tb {

#define TB_ISA_BODY "model/few_rows_kernel_body.h"
#include "model/per_isa.h"

namespace {

FewRowsIsa detectIsa()
{
#ifdef TB_ISA_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return FewRowsIsa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return FewRowsIsa::avx2;
#endif
    return FewRowsIsa::portable;
}

template <typename W>
void dispatch(FewRowsIsa isa, const float* x, int64_t rows, int64_t in, const W* w, const W* bias,
              int64_t begin, int64_t end, float* y, int64_t ldy)
{
    switch (isa) {
#ifdef TB_ISA_X86
    case FewRowsIsa::avx512:
        avx512::product(x, rows, in, w, bias, begin, end, y, ldy);
        return;
    case FewRowsIsa::avx2:
        avx2::product(x, rows, in, w, bias, begin, end, y, ldy);
        return;
#endif
    default:
        portable::product(x, rows, in, w, bias, begin, end, y, ldy);
        return;
    }
}

}  // namespace

FewRowsIsa fewRowsBestIsa()
{
    static const FewRowsIsa best = detectIsa();
    return best;
}

bool fewRowsIsaSupported(FewRowsIsa isa)
{
    switch (fewRowsBestIsa()) {
    case FewRowsIsa::avx512:
        return true;
    case FewRowsIsa::avx2:
        return isa != FewRowsIsa::avx512;
    default:
        return isa == FewRowsIsa::portable;
    }
}

const char* fewRowsIsaName(FewRowsIsa isa)
{
    switch (isa) {
    case FewRowsIsa::avx512:
        return "avx512";
    case FewRowsIsa::avx2:
        return "avx2";
    default:
        return "portable";
    }
}

void fewRowsProduct(const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
                    int64_t begin, int64_t end, float* y, int64_t ldy, FewRowsIsa isa)
{
    dispatch(isa, x, rows, in, w, bias, begin, end, y, ldy);
}

void fewRowsProductBf16(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                        const uint16_t* bias, int64_t begin, int64_t end, float* y, int64_t ldy,
                        FewRowsIsa isa)
{
    dispatch(isa, x, rows, in, w, bias, begin, end, y, ldy);
}

}  // namespace tb
