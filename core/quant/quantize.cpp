// NF4 / FP4 / int8 quantisation of frozen weights and its inverse, with bitsandbytes' arithmetic:
// the same statistics, the same codes, the same packed bytes (tests/interop/test_quant_interop).
#include "quant/quantize.h"

#include "quant/dequant_cuda.h"
#include "util/error.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <vector>

namespace tb {

namespace {

// NF4: quantiles of N(0, 1) with an exact zero (QLoRA, appendix E), as bitsandbytes tabulates
// them; already in [-1, 1].
constexpr std::array<float, 16> kNf4Code = {-1.0f,
                                            -0.6961928009986877f,
                                            -0.5250730514526367f,
                                            -0.39491748809814453f,
                                            -0.28444138169288635f,
                                            -0.18477343022823334f,
                                            -0.09105003625154495f,
                                            0.0f,
                                            0.07958029955625534f,
                                            0.16093020141124725f,
                                            0.24611230194568634f,
                                            0.33791524171829224f,
                                            0.44070982933044434f,
                                            0.5626170039176941f,
                                            0.7229568362236023f,
                                            1.0f};
// FP4 (1 sign, 2 exponent, 1 mantissa bits) in bitsandbytes' code order, before it divides by the
// largest magnitude (12).
constexpr std::array<float, 16> kFp4Raw = {0.0f,  0.0625f, 8.0f,  12.0f,    4.0f,  6.0f,
                                           2.0f,  3.0f,    -0.0f, -0.0625f, -8.0f, -12.0f,
                                           -4.0f, -6.0f,   -2.0f, -3.0f};

// The LUT bitsandbytes' CPU backend quantises 8-bit blockwise values with: 65,536 evenly spaced
// points of [-1, 1], each mapped to the code whose midpoint interval holds it.
constexpr int kLutSize = 65536;

const std::vector<uint8_t>& dynamicMapLut()
{
    static const std::vector<uint8_t> lut = [] {
        const torch::Tensor code = dynamicMap();
        const float* c = code.data_ptr<float>();
        std::array<float, kQuantDynamicMapEntries - 1> mid{};
        for (int i = 0; i < kQuantDynamicMapEntries - 1; ++i)
            mid[i] = 0.5f * (c[i] + c[i + 1]);
        std::vector<uint8_t> out(kLutSize);
        int idx = 0;
        for (int i = 0; i < kLutSize; ++i) {
            const float v = -1.0f + (2.0f * static_cast<float>(i)) / (kLutSize - 1);
            while (idx < kQuantDynamicMapEntries - 1 && mid[idx] < v)
                ++idx;
            out[i] = static_cast<uint8_t>(idx);
        }
        return out;
    }();
    return lut;
}

void checkWeight(const torch::Tensor& w)
{
    if (w.dim() != 2)
        fail("quantisation needs a 2-D weight, got ", w.dim(), " dimensions");
    if (w.scalar_type() != torch::kFloat32 && w.scalar_type() != torch::kBFloat16 &&
        w.scalar_type() != torch::kFloat16)
        fail("quantisation needs an fp32, bf16 or fp16 weight");
}

// Blockwise absmax of a flat fp32 tensor and the values scaled into [-1, 1]: [blocks], [n].
std::pair<torch::Tensor, torch::Tensor> scaleBlocks(const torch::Tensor& flat, int64_t blockSize)
{
    const int64_t n = flat.numel();
    const int64_t rem = n % blockSize;
    const int64_t full = n - rem;
    const torch::Tensor com = flat.narrow(0, 0, full).view({full / blockSize, blockSize});
    torch::Tensor absmax = std::get<0>(com.abs().max(-1));
    // x * (1 / absmax), the reciprocal first, as bitsandbytes writes it.
    torch::Tensor scaled =
        (com * absmax.clamp_min(1e-38).reciprocal().view({-1, 1})).clamp_(-1, 1).reshape({-1});
    if (rem > 0) {
        const torch::Tensor tail = flat.narrow(0, full, rem);
        const torch::Tensor am = tail.abs().max().clamp_min(1e-38);
        absmax = torch::cat({absmax, am.unsqueeze(0)});
        scaled = torch::cat({scaled, (tail / am).clamp_(-1, 1)});
    }
    return {absmax, scaled};
}

// bitsandbytes' CPU quantize_blockwise of fp32 values with the dynamic map, blocks of 256:
// returns the uint8 codes and the float32 absmax per block.
std::pair<torch::Tensor, torch::Tensor> quantizeDynamic(const torch::Tensor& values)
{
    const torch::Tensor v = values.to(torch::kCPU).contiguous();
    const int64_t n = v.numel();
    const int64_t blocks = (n + kQuantDoubleBlockSize - 1) / kQuantDoubleBlockSize;
    torch::Tensor codes = torch::empty({n}, torch::kUInt8);
    torch::Tensor absmax = torch::empty({blocks}, torch::kFloat32);
    const float* in = v.data_ptr<float>();
    uint8_t* out = codes.data_ptr<uint8_t>();
    float* am = absmax.data_ptr<float>();
    const std::vector<uint8_t>& lut = dynamicMapLut();
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t begin = b * kQuantDoubleBlockSize;
        const int64_t end = std::min(begin + kQuantDoubleBlockSize, n);
        float m = 0.0f;
        for (int64_t i = begin; i < end; ++i)
            m = std::max(m, std::fabs(in[i]));
        am[b] = m;
        if (m == 0.0f) {
            std::fill(out + begin, out + end, uint8_t(0));
            continue;
        }
        const float inv = 1.0f / m;
        for (int64_t i = begin; i < end; ++i) {
            const float x = std::clamp(in[i] * inv, -1.0f, 1.0f);
            const float pos = (x + 1.0f) * 0.5f;
            const float scaledPos = pos * static_cast<float>(kLutSize - 1);
            out[i] = lut[static_cast<uint16_t>(scaledPos + 0.5f)];
        }
    }
    return {codes.to(values.device()), absmax.to(values.device())};
}

QuantizedWeight quantize4bit(const torch::Tensor& w, const QuantOptions& options)
{
    QuantizedWeight q;
    q.kind = options.kind;
    q.doubleQuant = options.doubleQuant;
    q.rows = w.size(0);
    q.cols = w.size(1);
    torch::Tensor scaled, absmax;
    {
        const torch::Tensor flat = w.reshape({-1}).to(torch::kFloat32);
        std::tie(absmax, scaled) = scaleBlocks(flat, kQuantBlockSize);
    }
    if (scaled.numel() % 2)
        scaled = torch::constant_pad_nd(scaled, {0, 1});
    // Nearest code: the interval between sorted codes' midpoints that holds the value (FP4's codes
    // are not sorted, so through its sort order).
    const torch::Tensor code = quantCode(options.kind, w.device());
    const torch::Tensor order = torch::argsort(code);
    const torch::Tensor sorted = code.index_select(0, order);
    const torch::Tensor bounds = (sorted.narrow(0, 0, 15) + sorted.narrow(0, 1, 15)) / 2;
    torch::Tensor idx = torch::bucketize(scaled, bounds, /*out_int32=*/true);
    scaled = torch::Tensor();
    if (options.kind != QuantKind::Nf4)
        idx = order.index_select(0, idx);
    const torch::Tensor q8 = idx.to(torch::kUInt8);
    idx = torch::Tensor();
    q.data = torch::bitwise_or(q8.slice(0, 0, q8.numel(), 2).bitwise_left_shift(4),
                               q8.slice(0, 1, q8.numel(), 2));
    if (options.doubleQuant) {
        const torch::Tensor offset = absmax.mean();
        q.offset = offset.item<float>();
        auto [codes, absmax2] = quantizeDynamic(absmax - offset);
        q.absmax = codes;
        q.absmax2 = absmax2;
        q.code2 = dynamicMap(w.device());
    } else {
        q.absmax = absmax;
    }
    return q;
}

QuantizedWeight quantizeInt8(const torch::Tensor& w)
{
    QuantizedWeight q;
    q.kind = QuantKind::Int8;
    q.rows = w.size(0);
    q.cols = w.size(1);
    // As int8_vectorwise_quant: the row's absmax of w in its own dtype, then in fp32.
    // 127.0 / stats is Python's reciprocal-then-multiply.
    const torch::Tensor stats = std::get<0>(w.abs().max(1)).to(torch::kFloat32);
    q.data = torch::round(w * (stats.unsqueeze(-1).reciprocal() * 127.0)).to(torch::kInt8);
    q.absmax = stats;
    return q;
}

// out[i] = table[nibble i] * absmax[i / 64] for 4-bit data on the CPU, over the intra-op threads;
// T: float, c10::BFloat16 or c10::Half (the fp32 product converted as torch's .to() does).
template <typename T>
void dequantize4bitCpu(const uint8_t* data, const float* absmax, const float* code, int64_t n,
                       T* out)
{
    const int64_t blocks = (n + kQuantBlockSize - 1) / kQuantBlockSize;
    at::parallel_for(0, blocks, 256, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
            const float s = absmax[b];
            float table[16];
            for (int c = 0; c < 16; ++c)
                table[c] = code[c] * s;
            const int64_t first = b * kQuantBlockSize;
            const int64_t last = std::min(first + kQuantBlockSize, n);  // exclusive
            // Blocks hold an even count, so a block starts at a byte boundary.
            int64_t i = first;
            for (; i + 1 < last; i += 2) {
                const uint8_t byte = data[i / 2];
                out[i] = static_cast<T>(table[byte >> 4]);
                out[i + 1] = static_cast<T>(table[byte & 0xF]);
            }
            if (i < last)
                out[i] = static_cast<T>(table[data[i / 2] >> 4]);
        }
    });
}

template <typename T>
void dequantizeInt8Cpu(const int8_t* data, const float* absmax, int64_t rows, int64_t cols, T* out)
{
    constexpr float kInv127 = static_cast<float>(7.874015718698502e-3);
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float s = absmax[r];
            const int8_t* in = data + r * cols;
            T* o = out + r * cols;
            for (int64_t c = 0; c < cols; ++c)
                o[c] = static_cast<T>(static_cast<float>(in[c]) * s * kInv127);
        }
    });
}

template <typename T>
void dequantizeCpu(const QuantizedWeight& q, const torch::Tensor& absmax, torch::Tensor& out)
{
    T* o = reinterpret_cast<T*>(out.data_ptr());
    if (q.kind == QuantKind::Int8) {
        dequantizeInt8Cpu(q.data.data_ptr<int8_t>(), absmax.data_ptr<float>(), q.rows, q.cols, o);
        return;
    }
    const torch::Tensor code = quantCode(q.kind);
    dequantize4bitCpu(q.data.data_ptr<uint8_t>(), absmax.data_ptr<float>(), code.data_ptr<float>(),
                      q.numel(), o);
}

}  // namespace

int64_t QuantizedWeight::bytes() const
{
    int64_t n = 0;
    for (const torch::Tensor* t : {&data, &absmax, &absmax2, &code2})
        if (t->defined())
            n += t->numel() * static_cast<int64_t>(t->element_size());
    return n;
}

torch::Tensor quantCode(QuantKind kind, const torch::Device& device)
{
    torch::Tensor code;
    if (kind == QuantKind::Nf4) {
        code = torch::from_blob(const_cast<float*>(kNf4Code.data()), {16}, torch::kFloat32).clone();
    } else if (kind == QuantKind::Fp4) {
        code = torch::from_blob(const_cast<float*>(kFp4Raw.data()), {16}, torch::kFloat32).clone();
        code.div_(code.abs().max());
    } else {
        fail("no 4-bit code table for quant '", quantKindName(kind), "'");
    }
    return code.to(device);
}

torch::Tensor dynamicMap(const torch::Device& device)
{
    // The signed dynamic type (Dettmers 2016): for exponents 10^-6 .. 10^0, the means of evenly
    // spaced fractions in [0.1, 1], both signs; then 0 and 1. 7 exponent bits of 8: no extra
    // linear items. Each mean is computed in fp32 and scaled in fp32, as bitsandbytes does.
    static const torch::Tensor cpu = [] {
        std::vector<float> data;
        constexpr int kMaxExponentBits = 7, kNonSignBits = 7;
        for (int i = 0; i < kMaxExponentBits; ++i) {
            const int64_t items = (int64_t(1) << (i + kNonSignBits - kMaxExponentBits)) + 1;
            const torch::Tensor bounds = torch::linspace(0.1, 1, items, torch::kFloat32);
            const torch::Tensor means =
                (bounds.narrow(0, 0, items - 1) + bounds.narrow(0, 1, items - 1)) / 2.0;
            const double scale = std::pow(10.0, -(kMaxExponentBits - 1) + i);
            const torch::Tensor pos = scale * means;
            const torch::Tensor neg = -scale * means;
            data.insert(data.end(), pos.data_ptr<float>(), pos.data_ptr<float>() + pos.numel());
            data.insert(data.end(), neg.data_ptr<float>(), neg.data_ptr<float>() + neg.numel());
        }
        data.push_back(0.0f);
        data.push_back(1.0f);
        data.resize(kQuantDynamicMapEntries, 0.0f);
        std::sort(data.begin(), data.end());
        return torch::tensor(data, torch::kFloat32);
    }();
    return cpu.to(device, /*non_blocking=*/false, /*copy=*/true);
}

QuantizedWeight quantizeWeight(const torch::Tensor& w, const QuantOptions& options)
{
    checkWeight(w);
    torch::NoGradGuard noGrad;
    switch (options.kind) {
    case QuantKind::None:
        fail("quantizeWeight needs a format (nf4, fp4 or int8)");
    case QuantKind::Int8:
        return quantizeInt8(w.contiguous());
    case QuantKind::Nf4:
    case QuantKind::Fp4:
        return quantize4bit(w.contiguous(), options);
    }
    fail("unknown quant format");
}

torch::Tensor dequantizeAbsmax(const QuantizedWeight& q)
{
    if (!q.doubleQuant)
        return q.absmax;
    // code2[q] * absmax2[b / 256] + offset, in fp32 (dequantize_blockwise, then the offset).
    const int64_t blocks = q.absmax.numel();
    const int64_t pad =
        (blocks + kQuantDoubleBlockSize - 1) / kQuantDoubleBlockSize * kQuantDoubleBlockSize -
        blocks;
    torch::Tensor v = q.code2.index_select(0, q.absmax.to(torch::kInt64));
    v = torch::constant_pad_nd(v, {0, pad}).view({-1, kQuantDoubleBlockSize});
    v = (v * q.absmax2.view({-1, 1})).reshape({-1}).narrow(0, 0, blocks);
    return v + q.offset;
}

torch::Tensor dequantizeWeightTorch(const QuantizedWeight& q, torch::Dtype dtype)
{
    torch::NoGradGuard noGrad;
    if (q.kind == QuantKind::Int8)
        return (q.data.to(torch::kFloat32) * q.absmax.view({-1, 1}) *
                static_cast<float>(7.874015718698502e-3))
            .to(dtype);
    const int64_t n = q.numel();
    const torch::Tensor hi = q.data.bitwise_right_shift(4);
    const torch::Tensor lo = q.data.bitwise_and(0xF);
    const torch::Tensor codes =
        torch::stack({hi, lo}, 1).reshape({-1}).narrow(0, 0, n).to(torch::kInt64);
    torch::Tensor v = quantCode(q.kind, q.data.device()).index_select(0, codes);
    const int64_t pad = (n + kQuantBlockSize - 1) / kQuantBlockSize * kQuantBlockSize - n;
    v = torch::constant_pad_nd(v, {0, pad}).view({-1, kQuantBlockSize});
    v = (v * dequantizeAbsmax(q).view({-1, 1})).reshape({-1}).narrow(0, 0, n);
    return v.view({q.rows, q.cols}).to(dtype);
}

torch::Tensor dequantizeWeight(const QuantizedWeight& q, torch::Dtype dtype)
{
    torch::NoGradGuard noGrad;
    if (q.data.is_cuda()) {
        torch::Tensor out;
        if (dequantizeWeightCuda(q, dtype, out))
            return out;
        return dequantizeWeightTorch(q, dtype);
    }
    if (!q.data.device().is_cpu() ||
        (dtype != torch::kFloat32 && dtype != torch::kBFloat16 && dtype != torch::kFloat16))
        return dequantizeWeightTorch(q, dtype);
    const torch::Tensor absmax = dequantizeAbsmax(q).contiguous();
    torch::Tensor out = torch::empty({q.rows, q.cols}, torch::dtype(dtype));
    if (dtype == torch::kFloat32)
        dequantizeCpu<float>(q, absmax, out);
    else if (dtype == torch::kBFloat16)
        dequantizeCpu<c10::BFloat16>(q, absmax, out);
    else
        dequantizeCpu<c10::Half>(q, absmax, out);
    return out;
}

QuantizedWeight toDevice(const QuantizedWeight& q, const torch::Device& device)
{
    QuantizedWeight r = q;
    for (torch::Tensor* t : {&r.data, &r.absmax, &r.absmax2, &r.code2})
        if (t->defined())
            *t = t->to(device);
    return r;
}

}  // namespace tb
