// RMSNorm and the rotary embedding of a few rows, as plain loops, and the attention of a decoding
// step through model/attention_kernel.h (see decode_ops.h). Each
// element's arithmetic is LibTorch's, operator by operator: in fp32 a product, a product and a
// sum, each rounded (this file is compiled without contraction into fused multiply-adds, the
// ISO default); in bf16 each operator's result rounded to bf16 as LibTorch's bf16 kernels do.
#include "model/decode_ops.h"

#include "model/attention_kernel.h"
#include "model/few_rows_kernel.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

namespace tb {

bool needsNoGradient(std::initializer_list<const torch::Tensor*> tensors)
{
    if (!torch::GradMode::is_enabled())
        return true;
    for (const torch::Tensor* t : tensors)
        if (t->defined() && t->requires_grad())
            return false;
    return true;
}

bool fewRowsDtype(torch::ScalarType t)
{
    return t == torch::kFloat32 || t == torch::kBFloat16;
}

namespace {

template <typename T>
void rmsNormRows(const T* x, const T* w, T* y, int64_t rows, int64_t dim, float eps)
{
    for (int64_t r = 0; r < rows; ++r)
        rmsNormRow<T>(x + r * dim, w, y + r * dim, nullptr, dim, eps);
}

template <typename T>
void ropeRows(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
              torch::Tensor& out)
{
    const int64_t batch = x.size(0), heads = x.size(1), seq = x.size(2), dim = x.size(3);
    const T* xp = x.data_ptr<T>();
    const T* cp = cos.data_ptr<T>();
    const T* sp = sin.data_ptr<T>();
    T* op = out.data_ptr<T>();
    const bool perRow = cos.dim() == 4;  // [batch, 1, seq, dim]
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t s = 0; s < seq; ++s) {
                const T* xr = xp + b * x.stride(0) + h * x.stride(1) + s * x.stride(2);
                const int64_t table = (perRow ? b * seq + s : s) * dim;
                const T* c = cp + table;
                const T* sn = sp + table;
                ropeRow<T, T, T>(xr, c, sn, op + ((b * heads + h) * seq + s) * dim, dim);
            }
}

}  // namespace

bool rmsNormTakesFused(const torch::Tensor& x, const torch::Tensor& w)
{
    if (!x.device().is_cpu() || !w.device().is_cpu() || x.dim() == 0 || w.dim() != 1 ||
        x.size(-1) != w.size(0) || w.size(0) == 0 || x.scalar_type() != w.scalar_type() ||
        !fewRowsDtype(x.scalar_type()) || !needsNoGradient({&x, &w}))
        return false;
    // The positions of a decoding step (a q/k norm, which sees each head as a row, only for a
    // few heads).
    const int64_t rows = x.numel() / w.size(0);
    return rows >= 1 && rows <= kDecodeRowsMax;
}

torch::Tensor fusedRmsNorm(const torch::Tensor& x, const torch::Tensor& w, double eps)
{
    const torch::Tensor xc = x.contiguous(), wc = w.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    const int64_t dim = w.size(0), rows = xc.numel() / dim;
    if (x.scalar_type() == torch::kFloat32)
        rmsNormRows(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(), rows, dim,
                    static_cast<float>(eps));
    else
        rmsNormRows(xc.data_ptr<c10::BFloat16>(), wc.data_ptr<c10::BFloat16>(),
                    y.data_ptr<c10::BFloat16>(), rows, dim, static_cast<float>(eps));
    return y;
}

bool ropeLayoutFits(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    if (!x.device().is_cpu() || !cos.defined() || !sin.defined() || !cos.device().is_cpu() ||
        !sin.device().is_cpu() || x.dim() != 4 || x.size(3) % 2 != 0 || x.stride(3) != 1 ||
        sin.scalar_type() != cos.scalar_type() || !cos.is_contiguous() || !sin.is_contiguous() ||
        cos.sizes() != sin.sizes())
        return false;
    const int64_t batch = x.size(0), seq = x.size(2), dim = x.size(3);
    const bool shared = cos.dim() == 2 && cos.size(0) == seq && cos.size(1) == dim;
    const bool perRow = cos.dim() == 4 && cos.size(0) == batch && cos.size(1) == 1 &&
                        cos.size(2) == seq && cos.size(3) == dim;
    return shared || perRow;
}

bool ropeTakesFused(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    if (!ropeLayoutFits(x, cos, sin) || !fewRowsDtype(x.scalar_type()) ||
        cos.scalar_type() != x.scalar_type() || !needsNoGradient({&x, &cos, &sin}))
        return false;
    const int64_t rows = x.size(0) * x.size(2);
    return rows >= 1 && rows <= kDecodeRowsMax;
}

torch::Tensor fusedRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    torch::Tensor out =
        torch::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    if (x.scalar_type() == torch::kFloat32)
        ropeRows<float>(x, cos, sin, out);
    else
        ropeRows<c10::BFloat16>(x, cos, sin, out);
    return out;
}

bool attentionTakesDecode(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& mask)
{
    if (!q.device().is_cpu() || !k.device().is_cpu() || !v.device().is_cpu() || q.dim() != 4 ||
        k.dim() != 4 || v.dim() != 4 || !fewRowsDtype(q.scalar_type()) ||
        k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type() ||
        !needsNoGradient({&q, &k, &v}))
        return false;
    const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), dim = q.size(3);
    const int64_t keys = k.size(2);
    if (k.sizes() != v.sizes() || k.size(0) != batch || k.size(3) != dim || dim == 0 ||
        k.size(1) == 0 || heads % k.size(1) != 0 || seq < 1 || seq > kDecodeQueriesMax ||
        keys < seq || q.stride(3) != 1 || k.stride(3) != 1 || v.stride(3) != 1)
        return false;
    if (!mask.defined())
        return true;
    if (mask.scalar_type() != torch::kBool || !mask.device().is_cpu() || mask.dim() != 4)
        return false;
    const int64_t full[4] = {batch, heads, seq, keys};
    for (int i = 0; i < 4; ++i)
        if (mask.size(i) != 1 && mask.size(i) != full[i])
            return false;
    return true;
}

void attendAll(const AttentionArgs& a, int64_t batch)
{
    // A (sequence, kv head) pair per task; pairs of less than about 64k multiply-adds together
    // stay on one thread (a batch of one), where the split would cost more than it saves.
    const int64_t tasks = batch * a.kvHeads;
    const int64_t work = std::max<int64_t>(1, a.keys * a.headDim * (a.heads / a.kvHeads) * a.seq);
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / work);
    // A head narrower than a vector register takes a narrower set (stories260k's head_dim is 8),
    // whose vectors it fills, rather than the scalar tail of a wider one.
    FewRowsIsa isa = fewRowsBestIsa();
    if (isa == FewRowsIsa::avx512 && a.headDim < 16)
        isa = FewRowsIsa::avx2;
    if (isa == FewRowsIsa::avx2 && a.headDim < 8)
        isa = FewRowsIsa::portable;
    at::parallel_for(0, tasks, grain, [&](int64_t t0, int64_t t1) {
        std::vector<float> scratch(static_cast<size_t>(attentionScratchFloats(a)));
        for (int64_t t = t0; t < t1; ++t)
            attendKvHead(a, t / a.kvHeads, t % a.kvHeads, scratch.data(), isa);
    });
}

torch::Tensor decodeAttention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& mask)
{
    const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), dim = q.size(3);
    const int64_t kvHeads = k.size(1), keys = k.size(2);
    torch::Tensor out = torch::empty({batch, seq, heads, dim}, q.options());
    AttentionArgs a;
    a.q = q.data_ptr();
    std::tie(a.qBatch, a.qHead, a.qSeq) = std::tuple(q.stride(0), q.stride(1), q.stride(2));
    a.k = k.data_ptr();
    std::tie(a.kBatch, a.kHead, a.kPos) = std::tuple(k.stride(0), k.stride(1), k.stride(2));
    a.v = v.data_ptr();
    std::tie(a.vBatch, a.vHead, a.vPos) = std::tuple(v.stride(0), v.stride(1), v.stride(2));
    a.out = out.data_ptr();
    std::tie(a.oBatch, a.oHead, a.oSeq) = std::tuple(out.stride(0), out.stride(2), out.stride(1));
    torch::Tensor allowed;
    if (mask.defined()) {
        allowed = mask.expand({batch, heads, seq, keys});  // broadcast dimensions get stride 0
        a.mask = allowed.data_ptr<bool>();
        a.mBatch = allowed.stride(0);
        a.mHead = allowed.stride(1);
        a.mSeq = allowed.stride(2);
        a.mPos = allowed.stride(3);
    }
    a.heads = heads;
    a.kvHeads = kvHeads;
    a.seq = seq;
    a.keys = keys;
    a.headDim = dim;
    a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim)));
    a.bf16 = q.scalar_type() == torch::kBFloat16;
    attendAll(a, batch);
    return out.transpose(1, 2);
}

}  // namespace tb
