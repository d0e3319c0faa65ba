// Dequantising a QuantizedWeight on CUDA with the kernels of kernels/dequant_4bit.cuh, one launch
// on the current CUDA stream; in a build without them (TB_CUDA_KERNELS off) every call reports "not
// run" and the caller takes dequantizeWeightTorch. Internal to core: includes LibTorch.
#pragma once

#include "quant/quantize.h"

namespace tb {

// Whether this build compiled kernels/ (CMake TB_CUDA_KERNELS=ON, which defines TB_HAVE_KERNELS).
bool dequantKernelsBuilt();

// q on a CUDA device (all its tensors on one device), dtype float32, bfloat16 or float16: sets
// `out` to the dequantised weight, a new contiguous [rows, cols] tensor of `dtype` on q's device,
// written by one kernel on the current stream of that device, and returns true. The values are
// dequantizeWeightTorch's bit for bit: 4-bit code[c] * absmax[block] as one fp32 product (with
// double quantisation the absmax is code2[q] * absmax2 + offset, two roundings, no fused
// multiply-add), int8 float(q) * absmax[row] * 7.874015718698502e-3f as two products, then rounded
// to nearest even into `dtype`.
// Returns false and leaves `out` alone when the build has no kernels, q.data is not on CUDA or
// dtype is another type: the caller falls back to dequantizeWeightTorch.
// Throws tb::Error for kind none, tensors whose dtype, size or device do not match q's layout
// (quantize.h), or a failing CUDA call (its file, line and CUDA error).
bool dequantizeWeightCuda(const QuantizedWeight& q, torch::Dtype dtype, torch::Tensor& out);

// The double-quantised absmax values of a 4-bit q on CUDA as float32 [blocks] (dequantizeAbsmax's
// values, bit for bit), in one launch; false (out alone) without kernels, off CUDA or when q has
// no double quantisation. Throws as dequantizeWeightCuda.
bool dequantizeAbsmaxCuda(const QuantizedWeight& q, torch::Tensor& out);

}  // namespace tb
