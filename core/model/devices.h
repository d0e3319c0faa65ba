// The devices this process can use, behind a torch-free facade: the CUDA devices (the studio lists
// them to choose the GPUs of a launched run) and what this CPU computes natively.
#pragma once

#include <string>

namespace tb {

// Devices LibTorch sees (after CUDA_VISIBLE_DEVICES); 0 in a build or on a machine without CUDA.
int cudaDeviceCount();

// The instructions that make bf16 matrix products native on this CPU ("AMX-BF16", "AVX512_BF16"),
// or "" where it has none (bf16 is then emulated and slower than fp32).
std::string cpuBf16Instructions();

// How fast this CPU multiplies matrices in bf16 (fp16 when !bf16) relative to fp32, measured on the
// spot (a few milliseconds: 512 x 512 products at LibTorch's intra-op threads). Above 1, the half
// type pays; AVX512_BF16 without AMX often gives less than 1.
double cpuHalfMatmulSpeedup(bool bf16 = true);

}  // namespace tb
