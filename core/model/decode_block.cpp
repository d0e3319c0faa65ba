// A Llama block's decoding step in one pass (see decode_block.h). Each element's arithmetic is the
// module path's: products by the same kernels, accumulated in fp32 and rounded to the model dtype;
// RMSNorm and the rotary embedding by the same rows; attention by the same kernel; SiLU, its
// product and the residual adds rounded as LibTorch's operators round them. (Compiled with OpenMP,
// as model/layers.cpp, for at::parallel_for.)
#include "model/decode_block.h"

#include "model/attention_kernel.h"
#include "model/decode_ops.h"
#include "model/few_rows_linear.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

namespace tb {

namespace {

std::atomic<bool> g_onePass{true};
std::atomic<int64_t> g_onePassSteps{0};

bool plainLinear(const LinearImpl& l, torch::ScalarType t, int64_t in, int64_t out)
{
    const torch::Tensor& w = l.weight;
    return !l.quantized() && !l.transposed && (!l.lora_A || l.loraMerged() || l.loraOff) &&
           w.defined() && w.dim() == 2 && w.size(0) == out && w.size(1) == in &&
           w.scalar_type() == t && w.device().is_cpu() && w.is_contiguous() &&
           (!l.bias.defined() ||
            (l.bias.scalar_type() == t && l.bias.is_contiguous() && l.bias.numel() == out));
}

bool plainNorm(const RMSNormImpl& n, torch::ScalarType t, int64_t dim)
{
    return n.weight.defined() && n.weight.dim() == 1 && n.weight.size(0) == dim &&
           n.weight.scalar_type() == t && n.weight.device().is_cpu() && n.weight.is_contiguous();
}

// y[begin, end) = x W^T (+ b) for one row x of `in` floats.
void productRows(const LinearImpl& l, const float* x, float* y, int64_t begin, int64_t end)
{
    const int64_t in = l.inFeatures;
    if (l.weight.scalar_type() == torch::kBFloat16) {
        const auto* w = reinterpret_cast<const uint16_t*>(l.weight.const_data_ptr());
        const auto* b =
            l.bias.defined() ? reinterpret_cast<const uint16_t*>(l.bias.const_data_ptr()) : nullptr;
        fewRowsProductBf16(x, 1, in, w, b, begin, end, y, l.outFeatures);
    } else {
        const auto* w = static_cast<const float*>(l.weight.const_data_ptr());
        const auto* b =
            l.bias.defined() ? static_cast<const float*>(l.bias.const_data_ptr()) : nullptr;
        fewRowsProduct(x, 1, in, w, b, begin, end, y, l.outFeatures);
    }
}

int64_t weightBytes(const LinearImpl& l)
{
    return l.weight.numel() * static_cast<int64_t>(l.weight.element_size());
}

// Several products of one input, their rows taken as one run and split together.
void productsTogether(std::initializer_list<std::pair<const LinearImpl*, float*>> products,
                      const float* x)
{
    int64_t rows = 0, bytes = 0;
    for (const auto& [l, y] : products) {
        rows += l->outFeatures;
        bytes += weightBytes(*l);
    }
    splitFewRows(rows, bytes, [&](int64_t begin, int64_t end) {
        int64_t offset = 0;
        for (const auto& [l, y] : products) {
            const int64_t lo = std::max(begin, offset);
            const int64_t hi = std::min(end, offset + l->outFeatures);
            if (lo < hi)
                productRows(*l, x, y, lo - offset, hi - offset);
            offset += l->outFeatures;
        }
    });
}

template <typename T> void widen(const T* x, float* y, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<float>(x[i]);
}

template <typename T> const T* dataOf(const torch::Tensor& t)
{
    return static_cast<const T*>(t.const_data_ptr());
}

// SiLU as LibTorch's CPU kernel computes it, in fp32.
inline float silu(float v)
{
    return v / (1.0f + std::exp(-v));
}

template <typename T>
void step(const DecodeBlockParts& p, const T* x, T* out, const T* cos, const T* sin, T* kc, T* vc,
          int64_t kvStride, int64_t past, int64_t window)
{
    const int64_t hidden = p.q.inFeatures, hd = p.headDim;
    const int64_t qn = p.heads * hd, kvn = p.kvHeads * hd, inner = p.gate.outFeatures;
    std::vector<T> normed(static_cast<size_t>(hidden)), h(static_cast<size_t>(hidden));
    std::vector<T> q(static_cast<size_t>(qn)), attended(static_cast<size_t>(qn));
    std::vector<float> xf(static_cast<size_t>(std::max({hidden, qn, inner})));
    std::vector<float> yq(static_cast<size_t>(qn)), yk(static_cast<size_t>(kvn)),
        yv(static_cast<size_t>(kvn)), y(static_cast<size_t>(std::max(hidden, qn)));
    std::vector<float> yg(static_cast<size_t>(inner)), yu(static_cast<size_t>(inner));

    // Attention: norm, q k v, rotary embeddings (k and v straight into the cache), attention.
    rmsNormRow<T>(x, dataOf<T>(p.inputNorm.weight), normed.data(), nullptr, hidden,
                  static_cast<float>(p.inputNorm.eps));
    widen(normed.data(), xf.data(), hidden);
    productsTogether({{&p.q, yq.data()}, {&p.k, yk.data()}, {&p.v, yv.data()}}, xf.data());
    std::vector<T> row(static_cast<size_t>(hd));
    for (int64_t head = 0; head < p.heads; ++head) {
        for (int64_t i = 0; i < hd; ++i)
            row[i] = static_cast<T>(yq[head * hd + i]);
        ropeRow<T, T, T>(row.data(), cos, sin, q.data() + head * hd, hd);
    }
    for (int64_t head = 0; head < p.kvHeads; ++head) {
        for (int64_t i = 0; i < hd; ++i)
            row[i] = static_cast<T>(yk[head * hd + i]);
        ropeRow<T, T, T>(row.data(), cos, sin, kc + head * kvStride + past * hd, hd);
        T* vr = vc + head * kvStride + past * hd;
        for (int64_t i = 0; i < hd; ++i)
            vr[i] = static_cast<T>(yv[head * hd + i]);
    }
    // A sliding window the keys reach past: the `window` latest keys only.
    const int64_t first = window > 0 ? std::max<int64_t>(0, past + 1 - window) : 0;
    AttentionArgs a;
    a.q = q.data();
    a.qBatch = qn;
    a.qHead = hd;
    a.qSeq = qn;
    a.k = kc + first * hd;
    a.kBatch = p.kvHeads * kvStride;
    a.kHead = kvStride;
    a.kPos = hd;
    a.v = vc + first * hd;
    a.vBatch = a.kBatch;
    a.vHead = kvStride;
    a.vPos = hd;
    a.out = attended.data();
    a.oBatch = qn;
    a.oHead = hd;
    a.oSeq = qn;
    a.heads = p.heads;
    a.kvHeads = p.kvHeads;
    a.seq = 1;
    a.keys = past + 1 - first;
    a.headDim = hd;
    a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    a.bf16 = std::is_same_v<T, c10::BFloat16>;
    attendAll(a, 1);

    // o and the residual.
    widen(attended.data(), xf.data(), qn);
    productsTogether({{&p.o, y.data()}}, xf.data());
    for (int64_t i = 0; i < hidden; ++i)
        h[i] = x[i] + static_cast<T>(y[i]);

    // MLP: norm; gate and up, SiLU and their product on the rows each thread made; down; residual.
    rmsNormRow<T>(h.data(), dataOf<T>(p.postNorm.weight), normed.data(), nullptr, hidden,
                  static_cast<float>(p.postNorm.eps));
    widen(normed.data(), y.data(), hidden);
    splitFewRows(inner, weightBytes(p.gate) + weightBytes(p.up), [&](int64_t begin, int64_t end) {
        productRows(p.gate, y.data(), yg.data(), begin, end);
        productRows(p.up, y.data(), yu.data(), begin, end);
        for (int64_t j = begin; j < end; ++j) {
            const T g = static_cast<T>(yg[j]);
            const T u = static_cast<T>(yu[j]);
            const T s = static_cast<T>(silu(static_cast<float>(g)));
            xf[j] = static_cast<float>(static_cast<T>(s * u));
        }
    });
    productsTogether({{&p.down, y.data()}}, xf.data());
    for (int64_t i = 0; i < hidden; ++i)
        out[i] = h[i] + static_cast<T>(y[i]);
}

}  // namespace

void setOnePassDecoding(bool on)
{
    g_onePass.store(on);
}

bool onePassDecoding()
{
    return g_onePass.load();
}

int64_t onePassDecodingSteps()
{
    return g_onePassSteps.load();
}

bool decodeBlockTakes(const DecodeBlockParts& p, const torch::Tensor& x, const BlockContext& ctx,
                      const KVCache* cache, size_t layer)
{
    if (!p.plain || !cache || cache->valid.defined() || ctx.mask.defined() ||
        !g_onePass.load(std::memory_order_relaxed) || torch::GradMode::is_enabled() ||
        !x.device().is_cpu() || x.dim() != 3 || x.size(0) != 1 || x.size(1) != 1 ||
        !x.is_contiguous() || !fewRowsDtype(x.scalar_type()) ||
        at::autocast::is_autocast_enabled(at::kCPU))
        return false;
    const auto t = x.scalar_type();
    const int64_t hidden = x.size(2), hd = p.headDim;
    if (hd <= 0 || hd % 2 != 0 || p.kvHeads <= 0 || p.heads % p.kvHeads != 0 ||
        !ctx.cos.defined() || !ctx.sin.defined() || ctx.cos.dim() != 2 || ctx.cos.size(0) != 1 ||
        ctx.cos.size(1) != hd || ctx.cos.sizes() != ctx.sin.sizes() || ctx.cos.scalar_type() != t ||
        ctx.sin.scalar_type() != t || !ctx.cos.is_contiguous() || !ctx.sin.is_contiguous() ||
        !ctx.cos.device().is_cpu())
        return false;
    if (cache->k.size() > layer && cache->k[layer].defined()) {
        for (const torch::Tensor* c : {&cache->k[layer], &cache->v[layer]})
            if (!c->defined() || c->dim() != 4 || c->size(0) != 1 || c->size(1) != p.kvHeads ||
                c->size(3) != hd || c->scalar_type() != t || !c->is_contiguous() ||
                !c->device().is_cpu())
                return false;
    }
    const int64_t qn = p.heads * hd, kvn = p.kvHeads * hd, inner = p.gate.outFeatures;
    return plainNorm(p.inputNorm, t, hidden) && plainNorm(p.postNorm, t, hidden) &&
           plainLinear(p.q, t, hidden, qn) && plainLinear(p.k, t, hidden, kvn) &&
           plainLinear(p.v, t, hidden, kvn) && plainLinear(p.o, t, qn, hidden) &&
           plainLinear(p.gate, t, hidden, inner) && plainLinear(p.up, t, hidden, inner) &&
           plainLinear(p.down, t, inner, hidden);
}

torch::Tensor decodeBlockStep(const DecodeBlockParts& p, const torch::Tensor& x,
                              const BlockContext& ctx, KVCache& cache, size_t layer, int64_t past)
{
    g_onePassSteps.fetch_add(1, std::memory_order_relaxed);
    reserveCache(cache, layer, 1, p.kvHeads, p.headDim, x.options(), past, 1);
    torch::Tensor& kc = cache.k[layer];
    torch::Tensor& vc = cache.v[layer];
    const int64_t kvStride = kc.stride(1);
    torch::Tensor out = torch::empty_like(x);
    if (x.scalar_type() == torch::kBFloat16) {
        using B = c10::BFloat16;
        step<B>(p, dataOf<B>(x), out.mutable_data_ptr<B>(), dataOf<B>(ctx.cos), dataOf<B>(ctx.sin),
                kc.mutable_data_ptr<B>(), vc.mutable_data_ptr<B>(), kvStride, past, ctx.window);
    } else {
        step<float>(p, dataOf<float>(x), out.mutable_data_ptr<float>(), dataOf<float>(ctx.cos),
                    dataOf<float>(ctx.sin), kc.mutable_data_ptr<float>(),
                    vc.mutable_data_ptr<float>(), kvStride, past, ctx.window);
    }
    return out;
}

}  // namespace tb
