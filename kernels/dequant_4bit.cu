// CUDA kernels that dequantise core/quant's frozen weights just in time, one launch per weight:
// NF4 / FP4 codes times their block's absmax (double quantisation fused in), the double-quantised
// absmax alone, and row-wise int8. Launchers and layouts: kernels/dequant_4bit.cuh.
#include "kernels/dequant_4bit.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace tb::kernels {

namespace {

// Every CUDA call goes through this (ggml's CUDA_CHECK, returning instead of aborting): the
// launcher returns the failing call with its file and line.
KernelStatus cudaFailure(cudaError_t e, const char* call, const char* file, int line)
{
    return {std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
            cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}
#define TB_CUDA_CHECK(call)                                                                        \
    do {                                                                                           \
        const cudaError_t tbCudaError_ = (call);                                                   \
        if (tbCudaError_ != cudaSuccess)                                                           \
            return cudaFailure(tbCudaError_, #call, __FILE__, __LINE__);                           \
    } while (0)

KernelStatus invalid(const std::string& what)
{
    return {std::string("kernels/dequant_4bit.cu: ") + what};
}

constexpr int kThreads = 256;  // threads per block
constexpr int kGroup = 8;      // consecutive elements per thread: one 32-bit load of 4-bit codes
constexpr int64_t kMaxBlocks = int64_t(1) << 30;  // grid cap; the kernels loop over the rest

// One fp32 multiply or add rounded to nearest, never contracted into a fused multiply-add, so the
// result is the LibTorch path's (separate mul and add kernels) bit for bit. The host branch exists
// so the per-thread functions below can be checked on a machine without a GPU.
__host__ __device__ inline float mulRn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
__host__ __device__ inline float addRn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

template <typename T> __host__ __device__ inline T fromFloat(float x);
template <> __host__ __device__ inline float fromFloat<float>(float x)
{
    return x;
}
template <> __host__ __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}
template <> __host__ __device__ inline __half fromFloat<__half>(float x)
{
    return __float2half_rn(x);
}

// Eight converted outputs, stored with 16-byte vector stores when the group is whole and `out` is
// aligned (1 store for bf16 / fp16, 2 for fp32), else one element at a time.
template <typename T> struct Pack8 {
    alignas(16) T v[kGroup];
};
template <typename T>
__host__ __device__ inline void store(const Pack8<T>& p, T* out, int count, bool vector)
{
    if (vector && count == kGroup) {
        const uint4* src = reinterpret_cast<const uint4*>(p.v);
        uint4* dst = reinterpret_cast<uint4*>(out);
        for (int k = 0; k < int(sizeof(T)) / 2; ++k)
            dst[k] = src[k];
        return;
    }
    for (int j = 0; j < count; ++j)
        out[j] = p.v[j];
}

bool aligned(const void* p, uintptr_t bytes)
{
    return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The kernels' arguments by value: the 16-value code table travels in the launch parameters.
struct FourBitParams {
    const uint8_t* packed;
    int64_t n;
    int blockSize;
    float code16[16];
    const float* absmax;
    const uint8_t* absmaxCodes;
    const float* absmax2;
    const float* code256;
    float offset;
    int absmax2Block;
    bool packedAligned;  // packed is 4-byte aligned: whole groups load one uint32
    bool outAligned;     // out is 16-byte aligned: whole groups store with uint4
};

__host__ __device__ inline float doubleQuantAbsmax(const uint8_t* codes, int64_t b,
                                                   const float* absmax2, int absmax2Block,
                                                   const float* code256, float offset)
{
    return addRn(mulRn(code256[codes[b]], absmax2[b / absmax2Block]), offset);
}

// Elements 8g .. 8g+7 (fewer at the end) of a 4-bit weight: bytes 4g .. 4g+3. blockSize is a
// multiple of 8, so the group lies in one absmax block. code16 / code256: the tables (shared
// memory on the GPU).
template <typename T, bool Double>
__host__ __device__ inline void dequantGroup4bit(const FourBitParams& p, const float* code16,
                                                 const float* code256, int64_t g, T* out)
{
    const int64_t i0 = g * kGroup;
    const int count = int(p.n - i0 < kGroup ? p.n - i0 : kGroup);
    const int64_t block = i0 / p.blockSize;
    const float scale = Double ? doubleQuantAbsmax(p.absmaxCodes, block, p.absmax2, p.absmax2Block,
                                                   code256, p.offset)
                               : p.absmax[block];
    uint32_t word = 0;
    if (count == kGroup && p.packedAligned) {
        word = reinterpret_cast<const uint32_t*>(p.packed)[g];
    } else {
        for (int k = 0; k < (count + 1) / 2; ++k)
            word |= uint32_t(p.packed[4 * g + k]) << (8 * k);
    }
    Pack8<T> vals;
    for (int j = 0; j < kGroup; ++j) {
        const uint32_t byte = (word >> (8 * (j / 2))) & 0xffu;
        const uint32_t code = (j % 2 == 0) ? (byte >> 4) : (byte & 0xfu);
        vals.v[j] = fromFloat<T>(mulRn(code16[code], scale));
    }
    store(vals, out + i0, count, p.outAligned);
}

template <typename T, bool Double>
__global__ void __launch_bounds__(kThreads) dequant4bitKernel(FourBitParams p, T* out)
{
    __shared__ float code16[16];
    __shared__ float code256[Double ? 256 : 1];
    for (int i = threadIdx.x; i < 16; i += blockDim.x)
        code16[i] = p.code16[i];
    if (Double)
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            code256[i] = p.code256[i];
    __syncthreads();
    const int64_t groups = (p.n + kGroup - 1) / kGroup;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
         g += int64_t(gridDim.x) * blockDim.x)
        dequantGroup4bit<T, Double>(p, code16, code256, g, out);
}

__global__ void __launch_bounds__(kThreads)
    absmaxKernel(const uint8_t* codes, int64_t blocks, const float* absmax2, int absmax2Block,
                 const float* code256Global, float offset, float* out)
{
    __shared__ float code256[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        code256[i] = code256Global[i];
    __syncthreads();
    for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
         b += int64_t(gridDim.x) * blockDim.x)
        out[b] = doubleQuantAbsmax(codes, b, absmax2, absmax2Block, code256, offset);
}

struct Int8Params {
    const int8_t* q;
    int64_t rows, cols;
    const float* rowAbsmax;
    bool qAligned;    // q is 8-byte aligned: whole groups load one uint2
    bool outAligned;  // out is 16-byte aligned
};

constexpr float kInv127 = 7.874015718698502e-3f;  // bitsandbytes' 1/127

// Elements 8g .. 8g+7 (fewer at the end) of the flattened [rows, cols]; a group may cross rows.
template <typename T>
__host__ __device__ inline void dequantGroupInt8(const Int8Params& p, int64_t g, T* out)
{
    const int64_t n = p.rows * p.cols;
    const int64_t i0 = g * kGroup;
    const int count = int(n - i0 < kGroup ? n - i0 : kGroup);
    int8_t q[kGroup];
    if (count == kGroup && p.qAligned) {
        const uint2 word = reinterpret_cast<const uint2*>(p.q)[g];
        for (int j = 0; j < 4; ++j) {
            q[j] = int8_t((word.x >> (8 * j)) & 0xffu);
            q[j + 4] = int8_t((word.y >> (8 * j)) & 0xffu);
        }
    } else {
        for (int j = 0; j < kGroup; ++j)
            q[j] = j < count ? p.q[i0 + j] : int8_t(0);
    }
    int64_t row = i0 / p.cols;
    int64_t col = i0 - row * p.cols;
    float scale = p.rowAbsmax[row];
    Pack8<T> vals;
    for (int j = 0; j < count; ++j) {
        if (col == p.cols) {
            col = 0;
            scale = p.rowAbsmax[++row];
        }
        vals.v[j] = fromFloat<T>(mulRn(mulRn(float(q[j]), scale), kInv127));
        ++col;
    }
    store(vals, out + i0, count, p.outAligned);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) dequantInt8Kernel(Int8Params p, T* out)
{
    const int64_t groups = (p.rows * p.cols + kGroup - 1) / kGroup;
    for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
         g += int64_t(gridDim.x) * blockDim.x)
        dequantGroupInt8<T>(p, g, out);
}

unsigned gridFor(int64_t work)
{
    return unsigned(std::min<int64_t>((work + kThreads - 1) / kThreads, kMaxBlocks));
}

// Makes the launch's device current for the launcher's scope, restoring the previous one.
class DeviceScope {
public:
    KernelStatus enter(int device)
    {
        TB_CUDA_CHECK(cudaGetDevice(&m_previous));
        if (m_previous != device)
            TB_CUDA_CHECK(cudaSetDevice(device));
        m_device = device;
        return {};
    }
    ~DeviceScope()
    {
        if (m_previous >= 0 && m_previous != m_device)
            cudaSetDevice(m_previous);  // best effort: a destructor reports nothing
    }

private:
    int m_previous = -1, m_device = -1;
};

// Launches kernel<<<grid, kThreads, 0, stream>>>(args...) on the launch's device and checks it.
template <typename... Params, typename... Args>
KernelStatus launchChecked(void (*kernel)(Params...), int64_t work, const KernelLaunch& launch,
                           Args... args)
{
    DeviceScope scope;
    if (KernelStatus s = scope.enter(launch.device); !s.ok())
        return s;
    kernel<<<gridFor(work), kThreads, 0, static_cast<cudaStream_t>(launch.stream)>>>(args...);
    TB_CUDA_CHECK(cudaGetLastError());
    return {};
}

template <typename T, bool Double>
KernelStatus launch4bit(const FourBitParams& p, void* out, const KernelLaunch& launch)
{
    return launchChecked(dequant4bitKernel<T, Double>, (p.n + kGroup - 1) / kGroup, launch, p,
                         static_cast<T*>(out));
}

template <typename T>
KernelStatus launchInt8(const Int8Params& p, void* out, const KernelLaunch& launch)
{
    return launchChecked(dequantInt8Kernel<T>, (p.rows * p.cols + kGroup - 1) / kGroup, launch, p,
                         static_cast<T*>(out));
}

}  // namespace

KernelStatus dequantize4bit(const FourBitWeight& w, void* out, OutType type,
                            const KernelLaunch& launch)
{
    if (w.n < 0 || w.blockSize <= 0 || w.blockSize % kGroup != 0)
        return invalid("dequantize4bit: n must be >= 0 and blockSize a positive multiple of 8 (n " +
                       std::to_string(w.n) + ", blockSize " + std::to_string(w.blockSize) + ")");
    if (w.n == 0)
        return {};
    const bool dq = w.absmaxCodes != nullptr;
    if (!w.packed || !w.code16 || !out || (dq ? (!w.absmax2 || !w.code256) : !w.absmax))
        return invalid("dequantize4bit: a null pointer");
    if (dq && w.absmax2Block <= 0)
        return invalid("dequantize4bit: absmax2Block must be positive");
    FourBitParams p{};
    p.packed = w.packed;
    p.n = w.n;
    p.blockSize = w.blockSize;
    std::copy(w.code16, w.code16 + 16, p.code16);
    p.absmax = w.absmax;
    p.absmaxCodes = w.absmaxCodes;
    p.absmax2 = w.absmax2;
    p.code256 = w.code256;
    p.offset = w.offset;
    p.absmax2Block = w.absmax2Block;
    p.packedAligned = aligned(w.packed, 4);
    p.outAligned = aligned(out, 16);
    switch (type) {
    case OutType::F32:
        return dq ? launch4bit<float, true>(p, out, launch)
                  : launch4bit<float, false>(p, out, launch);
    case OutType::BF16:
        return dq ? launch4bit<__nv_bfloat16, true>(p, out, launch)
                  : launch4bit<__nv_bfloat16, false>(p, out, launch);
    case OutType::F16:
        return dq ? launch4bit<__half, true>(p, out, launch)
                  : launch4bit<__half, false>(p, out, launch);
    }
    return invalid("dequantize4bit: unknown output type");
}

KernelStatus dequantizeAbsmax(const uint8_t* codes, int64_t blocks, const float* absmax2,
                              int absmax2Block, const float* code256, float offset, float* out,
                              const KernelLaunch& launch)
{
    if (blocks < 0 || absmax2Block <= 0)
        return invalid("dequantizeAbsmax: blocks must be >= 0 and absmax2Block positive");
    if (blocks == 0)
        return {};
    if (!codes || !absmax2 || !code256 || !out)
        return invalid("dequantizeAbsmax: a null pointer");
    return launchChecked(absmaxKernel, blocks, launch, codes, blocks, absmax2, absmax2Block,
                         code256, offset, out);
}

KernelStatus dequantizeInt8Rows(const int8_t* q, int64_t rows, int64_t cols, const float* rowAbsmax,
                                void* out, OutType type, const KernelLaunch& launch)
{
    if (rows < 0 || cols < 0)
        return invalid("dequantizeInt8Rows: rows and cols must be >= 0");
    if (rows == 0 || cols == 0)
        return {};
    if (!q || !rowAbsmax || !out)
        return invalid("dequantizeInt8Rows: a null pointer");
    const Int8Params p{q, rows, cols, rowAbsmax, aligned(q, 8), aligned(out, 16)};
    switch (type) {
    case OutType::F32:
        return launchInt8<float>(p, out, launch);
    case OutType::BF16:
        return launchInt8<__nv_bfloat16>(p, out, launch);
    case OutType::F16:
        return launchInt8<__half>(p, out, launch);
    }
    return invalid("dequantizeInt8Rows: unknown output type");
}

}  // namespace tb::kernels
