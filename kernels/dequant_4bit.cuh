// Host launchers of the CUDA kernels that dequantise core/quant's frozen weights (NF4 / FP4 codes
// times their block's absmax, with or without double quantisation; the double-quantised absmax;
// row-wise int8). Plain C++: device pointers, the stream as void* (a cudaStream_t), no CUDA or
// LibTorch header, so core/quant/dequant_cuda.cpp includes it from an ordinary C++ translation
// unit.
#pragma once

#include <cstdint>
#include <string>

namespace tb::kernels {

// What the kernels write: float32, bfloat16 or float16 (bf16 / fp16 rounded to nearest even from
// the fp32 product).
enum class OutType { F32, BF16, F16 };

// A launcher's outcome: ok, or the first failing CUDA call as "file:line: call: cudaError name:
// message" (nothing exits or aborts; core/quant/dequant_cuda.cpp turns it into tb::Error).
struct KernelStatus {
    std::string error;
    bool ok() const { return error.empty(); }
};

// Where a launch runs: the device index the pointers live on and its stream (a cudaStream_t; null
// is the legacy default stream). The launchers make `device` current for the launch and restore the
// previous one.
struct KernelLaunch {
    int device = 0;
    void* stream = nullptr;
};

// One 4-bit weight of n elements (row-major, bitsandbytes' quantize_4bit layout). Every pointer but
// code16 is device memory.
struct FourBitWeight {
    const uint8_t* packed =
        nullptr;  // [(n + 1) / 2]: element 2i in the high nibble of byte i, 2i+1
                  // in the low one (the last low nibble is padding when n is odd)
    int64_t n = 0;
    int blockSize = 64;             // elements per absmax, a positive multiple of 8
    const float* code16 = nullptr;  // HOST memory: the 16 values of the codes (NF4 or FP4), copied
                                    // into the launch's parameters
    // Plain absmax: [ceil(n / blockSize)] float32, each block's largest |w| (the last block may be
    // partial).
    const float* absmax = nullptr;
    // Double quantisation (used when absmaxCodes is not null, absmax is then ignored): the absmax
    // of block b is code256[absmaxCodes[b]] * absmax2[b / absmax2Block] + offset, computed in fp32
    // as two rounded operations (no fused multiply-add), as bitsandbytes' dequantize_blockwise and
    // its `+ offset` do.
    const uint8_t* absmaxCodes = nullptr;  // [ceil(n / blockSize)]
    const float* absmax2 = nullptr;        // [ceil(blocks / absmax2Block)]
    const float* code256 = nullptr;        // [256], the signed dynamic map
    float offset = 0.0f;
    int absmax2Block = 256;
};

// out[i] = code16[nibble i] * absmax[i / blockSize], in fp32 (one rounding), then converted to
// `type`; out: [n] elements of `type`, device memory. n == 0 launches nothing.
KernelStatus dequantize4bit(const FourBitWeight& w, void* out, OutType type,
                            const KernelLaunch& launch);

// The double-quantised absmax alone: out[b] = code256[codes[b]] * absmax2[b / absmax2Block] +
// offset (fp32, two roundings), b < blocks; out: [blocks] float32, device memory.
KernelStatus dequantizeAbsmax(const uint8_t* codes, int64_t blocks, const float* absmax2,
                              int absmax2Block, const float* code256, float offset, float* out,
                              const KernelLaunch& launch);

// LLM.int8()'s row-wise int8, as bitsandbytes' int8_vectorwise_dequant: out[r, c] =
// float(q[r, c]) * rowAbsmax[r] * 7.874015718698502e-3f (1/127 as a float; two rounded
// products, in that order), converted to `type`. q: [rows, cols] int8, rowAbsmax: [rows] float32,
// out: [rows, cols] of `type`, all device memory, row-major and contiguous.
KernelStatus dequantizeInt8Rows(const int8_t* q, int64_t rows, int64_t cols, const float* rowAbsmax,
                                void* out, OutType type, const KernelLaunch& launch);

}  // namespace tb::kernels
