// Chunked cross-entropy as a custom autograd function: forward keeps one fp32 logits chunk at a
// time, backward recomputes each chunk's logits and turns them into (softmax - onehot) in place.
// The fused head loss: forward forms the gradients from each chunk's logits; backward scales them.
#include "train/chunked_loss.h"

#include "memory/estimator.h"
#include "model/causal_lm.h"
#include "train/loss_rows_kernel.h"
#include "util/error.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <vector>

namespace tb {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// logits: [n, vocab] fp32 contiguous on the CPU, made softmax - onehot(labels) in place (labels:
// [n, 1] int64 in range); returns the sum of the rows' cross-entropies, summed in row order.
double softmaxMinusOnehot(torch::Tensor& logits, const torch::Tensor& labels)
{
    const int64_t n = logits.size(0), vocab = logits.size(1);
    const torch::Tensor lab = labels.reshape({n}).contiguous();
    std::vector<double> rowLoss(static_cast<size_t>(n));
    const int64_t* l = lab.data_ptr<int64_t>();
    if (logits.scalar_type() == torch::kBFloat16) {
        auto* x = reinterpret_cast<uint16_t*>(logits.data_ptr<at::BFloat16>());
        at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
            std::vector<float> row(static_cast<size_t>(vocab));
            softmaxMinusOnehotRowsBf16(x, vocab, vocab, l, begin, end, rowLoss.data(), row.data());
        });
    } else {
        float* x = logits.data_ptr<float>();
        at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
            softmaxMinusOnehotRows(x, vocab, vocab, l, begin, end, rowLoss.data());
        });
    }
    double sum = 0.0;
    for (double v : rowLoss)
        sum += v;
    return sum;
}

// [n, vocab] = h w^T (h: [n, hidden], w: [vocab, hidden], one dtype). On the CPU in fp32, in
// blocks of 512 columns of the vocabulary written into one buffer: MKL's product with the weight
// transposed and a long vocabulary stays well below its peak on two threads, into a fresh buffer
// as here (GPT-2's head, n = 256-512: 108-113 GFLOP/s), while blocks whose output stays in cache
// run at 135-150 (the random 26.5M Llama's: 101-131 -> 122-142). Each element is the same dot
// product either way. bf16 products run near their peak unblocked. docs/benchmarks.md,
// "2026-12-05".
constexpr int64_t kHeadLogitColumns = 512;

torch::Tensor headLogits(const torch::Tensor& h, const torch::Tensor& w)
{
    const int64_t vocab = w.size(0);
    if (!h.is_cpu() || h.scalar_type() != torch::kFloat || vocab <= 2 * kHeadLogitColumns)
        return h.mm(w.t());
    torch::Tensor out = torch::empty({h.size(0), vocab}, h.options());
    for (int64_t c = 0; c < vocab; c += kHeadLogitColumns) {
        const int64_t e = std::min(kHeadLogitColumns, vocab - c);
        torch::Tensor columns = out.narrow(1, c, e);  // rows strided by vocab: MKL's ldc
        at::mm_out(columns, h, w.narrow(0, c, e).t());
    }
    return out;
}

// Only the loss-carrying tokens are computed: their indices (validIdx: [valid] int64) are found
// once, and each chunk gathers its rows of hidden, so prompt tokens masked with -100 cost nothing.
struct ChunkedCrossEntropyFn : public torch::autograd::Function<ChunkedCrossEntropyFn> {
    // hidden: [tokens, hidden], weight: [vocab, hidden], labels: [tokens]; rowIds [k] and rowDelta
    // [k, hidden], k = 0 for none (checked by the caller).
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden,
                                 const torch::Tensor& weight, const torch::Tensor& labels,
                                 int64_t chunkTokens, const torch::Tensor& rowIds,
                                 const torch::Tensor& rowDelta)
    {
        const auto fp32 = hidden.options().dtype(torch::kFloat);
        const torch::Tensor validIdx = labels.ne(kIgnoreIndex).nonzero().squeeze(1);  // [valid]
        const int64_t valid = validIdx.size(0);
        const torch::Tensor weightF = weight.to(torch::kFloat);  // [vocab, hidden]; no copy if fp32
        const bool rows = rowIds.numel() > 0;
        const torch::Tensor deltaF = rowDelta.to(torch::kFloat);
        torch::Tensor lse = torch::empty({valid}, fp32);  // [valid] logsumexp per token
        torch::Tensor loss = torch::zeros({}, fp32);
        for (int64_t start = 0; start < valid; start += chunkTokens) {
            const int64_t n = std::min(chunkTokens, valid - start);
            const torch::Tensor idx = validIdx.narrow(0, start, n);                  // [n]
            const torch::Tensor hC = hidden.index_select(0, idx).to(torch::kFloat);  // [n, hidden]
            const torch::Tensor lab = labels.index_select(0, idx).unsqueeze(1);      // [n, 1]
            torch::Tensor logits = headLogits(hC, weightF);                          // [n, vocab]
            if (rows)
                logits.index_add_(1, rowIds, hC.matmul(deltaF.t()));        // the rows' columns
            const torch::Tensor target = logits.gather(1, lab).squeeze(1);  // [n]
            // logsumexp in place, so the chunk needs one [n, vocab] buffer rather than three.
            const torch::Tensor rowMax = std::get<0>(logits.max(1, /*keepdim=*/true));  // [n, 1]
            logits.sub_(rowMax).exp_();
            torch::Tensor lseC = logits.sum(1).log_().add_(rowMax.squeeze(1));  // [n]
            lse.narrow(0, start, n).copy_(lseC);
            loss.add_((lseC - target).sum());
        }
        ctx->save_for_backward({hidden, weight, labels, validIdx, lse, rowIds, rowDelta});
        ctx->saved_data["chunkTokens"] = chunkTokens;
        return loss;
    }

    // gradOut[0]: [], d(objective)/d(loss). Returns grads for (hidden, weight, labels, chunk,
    // rowIds, rowDelta).
    static variable_list backward(AutogradContext* ctx, variable_list gradOut)
    {
        const variable_list saved = ctx->get_saved_variables();
        const torch::Tensor& hidden = saved[0];
        const torch::Tensor& weight = saved[1];
        const torch::Tensor& labels = saved[2];
        const torch::Tensor& validIdx = saved[3];
        const torch::Tensor& lse = saved[4];
        const torch::Tensor& rowIds = saved[5];
        const torch::Tensor& rowDelta = saved[6];
        const int64_t chunkTokens = ctx->saved_data["chunkTokens"].toInt();
        const bool wantHidden = ctx->needs_input_grad(0);
        const bool wantWeight = ctx->needs_input_grad(1);
        const bool rows = rowIds.numel() > 0;
        const bool wantDelta = rows && ctx->needs_input_grad(4);  // tensor inputs only
        const torch::Tensor go = gradOut[0].to(torch::kFloat);    // [] on the inputs' device

        torch::Tensor gradHidden, gradWeight;
        if (wantHidden)  // rows of ignored tokens stay 0
            gradHidden = torch::zeros_like(hidden, torch::MemoryFormat::Contiguous);
        torch::Tensor gradWeightF;  // [vocab, hidden] fp32 accumulator across chunks
        if (wantWeight)
            gradWeightF = torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat));
        torch::Tensor gradDeltaF;  // [k, hidden] fp32
        if (wantDelta)
            gradDeltaF = torch::zeros(rowDelta.sizes(), rowDelta.options().dtype(torch::kFloat));
        if (!wantHidden && !wantWeight && !wantDelta)
            return {torch::Tensor(), torch::Tensor(), torch::Tensor(),
                    torch::Tensor(), torch::Tensor(), torch::Tensor()};

        const torch::Tensor weightF = weight.to(torch::kFloat);
        const torch::Tensor deltaF = rowDelta.to(torch::kFloat);
        const int64_t valid = validIdx.size(0);
        for (int64_t start = 0; start < valid; start += chunkTokens) {
            const int64_t n = std::min(chunkTokens, valid - start);
            const torch::Tensor idx = validIdx.narrow(0, start, n);
            const torch::Tensor hC = hidden.index_select(0, idx).to(torch::kFloat);  // [n, hidden]
            const torch::Tensor lab = labels.index_select(0, idx).unsqueeze(1);      // [n, 1]
            // g = softmax(logits) - onehot(label): [n, vocab], built in the logits buffer.
            torch::Tensor g = headLogits(hC, weightF);
            if (rows)
                g.index_add_(1, rowIds, hC.matmul(deltaF.t()));
            g.sub_(lse.narrow(0, start, n).unsqueeze(1)).exp_();
            g.scatter_add_(1, lab, torch::full({n, 1}, -1.0f, g.options()));
            // The rows' columns of g, [n, k]: their share of the hidden gradient, and the delta's.
            const torch::Tensor gRows = rows ? g.index_select(1, rowIds) : torch::Tensor();
            // grad_output scales the thin [n, hidden] factors rather than the [n, vocab] one.
            if (wantHidden) {
                torch::Tensor gH = g.matmul(weightF);  // [n, hidden]
                if (gRows.defined())
                    gH.addmm_(gRows, deltaF);
                gradHidden.index_copy_(0, idx, gH.mul_(go).to(hidden.scalar_type()));
            }
            hC.mul_(go);
            if (wantWeight)
                gradWeightF.addmm_(g.t(), hC);  // += g^T @ hC: [vocab, hidden]
            if (wantDelta)
                gradDeltaF.addmm_(gRows.t(), hC);  // += g_rows^T @ hC: [k, hidden]
        }
        if (wantWeight)
            gradWeight = gradWeightF.to(weight.scalar_type());
        torch::Tensor gradDelta = wantDelta ? gradDeltaF.to(rowDelta.scalar_type()) : gradDeltaF;
        return {gradHidden,      gradWeight,      torch::Tensor(),
                torch::Tensor(), torch::Tensor(), gradDelta};
    }
};

// The gradients of the scaled sum are formed in forward (grad_output only scales them in
// backward): per chunk, logits = h W^T in the compute dtype, their fp32 log-softmax gives the loss
// and, exponentiated in place, softmax; minus the one-hot labels that is d(sum)/d(logits), and
// two products turn it into the gradients of h and W (and of the trainable rows).
struct FusedHeadCrossEntropyFn : public torch::autograd::Function<FusedHeadCrossEntropyFn> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden,
                                 const torch::Tensor& weight, const torch::Tensor& labels,
                                 double scale, int64_t chunkTokens, const torch::Tensor& rowIds,
                                 const torch::Tensor& rowDelta, int64_t computeType)
    {
        const auto compute = static_cast<torch::ScalarType>(computeType);
        // The casts below are the ones autocast would make; it stays off inside.
        AutocastGuard noAutocast(hidden.device().type(), false, at::kBFloat16);
        const bool rows = rowIds.numel() > 0;
        const bool wantHidden = hidden.requires_grad();
        const bool wantWeight = weight.requires_grad();
        const bool wantDelta = rows && rowDelta.requires_grad();
        const bool wantAny = wantHidden || wantWeight || wantDelta;
        const int64_t tokens = hidden.size(0);
        const torch::Tensor validIdx = labels.ne(kIgnoreIndex).nonzero().squeeze(1);  // [valid]
        const int64_t valid = validIdx.size(0);
        const bool all = valid == tokens;            // chunks are then slices, not gathers
        const torch::Tensor w = weight.to(compute);  // [vocab, hidden]; no copy when it is so
        const torch::Tensor d = rows ? rowDelta.to(compute) : torch::Tensor();
        const auto fp32 = hidden.options().dtype(torch::kFloat);
        torch::Tensor loss = torch::zeros({}, fp32);
        torch::Tensor gradHidden, gradWeight, gradDelta;
        if (wantHidden)  // rows of ignored tokens stay 0
            gradHidden = all ? torch::empty_like(hidden, torch::MemoryFormat::Contiguous)
                             : torch::zeros_like(hidden, torch::MemoryFormat::Contiguous);
        for (int64_t start = 0; start < valid; start += chunkTokens) {
            const int64_t n = std::min(chunkTokens, valid - start);
            const torch::Tensor idx = validIdx.narrow(0, start, n);
            const torch::Tensor h =
                (all ? hidden.narrow(0, start, n) : hidden.index_select(0, idx)).to(compute);
            const torch::Tensor lab =
                (all ? labels.narrow(0, start, n) : labels.index_select(0, idx)).unsqueeze(1);
            torch::Tensor logits = headLogits(h, w);  // [n, vocab]
            if (rows)
                logits.index_add_(1, rowIds, h.mm(d.t()));
            // The log-softmax in place on the fp32 logits (a copy only of 16-bit ones): one
            // [n, vocab] fp32 buffer where log_softmax would add a second. logsumexp's own
            // temporaries are [rows, vocab]: a few rows at a time keeps them small (the
            // estimator's kFusedLossLogsumexpRows).
            torch::Tensor g;
            if (logits.is_cpu() && logits.is_contiguous() &&
                logits.scalar_type() == torch::kBFloat16) {
                // bf16 logits on the CPU: the kernel widens each row in cache and writes softmax -
                // onehot back in bf16, the numbers of the fp32 rows below, without them.
                g = std::move(logits);
                loss.add_(softmaxMinusOnehot(g, lab));
            } else {
                torch::Tensor logp = logits.to(torch::kFloat);  // [n, vocab]
                logits = torch::Tensor();
                if (logp.is_cpu() && logp.is_contiguous()) {
                    // On the CPU one kernel turns each row into softmax - onehot and gives its
                    // loss.
                    g = std::move(logp);
                    loss.add_(softmaxMinusOnehot(g, lab));
                } else {
                    for (int64_t r = 0; r < n; r += kFusedLossLogsumexpRows) {
                        torch::Tensor part =
                            logp.narrow(0, r, std::min(kFusedLossLogsumexpRows, n - r));
                        part.sub_(part.logsumexp(1, true));
                    }
                    loss.sub_(logp.gather(1, lab).sum());
                    if (!wantAny)
                        continue;
                    g = std::move(logp);
                    g.exp_();  // softmax
                    g.scatter_add_(1, lab, torch::full({n, 1}, -1.0f, g.options()));
                }
            }
            if (!wantAny)
                continue;
            const torch::Tensor gc = g.to(compute);
            g = torch::Tensor();
            // fp16 cannot hold the products with the 1/loss-tokens scale (from about 10^4 loss
            // tokens a step they fall among its subnormals or to 0, before the loss scaler's
            // factor arrives in backward): under fp16 they are formed in fp32.
            const bool wide = compute == torch::kHalf;
            const torch::Tensor gRows = rows ? gc.index_select(1, rowIds) : torch::Tensor();
            if (wantHidden) {
                torch::Tensor gH = gc.mm(w);  // [n, hidden]
                if (gRows.defined())
                    gH.addmm_(gRows, d);
                if (wide)
                    gH = gH.to(torch::kFloat);
                gH.mul_(scale);
                if (all)
                    gradHidden.narrow(0, start, n).copy_(gH);
                else
                    gradHidden.index_copy_(0, idx, gH.to(hidden.scalar_type()));
            }
            // the scale on the thin factor
            const torch::Tensor hs = wide ? h.to(torch::kFloat).mul_(scale) : h.mul(scale);
            // sum += g^T @ hs, in fp32: [vocab, hidden] for the weight, [k, hidden] for the rows
            auto accumulate = [&hs, wide](torch::Tensor& sum, const torch::Tensor& gT) {
                torch::Tensor part = (wide ? gT.to(torch::kFloat) : gT).mm(hs);
                if (sum.defined())
                    sum.add_(part);
                else
                    sum = part.to(torch::kFloat);
            };
            if (wantWeight)
                accumulate(gradWeight, gc.t());
            if (wantDelta)
                accumulate(gradDelta, gRows.t());
        }
        if (wantWeight && !gradWeight.defined())  // every label ignored
            gradWeight = torch::zeros(weight.sizes(), fp32);
        if (wantDelta && !gradDelta.defined())
            gradDelta = torch::zeros(rowDelta.sizes(), fp32);
        ctx->saved_data["hidden"] = gradHidden;
        ctx->saved_data["weight"] = wantWeight ? gradWeight.to(weight.scalar_type()) : gradWeight;
        ctx->saved_data["delta"] = wantDelta ? gradDelta.to(rowDelta.scalar_type()) : gradDelta;
        return loss.mul_(scale);
    }

    // gradOut[0]: [], d(objective)/d(loss). Returns grads for (hidden, weight, labels, scale,
    // chunk, rowIds, rowDelta, computeType).
    static variable_list backward(AutogradContext* ctx, variable_list gradOut)
    {
        const torch::Tensor go = gradOut[0];
        const bool one = go.device().is_cpu() && go.item<double>() == 1.0;
        auto take = [&](const char* key) {
            torch::Tensor t = ctx->saved_data[key].toTensor();
            ctx->saved_data.erase(key);
            if (t.defined() && !one)
                t.mul_(go.to(t.scalar_type()));
            return t;
        };
        torch::Tensor gh = take("hidden"), gw = take("weight"), gd = take("delta");
        return {gh,
                gw,
                torch::Tensor(),
                torch::Tensor(),
                torch::Tensor(),
                torch::Tensor(),
                gd,
                torch::Tensor()};
    }
};

}  // namespace

namespace {

// The checks both losses make (name: the function, for the message); returns the rows as tensors
// (empty ones for none: a custom function's tensor arguments must be defined).
std::pair<torch::Tensor, torch::Tensor> checkHeadLoss(const char* name, const torch::Tensor& hidden,
                                                      const torch::Tensor& weight,
                                                      const torch::Tensor& labels,
                                                      int64_t chunkTokens, const HeadRows& rows)
{
    if (!hidden.defined() || !weight.defined() || !labels.defined())
        fail(name, ": hidden, weight and labels must all be defined tensors");
    if (hidden.dim() != 2)
        fail(name, ": hidden must be [tokens, hidden], got ", hidden.sizes());
    if (weight.dim() != 2 || weight.size(1) != hidden.size(1))
        fail(name, ": weight must be [vocab, ", hidden.size(1), "], got ", weight.sizes());
    if (labels.dim() != 1 || labels.size(0) != hidden.size(0))
        fail(name, ": labels must be [", hidden.size(0), "], got ", labels.sizes());
    if (!hidden.is_floating_point() || !weight.is_floating_point())
        fail(name, ": hidden (", hidden.scalar_type(), ") and weight (", weight.scalar_type(),
             ") must be floating point");
    if (labels.scalar_type() != torch::kLong)
        fail(name, ": labels must be int64, got ", labels.scalar_type());
    if (weight.device() != hidden.device() || labels.device() != hidden.device())
        fail(name, ": hidden (", hidden.device(), "), weight (", weight.device(), ") and labels (",
             labels.device(), ") must be on one device");
    if (chunkTokens < 1)
        fail(name, ": chunkTokens must be >= 1, got ", chunkTokens);
    if (rows.ids.defined() != rows.delta.defined() ||
        (rows.ids.defined() &&
         (rows.ids.dim() != 1 || rows.ids.scalar_type() != torch::kLong || rows.delta.dim() != 2 ||
          rows.delta.size(0) != rows.ids.size(0) || rows.delta.size(1) != hidden.size(1) ||
          rows.ids.device() != hidden.device() || rows.delta.device() != hidden.device())))
        fail(name, ": rows must be ids [k] int64 and delta [k, ", hidden.size(1),
             "] on the hidden states' device, or neither");
    // An out-of-range label would index past the logits row (a device-side assert on CUDA).
    const int64_t vocab = weight.size(0);
    const torch::Tensor bad =
        labels.ne(kIgnoreIndex).logical_and(labels.lt(0).logical_or(labels.ge(vocab)));
    if (bad.any().item<bool>()) {
        const int64_t at = bad.nonzero()[0][0].item<int64_t>();
        fail(name, ": label ", labels[at].item<int64_t>(), " at token ", at, " is outside [0, ",
             vocab, ") and is not ", kIgnoreIndex);
    }
    return {rows.ids.defined() ? rows.ids : torch::empty({0}, labels.options().dtype(torch::kLong)),
            rows.delta.defined() ? rows.delta
                                 : torch::empty({0, hidden.size(1)}, hidden.options())};
}

}  // namespace

torch::Tensor chunkedCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                  const torch::Tensor& labels, int64_t chunkTokens,
                                  const HeadRows& rows)
{
    const auto [ids, delta] =
        checkHeadLoss("chunkedCrossEntropy", hidden, weight, labels, chunkTokens, rows);
    return ChunkedCrossEntropyFn::apply(hidden, weight, labels, chunkTokens, ids, delta);
}

torch::Tensor fusedHeadCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& labels, double scale, int64_t chunkTokens,
                                    const HeadRows& rows)
{
    if (chunkTokens == 0)  // the estimator's chunk (memory/estimator.h)
        chunkTokens =
            fusedLossChunkTokens(weight.defined() && weight.dim() == 2 ? weight.size(0) : 1);
    const auto [ids, delta] =
        checkHeadLoss("fusedHeadCrossEntropy", hidden, weight, labels, chunkTokens, rows);
    const at::DeviceType type = hidden.device().type();
    const torch::ScalarType compute = at::autocast::is_autocast_enabled(type)
                                          ? at::autocast::get_autocast_dtype(type)
                                          : torch::kFloat;
    if (!torch::GradMode::is_enabled())  // nothing will ask for gradients
        return chunkedCrossEntropy(hidden, weight, labels, chunkTokens, rows) * scale;
    return FusedHeadCrossEntropyFn::apply(hidden, weight, labels, scale, chunkTokens, ids, delta,
                                          static_cast<int64_t>(compute));
}

}  // namespace tb
