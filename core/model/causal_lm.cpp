// Shared building blocks of the architectures: layers, weight loading, rotary embeddings, cached attention.
#include "model/causal_lm.h"

#include "model/safetensors.h"
#include "util/error.h"

#include <cmath>

namespace tb {

LinearImpl::LinearImpl(int64_t in, int64_t out, bool hasBias)
{
    weight = register_parameter("weight", torch::empty({out, in}));
    if (hasBias)
        bias = register_parameter("bias", torch::empty({out}));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x)
{
    return torch::nn::functional::linear(x, weight, bias);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double epsilon) : eps(epsilon)
{
    weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x)
{
    // As transformers does: statistics in fp32, scale applied after casting back to the input dtype.
    auto xf = x.to(torch::kFloat32);
    auto variance = xf.pow(2).mean(-1, /*keepdim=*/true);
    xf = xf * torch::rsqrt(variance + eps);
    return weight * xf.to(x.scalar_type());
}

LayerNormImpl::LayerNormImpl(int64_t dim, double epsilon) : eps(epsilon)
{
    weight = register_parameter("weight", torch::ones({dim}));
    bias = register_parameter("bias", torch::zeros({dim}));
}

torch::Tensor LayerNormImpl::forward(const torch::Tensor& x)
{
    return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps);
}

torch::nn::Embedding makeEmbedding(int64_t num, int64_t dim)
{
    return torch::nn::Embedding(torch::nn::EmbeddingOptions(num, dim)._weight(torch::empty({num, dim})));
}

namespace {

torch::ScalarType toScalarType(DType dtype)
{
    switch (dtype) {
    case DType::F32: return torch::kFloat32;
    case DType::F16: return torch::kFloat16;
    case DType::BF16: return torch::kBFloat16;
    default: break;
    }
    return torch::kFloat32;
}

} // namespace

void CausalLM::loadWeights(const Checkpoint& checkpoint, torch::Dtype dtype, const torch::Device& device)
{
    torch::NoGradGuard noGrad;
    for (auto& item : named_parameters(/*recurse=*/true)) {
        const std::string& name = item.key();
        torch::Tensor& param = item.value();
        const Checkpoint::Entry* entry = nullptr;
        std::string found;
        for (const auto& candidate : checkpointNames(name)) {
            entry = checkpoint.find(candidate);
            if (entry) {
                found = candidate;
                break;
            }
        }
        if (!entry)
            fail(checkpoint.location(), ": tensor '", name, "' is missing from the checkpoint");
        const TensorInfo& info = *entry->info;
        if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16)
            fail(entry->file->path(), ": tensor '", found, "' has dtype ", dtypeName(info.dtype),
                 " (supported: F32, F16, BF16)");
        std::vector<int64_t> expected = param.sizes().vec();
        if (info.shape != expected) {
            std::string got, want;
            for (auto d : info.shape)
                got += (got.empty() ? "" : ", ") + std::to_string(d);
            for (auto d : expected)
                want += (want.empty() ? "" : ", ") + std::to_string(d);
            fail(entry->file->path(), ": tensor '", found, "' has shape [", got, "] but the config implies [",
                 want, "]");
        }
        // from_blob views the mapped bytes; .to() copies into memory we own in the requested dtype.
        auto view = torch::from_blob(const_cast<uint8_t*>(entry->file->data(info)), info.shape,
                                     torch::TensorOptions().dtype(toScalarType(info.dtype)));
        auto owned = view.to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
        param.set_data(owned);
    }
}

void CausalLM::initRandom(uint64_t seed, torch::Dtype dtype, const torch::Device& device)
{
    torch::NoGradGuard noGrad;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (auto& item : named_parameters(true)) {
        const std::string& name = item.key();
        torch::Tensor& param = item.value();
        torch::Tensor value;
        const bool isNorm = name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0)
            value = torch::zeros(param.sizes());
        else if (isNorm)
            value = torch::ones(param.sizes());
        else
            value = at::normal(0.0, 0.02, param.sizes(), gen);
        param.set_data(value.to(device, dtype));
    }
}

torch::Tensor ropeInvFreq(const ModelConfig& c)
{
    const int64_t dim = c.headDim;
    auto exponents = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
    auto invFreq = 1.0 / torch::pow(torch::tensor(c.ropeTheta, torch::kFloat32), exponents);
    const auto& s = c.ropeScaling;
    if (s.type == "linear") {
        invFreq = invFreq / s.factor;
    } else if (s.type == "llama3") {
        const double lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
        const double highWavelen = s.originalMaxPositions / s.highFreqFactor;
        auto wavelen = 2.0 * M_PI / invFreq;
        auto scaled = torch::where(wavelen > lowWavelen, invFreq / s.factor, invFreq);
        auto smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        auto smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
        auto medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
        invFreq = torch::where(medium, smoothed, scaled);
    }
    return invFreq;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    const int64_t half = x.size(-1) / 2;
    auto x1 = x.narrow(-1, 0, half);
    auto x2 = x.narrow(-1, half, half);
    auto rotated = torch::cat({-x2, x1}, -1);
    return x * cos + rotated * sin;
}

torch::Tensor cachedAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              KVCache* cache, size_t layer, int64_t pastLength)
{
    const int64_t seq = q.size(2);
    torch::Tensor keys = k;
    torch::Tensor values = v;
    if (cache) {
        if (cache->k.size() <= layer) {
            cache->k.resize(layer + 1);
            cache->v.resize(layer + 1);
        }
        auto& ck = cache->k[layer];
        auto& cv = cache->v[layer];
        const int64_t needed = pastLength + seq;
        if (!ck.defined() || ck.size(2) < needed) {
            // Grow geometrically so decoding appends in amortised O(1).
            int64_t capacity = std::max<int64_t>(needed, ck.defined() ? ck.size(2) * 2 : 256);
            auto nk = torch::empty({k.size(0), k.size(1), capacity, k.size(3)}, k.options());
            auto nv = torch::empty({v.size(0), v.size(1), capacity, v.size(3)}, v.options());
            if (pastLength > 0) {
                nk.narrow(2, 0, pastLength).copy_(ck.narrow(2, 0, pastLength));
                nv.narrow(2, 0, pastLength).copy_(cv.narrow(2, 0, pastLength));
            }
            ck = nk;
            cv = nv;
        }
        ck.narrow(2, pastLength, seq).copy_(k);
        cv.narrow(2, pastLength, seq).copy_(v);
        keys = ck.narrow(2, 0, needed);
        values = cv.narrow(2, 0, needed);
    } else {
        pastLength = 0;
    }

    // Grouped-query attention: repeat each kv head for its group of query heads.
    const int64_t groups = q.size(1) / keys.size(1);
    if (groups > 1) {
        keys = keys.repeat_interleave(groups, 1);
        values = values.repeat_interleave(groups, 1);
    }
    if (pastLength == 0)
        return at::scaled_dot_product_attention(q, keys, values, {}, 0.0, /*is_causal=*/seq > 1);
    if (seq == 1)
        return at::scaled_dot_product_attention(q, keys, values, {}, 0.0, false);
    // Chunk after a prefix: query i sees keys 0 .. pastLength + i (bottom-right aligned causal mask).
    auto rows = torch::arange(seq, torch::TensorOptions().device(q.device())).unsqueeze(1) + pastLength;
    auto cols = torch::arange(pastLength + seq, torch::TensorOptions().device(q.device())).unsqueeze(0);
    auto mask = cols <= rows;
    return at::scaled_dot_product_attention(q, keys, values, mask, 0.0, false);
}

} // namespace tb
