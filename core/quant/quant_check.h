// Torch-free checks of the CUDA dequantisation kernels (kernels/dequant_4bit.cu) against the
// LibTorch path on a random weight, and their speed: what the gpu tests and `tunebench bench
// dequant` call.
#pragma once

#include "quant/quant_format.h"

#include <cstdint>
#include <string>

namespace tb {

bool quantKernelsBuilt();   // the build has kernels/ (CMake TB_CUDA_KERNELS=ON)
bool quantCudaAvailable();  // LibTorch sees a CUDA device

// One weight dequantised by the kernel and by dequantizeWeightTorch on the same device.
struct KernelCheck {
    bool kernelRan = false;  // false: the build has no kernels, nothing was compared
    int64_t elements = 0;    // rows * cols
    double maxAbsDiff = 0;   // largest |kernel - LibTorch path|
    // Largest distance in units in the last place of the output dtype (0: bit-identical), against
    // the LibTorch path on CUDA and against dequantizeWeight of the same bytes on the CPU.
    int64_t maxUlp = 0, cpuMaxUlp = 0;
    // Double quantisation: the absmax kernel against dequantizeAbsmax, float32 ulps; -1 without.
    int64_t absmaxMaxUlp = -1;
};

// Quantises a random normal float32 [rows, cols] weight (rows scaled by powers of two from 1/4 to
// 4; `seed` fixes it) on CUDA with quantizeWeight, dequantises it into dtype ("fp32", "bf16",
// "fp16") with the kernel and with the LibTorch path, and compares. Throws tb::Error without a
// CUDA device ("no CUDA device"), for another dtype or for kind none.
KernelCheck checkDequantKernel(const QuantOptions& options, int64_t rows, int64_t cols,
                               const std::string& dtype, uint64_t seed);

// Seconds per dequantisation of one such weight (the median of `repeats` timed loops of 20, the
// device synchronised around each): the kernel, and dequantizeWeightTorch on the same device.
struct KernelTiming {
    bool kernelRan = false;
    double kernelSeconds = 0, torchSeconds = 0;
    int64_t bytesMoved = 0;  // the quantised tensors read plus the output written
};
KernelTiming timeDequantKernel(const QuantOptions& options, int64_t rows, int64_t cols,
                               const std::string& dtype, int repeats);

}  // namespace tb
