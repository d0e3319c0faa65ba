// The fused head loss's softmax rows (see loss_rows_kernel.h), compiled for AVX-512, for AVX2 + FMA
// and portably from one body (loss_rows_kernel_body.h), the set chosen as the few-rows kernels'.
#include "train/loss_rows_kernel.h"

#include <cstring>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>  // the AVX-512 bodies of model/per_isa.h
#endif

namespace tb {

#define TB_ISA_BODY "train/loss_rows_kernel_body.h"
#include "model/per_isa.h"

void softmaxMinusOnehotRows(float* x, int64_t ld, int64_t vocab, const int64_t* labels,
                            int64_t begin, int64_t end, double* rowLoss, FewRowsIsa isa)
{
    switch (isa) {
#ifdef TB_ISA_X86
    case FewRowsIsa::avx512:
        avx512::softmaxMinusOnehotRange(x, ld, vocab, labels, begin, end, rowLoss);
        return;
    case FewRowsIsa::avx2:
        avx2::softmaxMinusOnehotRange(x, ld, vocab, labels, begin, end, rowLoss);
        return;
#endif
    default:
        portable::softmaxMinusOnehotRange(x, ld, vocab, labels, begin, end, rowLoss);
        return;
    }
}

void softmaxMinusOnehotRowsBf16(uint16_t* x, int64_t ld, int64_t vocab, const int64_t* labels,
                                int64_t begin, int64_t end, double* rowLoss, float* scratch,
                                FewRowsIsa isa)
{
    switch (isa) {
#ifdef TB_ISA_X86
    case FewRowsIsa::avx512:
        avx512::softmaxMinusOnehotRangeBf16(x, ld, vocab, labels, begin, end, rowLoss, scratch);
        return;
    case FewRowsIsa::avx2:
        avx2::softmaxMinusOnehotRangeBf16(x, ld, vocab, labels, begin, end, rowLoss, scratch);
        return;
#endif
    default:
        portable::softmaxMinusOnehotRangeBf16(x, ld, vocab, labels, begin, end, rowLoss, scratch);
        return;
    }
}

}  // namespace tb
