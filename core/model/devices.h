// The devices this process can use, behind a torch-free facade: the CUDA devices (the studio lists
// them to choose the GPUs of a launched run) and what this CPU computes natively.
#pragma once

#include <string>

namespace tb {

// LibTorch's CUDA backend. A normal build links it (libtorch_cuda). A build linked only with
// LibTorch's CPU libraries (TB_TORCH_CPU_ONLY: the Debian package) loads it at start from the
// folder of libtorch_cpu.so (the wheel's layout, a build tree) or from torch/lib below it (the
// tunebench-cuda package: /usr/lib/tunebench/torch/lib, the CUDA libraries in ../../nvidia), when
// an NVIDIA driver (libcuda.so.1) is present. The environment variable TB_CUDA=off never loads it,
// TB_CUDA=on loads it without a driver too (to check an install on a machine without a GPU).
// Call loadCudaBackend() first thing in main: LibTorch decides once per process, at its first
// question about CUDA, whether it has a CUDA backend. Idempotent; never throws.
void loadCudaBackend();

// One line on the CUDA backend: "linked", "loaded from PATH", or why it is not there ("not
// installed (Debian: install tunebench-cuda)", "not loaded: no NVIDIA driver (libcuda.so.1)",
// "not loaded: TB_CUDA=off", "PATH did not load: the loader's message").
std::string cudaBackendStatus();

// Why no CUDA device can be used, for an error message: the backend's status where it is missing,
// else what the CUDA runtime says (cudaGetDeviceCount's error, such as "no CUDA-capable device is
// detected"); "" when a device is available.
std::string cudaUnavailableReason();

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
