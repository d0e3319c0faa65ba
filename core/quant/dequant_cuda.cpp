// Dequantising on CUDA through kernels/dequant_4bit.cuh: checks q's tensors against quantize.h's
// layout (a kernel reads raw pointers, so a wrong size is an out-of-bounds read, not an exception),
// allocates the output and launches on the current stream. Compiled in every build; the CUDA part
// only where TB_HAVE_KERNELS is defined.
#include "quant/dequant_cuda.h"

#include "util/error.h"

#ifdef TB_HAVE_KERNELS
#include "kernels/dequant_4bit.cuh"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <array>
#include <optional>
#endif

namespace tb {

#ifndef TB_HAVE_KERNELS

bool dequantKernelsBuilt()
{
    return false;
}

bool dequantizeWeightCuda(const QuantizedWeight&, torch::Dtype, torch::Tensor&)
{
    return false;
}

bool dequantizeAbsmaxCuda(const QuantizedWeight&, torch::Tensor&)
{
    return false;
}

#else

namespace {

std::optional<kernels::OutType> outType(torch::Dtype dtype)
{
    switch (dtype) {
    case torch::kFloat32:
        return kernels::OutType::F32;
    case torch::kBFloat16:
        return kernels::OutType::BF16;
    case torch::kFloat16:
        return kernels::OutType::F16;
    default:
        return std::nullopt;
    }
}

// `t` as the layout wants it (dtype, element count, q's device), contiguous; else tb::Error naming
// the tensor and both shapes.
torch::Tensor expect(const QuantizedWeight& q, const torch::Tensor& t, const char* name,
                     torch::Dtype dtype, int64_t numel)
{
    const torch::Device device = q.data.device();
    if (!t.defined())
        fail("dequantizeWeightCuda: ", quantKindName(q.kind), " weight [", q.rows, ", ", q.cols,
             "]: ", name, " is missing");
    if (t.scalar_type() != dtype || t.numel() != numel || t.device() != device)
        fail("dequantizeWeightCuda: ", quantKindName(q.kind), " weight [", q.rows, ", ", q.cols,
             "]: ", name, " is ", t.scalar_type(), " [", t.numel(), "] on ", t.device(),
             ", expected ", dtype, " [", numel, "] on ", device);
    return t.contiguous();
}

// The 16 values of a 4-bit kind as host floats, read once from quantCode (the one definition of
// the tables) and then reused: a launch copies them into its parameters.
const float* codeTable(QuantKind kind)
{
    auto read = [](QuantKind k) {
        const torch::Tensor code = quantCode(k, torch::kCPU).to(torch::kFloat32).contiguous();
        if (code.numel() != 16)
            fail("dequantizeWeightCuda: the ", quantKindName(k), " code table has ", code.numel(),
                 " values, expected 16");
        std::array<float, 16> table{};
        std::copy(code.data_ptr<float>(), code.data_ptr<float>() + 16, table.begin());
        return table;
    };
    static const std::array<float, 16> nf4 = read(QuantKind::Nf4);
    static const std::array<float, 16> fp4 = read(QuantKind::Fp4);
    return kind == QuantKind::Nf4 ? nf4.data() : fp4.data();
}

void check(const kernels::KernelStatus& status)
{
    if (!status.ok())
        fail("CUDA dequantisation kernel: ", status.error);
}

kernels::KernelLaunch launchOn(const torch::Device& device)
{
    return {device.index(), c10::cuda::getCurrentCUDAStream(device.index()).stream()};
}

int64_t blocksOf(const QuantizedWeight& q)
{
    return (q.numel() + kQuantBlockSize - 1) / kQuantBlockSize;
}

// The double-quantisation state's tensors, checked; they stay alive with the caller's locals.
struct DoubleQuantState {
    torch::Tensor codes, absmax2, code2;
};
DoubleQuantState doubleQuantState(const QuantizedWeight& q)
{
    const int64_t blocks = blocksOf(q);
    return {expect(q, q.absmax, "absmax (double-quantised codes)", torch::kUInt8, blocks),
            expect(q, q.absmax2, "absmax2", torch::kFloat32,
                   (blocks + kQuantDoubleBlockSize - 1) / kQuantDoubleBlockSize),
            expect(q, q.code2, "code2", torch::kFloat32, kQuantDynamicMapEntries)};
}

void dequantize4bit(const QuantizedWeight& q, kernels::OutType type, torch::Tensor& out)
{
    const torch::Tensor data = expect(q, q.data, "data", torch::kUInt8, (q.numel() + 1) / 2);
    kernels::FourBitWeight w;
    w.packed = data.data_ptr<uint8_t>();
    w.n = q.numel();
    w.blockSize = kQuantBlockSize;
    w.code16 = codeTable(q.kind);
    torch::Tensor absmax;
    DoubleQuantState state;
    if (q.doubleQuant) {
        state = doubleQuantState(q);
        w.absmaxCodes = state.codes.data_ptr<uint8_t>();
        w.absmax2 = state.absmax2.data_ptr<float>();
        w.code256 = state.code2.data_ptr<float>();
        w.offset = q.offset;
        w.absmax2Block = kQuantDoubleBlockSize;
    } else {
        absmax = expect(q, q.absmax, "absmax", torch::kFloat32, blocksOf(q));
        w.absmax = absmax.data_ptr<float>();
    }
    check(kernels::dequantize4bit(w, out.data_ptr(), type, launchOn(data.device())));
}

void dequantizeInt8(const QuantizedWeight& q, kernels::OutType type, torch::Tensor& out)
{
    const torch::Tensor data = expect(q, q.data, "data", torch::kInt8, q.numel());
    const torch::Tensor absmax = expect(q, q.absmax, "absmax", torch::kFloat32, q.rows);
    check(kernels::dequantizeInt8Rows(data.data_ptr<int8_t>(), q.rows, q.cols,
                                      absmax.data_ptr<float>(), out.data_ptr(), type,
                                      launchOn(data.device())));
}

}  // namespace

bool dequantKernelsBuilt()
{
    return true;
}

bool dequantizeWeightCuda(const QuantizedWeight& q, torch::Dtype dtype, torch::Tensor& out)
{
    const std::optional<kernels::OutType> type = outType(dtype);
    if (!q.data.defined() || !q.data.is_cuda() || !type)
        return false;
    if (q.kind == QuantKind::None)
        fail("dequantizeWeightCuda: the weight is not quantised (kind none)");
    if (q.rows < 0 || q.cols < 0)
        fail("dequantizeWeightCuda: negative shape [", q.rows, ", ", q.cols, "]");
    const c10::cuda::CUDAGuard guard(q.data.device());
    torch::Tensor result =
        torch::empty({q.rows, q.cols}, torch::TensorOptions().dtype(dtype).device(q.data.device()));
    if (q.kind == QuantKind::Int8)
        dequantizeInt8(q, *type, result);
    else
        dequantize4bit(q, *type, result);
    out = std::move(result);
    return true;
}

bool dequantizeAbsmaxCuda(const QuantizedWeight& q, torch::Tensor& out)
{
    if (!q.data.defined() || !q.data.is_cuda() || !q.doubleQuant || q.kind == QuantKind::Int8 ||
        q.kind == QuantKind::None)
        return false;
    const c10::cuda::CUDAGuard guard(q.data.device());
    const DoubleQuantState state = doubleQuantState(q);
    const int64_t blocks = blocksOf(q);
    torch::Tensor result = torch::empty(
        {blocks}, torch::TensorOptions().dtype(torch::kFloat32).device(q.data.device()));
    check(kernels::dequantizeAbsmax(state.codes.data_ptr<uint8_t>(), blocks,
                                    state.absmax2.data_ptr<float>(), kQuantDoubleBlockSize,
                                    state.code2.data_ptr<float>(), q.offset,
                                    result.data_ptr<float>(), launchOn(q.data.device())));
    out = std::move(result);
    return true;
}

#endif

}  // namespace tb
