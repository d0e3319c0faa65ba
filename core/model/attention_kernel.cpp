// The decoding attention kernel (see attention_kernel.h), compiled for AVX-512, for AVX2 + FMA and
// portably from one body (attention_kernel_body.h), the set chosen as the few-rows kernels'.
#include "model/attention_kernel.h"

#include <cstring>

namespace tb {

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TB_ATTENTION_X86 1
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
namespace avx512 {
constexpr int kLanes = 16;
#include "model/attention_kernel_body.h"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
constexpr int kLanes = 8;
#include "model/attention_kernel_body.h"
}  // namespace avx2
#pragma GCC pop_options
#endif

namespace portable {
constexpr int kLanes = 4;
#include "model/attention_kernel_body.h"
}  // namespace portable

int64_t attentionScratchFloats(const AttentionArgs& a)
{
    constexpr int64_t widest = 16;  // the widest kLanes: scores rounded up to whole vectors
    return (a.keys + widest - 1) / widest * widest + 2 * a.headDim;
}

void attendKvHead(const AttentionArgs& a, int64_t row, int64_t kvHead, float* scratch,
                  FewRowsIsa isa)
{
    switch (isa) {
#ifdef TB_ATTENTION_X86
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
