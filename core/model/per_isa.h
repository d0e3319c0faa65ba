// Compiles the kernel body named by TB_ISA_BODY (a quoted include path) once per instruction set,
// each in a namespace that defines kLanes (floats per vector register): avx512 (F) and avx2
// (+ FMA) under `#pragma GCC target` where GCC targets x86 (TB_ISA_X86 is then defined), and
// portable everywhere. Included inside namespace tb by the kernels' .cpp files
// (few_rows_kernel.cpp, attention_kernel.cpp, swiglu_kernel.cpp, train/loss_rows_kernel.cpp), which
// pick the set at run time (fewRowsBestIsa), and include <immintrin.h> before it (outside any
// namespace) for the AVX-512 intrinsics. No include guard on purpose.

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TB_ISA_X86 1
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#define TB_ISA_AVX512 1  // the body may use AVX-512F intrinsics
namespace avx512 {
constexpr int kLanes = 16;
#include TB_ISA_BODY
}  // namespace avx512
#undef TB_ISA_AVX512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
constexpr int kLanes = 8;
#include TB_ISA_BODY
}  // namespace avx2
#pragma GCC pop_options
#endif

namespace portable {
constexpr int kLanes = 4;
#include TB_ISA_BODY
}  // namespace portable
