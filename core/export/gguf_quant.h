// GGML's Q8_0 block quantisation for GGUF export: each run of 32 weights along a row becomes an
// fp16 scale d = max|x| / 127 and 32 int8 values round(x / d) (half away from zero), 34 bytes per
// block, bit for bit as ggml's reference quantize_row_q8_0 (and gguf-py) compute it. Torch-free
// header.
#pragma once

#include <cstdint>
#include <string>

namespace tb {

constexpr int64_t kQ8_0BlockSize = 32;   // weights per block
constexpr int64_t kQ8_0BlockBytes = 34;  // fp16 scale + 32 int8

// x: n floats, n a multiple of kQ8_0BlockSize (blocks never straddle rows when a row is a multiple
// too). Returns n / 32 blocks of 34 bytes.
std::string quantizeQ8_0(const float* x, int64_t n);

// The weights a block stores, back as floats (d x q): for tests and error checks. n as for
// quantizeQ8_0.
void dequantizeQ8_0(const std::string& blocks, float* out, int64_t n);

// x replaced by what a Q8_0 file gives back for it (quantise, then dequantise), in place.
void roundTripQ8_0(float* x, int64_t n);

}  // namespace tb
