// Q8_0 quantisation: per 32-weight block, scale by max|x| / 127 and round half away from zero.
#include "export/gguf_quant.h"

#include "util/error.h"

#include <c10/util/Half.h>

#include <cmath>
#include <cstring>

namespace tb {

std::string quantizeQ8_0(const float* x, int64_t n)
{
    if (n % kQ8_0BlockSize != 0)
        fail("Q8_0: ", n, " weights are not a whole number of ", kQ8_0BlockSize, "-weight blocks");
    std::string out(static_cast<size_t>(n / kQ8_0BlockSize * kQ8_0BlockBytes), '\0');
    char* dst = out.data();
    for (int64_t b = 0; b < n; b += kQ8_0BlockSize, dst += kQ8_0BlockBytes) {
        float amax = 0.0f;
        for (int64_t j = 0; j < kQ8_0BlockSize; ++j)
            amax = std::max(amax, std::fabs(x[b + j]));
        // Single-precision throughout, as the reference: d and its inverse in float, the scale
        // stored as fp16 (round to nearest even) while the values are divided by the float d.
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t half = c10::Half(d).x;
        std::memcpy(dst, &half, 2);  // little-endian hosts only, as GGUF itself
        for (int64_t j = 0; j < kQ8_0BlockSize; ++j)
            dst[2 + j] = static_cast<char>(static_cast<int8_t>(std::round(x[b + j] * id)));
    }
    return out;
}

void dequantizeQ8_0(const std::string& blocks, float* out, int64_t n)
{
    if (n % kQ8_0BlockSize != 0 ||
        static_cast<int64_t>(blocks.size()) != n / kQ8_0BlockSize * kQ8_0BlockBytes)
        fail("Q8_0: ", blocks.size(), " bytes do not hold ", n, " weights");
    const char* src = blocks.data();
    for (int64_t b = 0; b < n; b += kQ8_0BlockSize, src += kQ8_0BlockBytes) {
        c10::Half d;
        std::memcpy(&d.x, src, 2);
        for (int64_t j = 0; j < kQ8_0BlockSize; ++j)
            out[b + j] =
                static_cast<float>(d) * static_cast<float>(static_cast<int8_t>(src[2 + j]));
    }
}

void roundTripQ8_0(float* x, int64_t n)
{
    dequantizeQ8_0(quantizeQ8_0(x, n), x, n);
}

}  // namespace tb
