// y = x W^T for a few rows of x, W read as it lies ([out, in], row-major): the products of a
// decoding step (one token of each sequence), which are bound by reading W once. Vectorised for
// AVX-512 and AVX2 + FMA, chosen at run time by what the CPU has, with a portable loop otherwise.
// Raw pointers, no LibTorch: model/layers.cpp splits W's rows over the intra-op threads and calls
// this per part.
#pragma once

#include <cstdint>

namespace tb {

// The most rows of x the model's linear layers give these kernels (model/layers.cpp): a batched
// decoding step's rows (one per sequence). Up to 64 rows these kernels are a little faster than
// MKL's product on one thread and much faster on more, where MKL is slow: it splits x's rows, not
// W's, so every thread copies all of W into its packed layout (32 rows x the 32,000 x 384 head: 17
// ms on one thread, 13 on two).
constexpr int64_t kFewRowsMax = 64;

// The instruction sets the kernels are compiled for. The best one this CPU has is the default; the
// others are there for tests (a set the CPU lacks must not be asked for).
enum class FewRowsIsa { avx512, avx2, portable };

FewRowsIsa fewRowsBestIsa();
bool fewRowsIsaSupported(FewRowsIsa isa);
const char* fewRowsIsaName(FewRowsIsa isa);  // "avx512", "avx2", "portable"

// For r < rows and o in [begin, end): y[r * ldy + o] = sum_k x[r * in + k] * w[o * in + k] (+
// bias[o] when bias is not null). Accumulates in fp32; x, w and bias fp32.
void fewRowsProduct(const float* x, int64_t rows, int64_t in, const float* w, const float* bias,
                    int64_t begin, int64_t end, float* y, int64_t ldy,
                    FewRowsIsa isa = fewRowsBestIsa());

// The same with W (and bias) in bfloat16 (raw 16-bit patterns): each element widened to fp32
// exactly, products accumulated in fp32, y in fp32.
void fewRowsProductBf16(const float* x, int64_t rows, int64_t in, const uint16_t* w,
                        const uint16_t* bias, int64_t begin, int64_t end, float* y, int64_t ldy,
                        FewRowsIsa isa = fewRowsBestIsa());

}  // namespace tb
