// The fused decoding operators against the layers' LibTorch paths (see decode_ops_check.h): the
// same layer called on an input that needs a gradient, which takes LibTorch's operators, and the
// cached attention against scaled_dot_product_attention.
#include "model/decode_ops_check.h"

#include "model/causal_lm.h"
#include "model/decode_block.h"
#include "model/decode_ops.h"
#include "model/registry.h"
#include "model/rope_check_tables.h"

namespace tb {
namespace {

double maxAbs(const torch::Tensor& t)
{
    return t.to(torch::kFloat64).abs().max().item<double>();
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> checkRopeTables(int64_t batch, int64_t seq, int64_t dim,
                                                        bool perRow, torch::ScalarType dtype)
{
    const torch::Tensor invFreq =
        1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, torch::kFloat64) / double(dim));
    torch::Tensor positions = torch::arange(seq, torch::kFloat64) + 5.0;
    if (perRow)
        positions =
            positions.unsqueeze(0) + 3.0 * torch::arange(batch, torch::kFloat64).unsqueeze(1);
    torch::Tensor angles = positions.unsqueeze(-1) * invFreq;
    angles = torch::cat({angles, angles}, -1);
    if (perRow)
        angles = angles.unsqueeze(1);  // [batch, 1, seq, dim]
    return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

DecodeOpsCheck checkFusedRmsNorm(int64_t rows, int64_t dim, bool bf16, uint64_t seed)
{
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    RMSNorm norm(dim, 1e-5);
    {
        torch::NoGradGuard noGrad;
        norm->weight.normal_(1.0, 0.5);
    }
    norm->to(dtype);
    norm->weight.set_requires_grad(false);
    const torch::Tensor x = (3.0 * torch::randn({rows, dim})).to(dtype);

    DecodeOpsCheck check;
    torch::Tensor fused;
    {
        torch::InferenceMode inference;
        check.tookFused = rmsNormTakesFused(x, norm->weight);
        fused = norm->forward(x);
    }
    const torch::Tensor xg = x.clone().set_requires_grad(true);
    check.fusedWithGradient = rmsNormTakesFused(xg, norm->weight);
    const torch::Tensor reference = norm->forward(xg).detach();
    check.maxAbsDiff = maxAbs(fused.to(torch::kFloat64) - reference.to(torch::kFloat64));
    check.maxAbsOutput = maxAbs(reference);
    return check;
}

DecodeOpsCheck checkFusedRope(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool perRow,
                              bool bf16, uint64_t seed)
{
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor x = torch::randn({batch, seq, heads, dim}).to(dtype).transpose(1, 2);
    const auto [cos, sin] = checkRopeTables(batch, seq, dim, perRow, dtype);

    DecodeOpsCheck check;
    torch::Tensor fused;
    {
        torch::InferenceMode inference;
        check.tookFused = ropeTakesFused(x, cos, sin);
        fused = applyRope(x, cos, sin);
    }
    const torch::Tensor xg = x.detach().clone().set_requires_grad(true);
    check.fusedWithGradient = ropeTakesFused(xg, cos, sin);
    const torch::Tensor reference = applyRope(xg, cos, sin).detach();
    check.maxAbsDiff = maxAbs(fused.to(torch::kFloat64) - reference.to(torch::kFloat64));
    check.maxAbsOutput = maxAbs(reference);
    return check;
}

DecodeOpsCheck checkDecodeAttention(int64_t batch, int64_t heads, int64_t kvHeads, int64_t seq,
                                    int64_t keys, int64_t dim, bool padded, bool bf16,
                                    uint64_t seed)
{
    torch::manual_seed(seed);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const int64_t past = keys - seq;
    const torch::Tensor q =
        (2.0 * torch::randn({batch, seq, heads, dim})).to(dtype).transpose(1, 2);
    const torch::Tensor k = torch::randn({batch, kvHeads, keys, dim}).to(dtype);
    const torch::Tensor v = torch::randn({batch, kvHeads, keys, dim}).to(dtype);
    // The cache holds the past positions, with room to spare (cachedAttention reads a view).
    KVCache cache;
    cache.k = {torch::zeros({batch, kvHeads, keys + 7, dim}, dtype)};
    cache.v = {torch::zeros({batch, kvHeads, keys + 7, dim}, dtype)};
    cache.k[0].narrow(2, 0, past).copy_(k.narrow(2, 0, past));
    cache.v[0].narrow(2, 0, past).copy_(v.narrow(2, 0, past));
    cache.length = past;
    // [batch, 1, seq, keys]: query i at position past + i sees the real keys up to itself.
    const auto cols = torch::arange(keys).unsqueeze(0);
    const auto rows = (torch::arange(seq) + past).unsqueeze(1);
    torch::Tensor mask = (cols <= rows).unsqueeze(0).expand({batch, seq, keys});
    torch::Tensor padMask;
    if (padded) {
        const auto real = cols >= 3 * torch::arange(batch).unsqueeze(1);  // [batch, keys]
        padMask = real.unsqueeze(1).logical_and(cols <= rows).logical_or(cols == rows);
        mask = padMask;
        padMask = padMask.unsqueeze(1);
    }
    DecodeOpsCheck check;
    torch::Tensor fused;
    {
        torch::InferenceMode inference;
        check.tookFused = attentionTakesDecode(q, k, v, padMask);
        fused = cachedAttention(q, k.narrow(2, past, seq), v.narrow(2, past, seq), &cache, 0, past,
                                padMask);
    }
    const torch::Tensor qg = q.detach().clone().set_requires_grad(true);
    check.fusedWithGradient = attentionTakesDecode(qg, k, v, padMask);
    const int64_t groups = heads / kvHeads;
    const torch::Tensor reference = at::scaled_dot_product_attention(
        q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1), mask.unsqueeze(1));
    check.maxAbsDiff = maxAbs(fused.to(torch::kFloat64) - reference.to(torch::kFloat64));
    check.maxAbsOutput = maxAbs(reference);
    return check;
}

DecodeBlockCheck checkDecodeBlock(int64_t heads, int64_t kvHeads, bool bias, int lora, bool bf16,
                                  int steps, uint64_t seed)
{
    ModelConfig c;
    c.architecture = bias ? Architecture::Qwen2 : Architecture::Llama;
    c.modelType = bias ? "qwen2" : "llama";
    c.vocabSize = 512;
    c.hiddenSize = 256;
    c.intermediateSize = 512;
    c.numLayers = 2;
    c.numHeads = heads;
    c.numKvHeads = kvHeads;
    c.headDim = 32;
    c.maxPositions = 512;
    c.normEps = 1e-5;
    c.qkvBias = bias;
    c.tieWordEmbeddings = false;
    auto model = createCausalLM(c);
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    model->initRandom(seed, torch::kFloat32, torch::kCPU);
    torch::manual_seed(seed);
    {
        torch::NoGradGuard noGrad;
        // Weights of a trained model's scale (N(0, 0.02) leaves the logits nearly flat) and
        // non-zero biases and norm weights.
        for (auto& p : model->parameters())
            p.copy_(torch::randn_like(p) * (p.dim() == 2 ? 0.08 : 0.5) +
                    (p.dim() == 1 ? 1.0 : 0.0));
    }
    if (lora) {
        for (auto& [name, layer] : model->linearLayers()) {
            if (name.find("q_proj") == std::string::npos &&
                name.find("v_proj") == std::string::npos)
                continue;
            layer->addLora(4, 8.0, 0.0, false);
            torch::NoGradGuard noGrad;
            layer->lora_B->weight.normal_(0.0, 0.05);
            if (lora == 2)
                layer->mergeLora();
        }
    }
    model->to(dtype);
    model->eval();
    const bool before = onePassDecoding();
    // Both runs feed the tokens the one pass picks greedily (a near tie could otherwise send
    // them apart); `picked` gets each run's own greedy choices.
    std::vector<int64_t> fed;
    auto run = [&](bool onePass, std::vector<int64_t>& picked) {
        setOnePassDecoding(onePass);
        torch::InferenceMode guard;
        KVCache cache;
        std::vector<torch::Tensor> out;
        torch::Tensor last = model->forwardLast(
            torch::tensor({3, 141, 59, 265, 358}, torch::kInt64).unsqueeze(0), &cache);
        for (int s = 0; s < steps; ++s) {
            picked.push_back(last.to(torch::kFloat32).argmax(-1).item<int64_t>());
            if (onePass)
                fed.push_back(picked.back());
            last = model->forwardLast(
                torch::tensor({fed[static_cast<size_t>(s)]}, torch::kInt64).view({1, 1}), &cache);
            out.push_back(last.to(torch::kFloat64));
        }
        return torch::stack(out);
    };
    DecodeBlockCheck r;
    std::vector<int64_t> fusedTokens, moduleTokens;
    const int64_t stepsBefore = onePassDecodingSteps();
    const torch::Tensor fused = run(true, fusedTokens);
    r.onePassSteps = onePassDecodingSteps() - stepsBefore;
    const torch::Tensor modules = run(false, moduleTokens);
    setOnePassDecoding(before);
    r.maxAbsDiff = (fused - modules).abs().max().item<double>();
    r.maxAbsLogit = modules.abs().max().item<double>();
    r.sameTokens = fusedTokens == moduleTokens;
    return r;
}

}  // namespace tb
