// Quantising a frozen weight into NF4, FP4 or int8 and back, with bitsandbytes' layout and
// arithmetic (quantize_4bit / dequantize_4bit with compress_statistics, int8_vectorwise_quant), so
// the bytes equal theirs. Internal to core: includes LibTorch.
#pragma once

#include "quant/quant_format.h"

#include <torch/torch.h>

namespace tb {

// One quantised weight, [rows, cols] as nn.Linear stores it ([out, in]), on one device.
struct QuantizedWeight {
    QuantKind kind = QuantKind::None;
    bool doubleQuant = false;
    int64_t rows = 0, cols = 0;
    // nf4 / fp4: [(rows * cols + 1) / 2] uint8, element 2i in the high nibble and 2i + 1 in the low
    // one of byte i (row-major order, blocks of kQuantBlockSize elements running across rows).
    // int8: [rows, cols] int8.
    torch::Tensor data;
    // nf4 / fp4: [blocks] float32, each block's largest |w|; with double quantisation [blocks]
    // uint8, codes of (absmax - offset) in the dynamic map, blocks of kQuantDoubleBlockSize.
    // int8: [rows] float32, each row's largest |w|.
    torch::Tensor absmax;
    torch::Tensor absmax2;  // double quantisation: [ceil(blocks / 256)] float32
    torch::Tensor code2;    // double quantisation: [256] float32, the signed dynamic map
    float offset = 0.0f;    // double quantisation: the mean of the absmax values

    int64_t numel() const { return rows * cols; }
    int64_t bytes() const;  // what the tensors above hold
    QuantOptions options() const { return {kind, doubleQuant, false}; }
};

// The 16 values a 4-bit code stands for (bitsandbytes' get_4bit_type): [16] float32 on `device`.
torch::Tensor quantCode(QuantKind kind, const torch::Device& device = torch::kCPU);
// The signed 8-bit dynamic map of double quantisation (bitsandbytes' create_dynamic_map), sorted:
// [256] float32.
torch::Tensor dynamicMap(const torch::Device& device = torch::kCPU);

// w: [rows, cols] (fp32, bf16 or fp16, any device). Quantised on w's device; statistics in fp32 as
// bitsandbytes computes them from w.float(). Throws tb::Error for kind none or a non-2-D w.
QuantizedWeight quantizeWeight(const torch::Tensor& w, const QuantOptions& options);

// The absmax values as float32 [blocks] (double quantisation undone: code2[q] * absmax2 + offset).
torch::Tensor dequantizeAbsmax(const QuantizedWeight& q);

// [rows, cols] in `dtype` on q's device: 4-bit code[c] * absmax[block] in fp32, then cast;
// int8 w * absmax[row] * (1 / 127). The CPU path is a vectorised loop over the intra-op threads;
// on CUDA a kernel of kernels/ where the build has one, else dequantizeWeightTorch.
torch::Tensor dequantizeWeight(const QuantizedWeight& q, torch::Dtype dtype);
// The same through LibTorch operators only (any device): the reference of the fast paths.
torch::Tensor dequantizeWeightTorch(const QuantizedWeight& q, torch::Dtype dtype);

// The weight moved to another device (all tensors).
QuantizedWeight toDevice(const QuantizedWeight& q, const torch::Device& device);

}  // namespace tb
