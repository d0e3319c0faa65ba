// The decoding attention kernel (see attention_kernel.h), compiled for AVX-512, for AVX2 + FMA and
// portably from one body (attention_kernel_body.h), the set chosen as the few-rows kernels'.
#include "model/attention_kernel.h"

#include <cstring>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>  // the AVX-512 bodies of model/per_isa.h
#endif

namespace tb {

#define TB_ISA_BODY "model/attention_kernel_body.h"
#include "model/per_isa.h"

int64_t attentionScratchFloats(const AttentionArgs& a)
{
    constexpr int64_t widest = 16;  // the widest kLanes: scores rounded up to whole vectors
    return (a.keys + widest - 1) / widest * widest + 2 * a.headDim;
}

void attendKvHead(const AttentionArgs& a, int64_t row, int64_t kvHead, float* scratch,
                  FewRowsIsa isa)
{
    switch (isa) {
#ifdef TB_ISA_X86
    case FewRowsIsa::avx512:
        if (a.bf16)
            avx512::attendAll<uint16_t>(a, row, kvHead, scratch);
        else
            avx512::attendAll<float>(a, row, kvHead, scratch);
        return;
    case FewRowsIsa::avx2:
        if (a.bf16)
            avx2::attendAll<uint16_t>(a, row, kvHead, scratch);
        else
            avx2::attendAll<float>(a, row, kvHead, scratch);
        return;
#endif
    default:
        if (a.bf16)
            portable::attendAll<uint16_t>(a, row, kvHead, scratch);
        else
            portable::attendAll<float>(a, row, kvHead, scratch);
        return;
    }
}

}  // namespace tb
