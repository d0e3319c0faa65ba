// The shared forward pass (soft prompt, packed rows' block-diagonal mask, blocks with optional
// checkpointing, head), weight loading,
// rotary embeddings and cached attention.
#include "model/causal_lm.h"

#include "model/decode_ops.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "model/stacked_linears.h"
#include "model/train_ops.h"
#include "util/error.h"

#include <ATen/autocast_mode.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <unordered_map>

namespace tb {

namespace {

// A custom autograd function takes no undefined tensors: an absent table or mask travels as an
// empty tensor (a real one is never empty).
torch::Tensor orEmpty(const torch::Tensor& t)
{
    return t.defined() ? t : torch::empty({0});
}
torch::Tensor orUndefined(const torch::Tensor& t)
{
    return t.numel() > 0 ? t : torch::Tensor();
}

// Block activation checkpointing: forward runs without storing activations; backward recomputes the
// block with the same RNG state (dropout) and back-propagates through it (the reentrant scheme).
class BlockCheckpoint : public torch::autograd::Function<BlockCheckpoint> {
public:
    // dummy: a tensor that requires grad, so the output does even when x does not (frozen
    // embeddings), and backward runs to reach the block's trainable parameters.
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                                 torch::Tensor /*dummy*/, int64_t blockAddress, torch::Tensor cos,
                                 torch::Tensor sin, torch::Tensor mask)
    {
        auto* block = reinterpret_cast<BlockBase*>(static_cast<intptr_t>(blockAddress));
        ctx->saved_data["block"] = blockAddress;
        ctx->saved_data["rng"] = at::globalContext().defaultGenerator(x.device()).get_state();
        // backward() runs after the caller's autocast scope has ended: remember it for the
        // recompute.
        ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(x.device().type());
        ctx->saved_data["autocast_dtype"] =
            static_cast<int64_t>(at::autocast::get_autocast_dtype(x.device().type()));
        ctx->save_for_backward({x, cos, sin, mask});  // cos, sin, mask may be empty (absent)
        return block->forward(
            x, BlockContext{orUndefined(cos), orUndefined(sin), orUndefined(mask)}, nullptr, 0, 0);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list gradOut)
    {
        auto saved = ctx->get_saved_variables();
        auto* block =
            reinterpret_cast<BlockBase*>(static_cast<intptr_t>(ctx->saved_data["block"].toInt()));
        auto generator = at::globalContext().defaultGenerator(saved[0].device());
        auto current = generator.get_state();
        generator.set_state(ctx->saved_data["rng"].toTensor());
        torch::Tensor input = saved[0].detach().requires_grad_(true);
        torch::Tensor output;
        {
            torch::AutoGradMode enable(true);
            AutocastGuard autocast(
                input.device().type(), ctx->saved_data["autocast"].toBool(),
                static_cast<at::ScalarType>(ctx->saved_data["autocast_dtype"].toInt()));
            output = block->forward(
                input,
                BlockContext{orUndefined(saved[1]), orUndefined(saved[2]), orUndefined(saved[3])},
                nullptr, 0, 0);
        }
        generator.set_state(current);
        torch::autograd::backward({output}, {gradOut[0]});
        return {input.grad(),    torch::Tensor(), torch::Tensor(),
                torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

AutocastGuard::AutocastGuard(at::DeviceType type, bool enabled, at::ScalarType dtype)
    : m_type(type), m_enabled(enabled), m_prevEnabled(at::autocast::is_autocast_enabled(type)),
      m_prevDtype(at::autocast::get_autocast_dtype(type))
{
    at::autocast::set_autocast_enabled(type, enabled);
    at::autocast::set_autocast_dtype(type, dtype);
}

AutocastGuard::~AutocastGuard()
{
    at::autocast::set_autocast_enabled(m_type, m_prevEnabled);
    at::autocast::set_autocast_dtype(m_type, m_prevDtype);
    if (m_enabled)
        at::autocast::clear_cache();
}

torch::Tensor tensorView(const SafetensorsFile& file, const TensorInfo& info)
{
    torch::ScalarType type = torch::kFloat32;
    if (info.dtype == DType::F16)
        type = torch::kFloat16;
    else if (info.dtype == DType::BF16)
        type = torch::kBFloat16;
    else if (info.dtype != DType::F32)
        fail(file.path(), ": tensor '", info.name, "' has dtype ", dtypeName(info.dtype),
             " (supported: F32, F16, BF16)");
    return torch::from_blob(const_cast<uint8_t*>(file.data(info)), info.shape,
                            torch::TensorOptions().dtype(type));
}

namespace {

// Packed rows: a query attends to the keys before it (causal) in its own segment only, so each
// example of a row sees nothing of the others. segments: [batch, seq] -> [batch, 1, seq, seq] bool.
torch::Tensor segmentMask(const torch::Tensor& segments)
{
    const int64_t seq = segments.size(1);
    auto causal = torch::ones({seq, seq},
                              torch::TensorOptions().dtype(torch::kBool).device(segments.device()))
                      .tril();
    return segments.unsqueeze(2).eq(segments.unsqueeze(1)).logical_and(causal).unsqueeze(1);
}

// A sliding window of `window` positions over `mask` ([batch, 1, seq, past + seq] bool;
// undefined: causal): a query keeps the keys less than `window` positions before it. Positions are
// the cache's columns, or, for packed rows and rows with padding, each row's own: `keyPositions`
// [batch, past + seq] (a soft prompt before a row's padding is counted up to its text, as when the
// row runs alone).
torch::Tensor slidingWindowMask(const torch::Tensor& mask, int64_t past, int64_t seq,
                                int64_t window, const torch::Device& device,
                                const torch::Tensor& keyPositions)
{
    torch::Tensor band;
    if (keyPositions.defined()) {
        const torch::Tensor queries = keyPositions.narrow(1, past, seq);
        band = (keyPositions.unsqueeze(1) > queries.unsqueeze(2) - window).unsqueeze(1);
    } else {
        const auto steps = torch::TensorOptions().dtype(torch::kInt64).device(device);
        auto cols = torch::arange(past + seq, steps).unsqueeze(0);
        auto rows = torch::arange(past, past + seq, steps).unsqueeze(1);
        band = (cols > rows - window).logical_and(cols <= rows).unsqueeze(0).unsqueeze(0);
    }
    return mask.defined() ? mask.logical_and(band) : band;
}

// The dtype training's attention sees its queries in (autocast's, else the hidden states'; fp32
// where bf16 attention on the CPU runs widened, cachedAttention), for a mask it keeps as is.
torch::ScalarType trainingMaskDtype(const torch::Tensor& h)
{
    const auto type = h.device().type();
    const torch::ScalarType dtype = at::autocast::is_autocast_enabled(type)
                                        ? at::autocast::get_autocast_dtype(type)
                                        : h.scalar_type();
    const bool widened = dtype == torch::kBFloat16 && h.device().is_cpu() &&
                         h.size(1) < kFlashAttentionBf16MinQueries;
    return widened ? torch::kFloat : dtype;
}

// A bool mask (true = may attend) as the additive one attention forms from it: 0 or -inf.
torch::Tensor additiveMask(const torch::Tensor& mask, torch::ScalarType dtype)
{
    return torch::zeros(mask.sizes(), mask.options().dtype(dtype))
        .masked_fill_(mask.logical_not(), -std::numeric_limits<float>::infinity());
}

// Rows with padding: extends the cache's record of real positions (KVCache::valid) by this call's
// `seq` positions (a soft prompt's `virtualTokens` first, all real; then ids' positions, `real` or
// all real when undefined) and returns each row's positions (its real positions before, from 0;
// padding gets 0) [batch, seq] int64 and the attention mask [batch, 1, seq, past + seq]: a query
// sees the real keys up to itself, and itself (a padding query, which no one reads, needs a key to
// stay finite).
std::pair<torch::Tensor, torch::Tensor> paddedRows(KVCache& cache, const torch::Tensor& real,
                                                   int64_t batch, int64_t seq,
                                                   int64_t virtualTokens,
                                                   const torch::Device& device)
{
    const int64_t past = cache.length;
    const auto flags = torch::TensorOptions().dtype(torch::kBool).device(device);
    torch::Tensor fresh = real.defined() ? real.to(device, torch::kBool)
                                         : torch::ones({batch, seq - virtualTokens}, flags);
    if (fresh.dim() != 2 || fresh.size(0) != batch || fresh.size(1) != seq - virtualTokens)
        fail("rows with padding: the real-token mask must have the shape of ids [batch, seq]");
    if (virtualTokens > 0)
        fresh = torch::cat({torch::ones({batch, virtualTokens}, flags), fresh}, 1);
    torch::Tensor all = fresh;
    if (past > 0)
        all = torch::cat(
            {cache.valid.defined() ? cache.valid : torch::ones({batch, past}, flags), fresh}, 1);
    cache.valid = all;
    auto positions = (all.cumsum(1) - 1).clamp_min(0).narrow(1, past, seq);  // int64
    const auto steps = torch::TensorOptions().dtype(torch::kInt64).device(device);
    auto cols = torch::arange(past + seq, steps).unsqueeze(0);
    auto rows = torch::arange(past, past + seq, steps).unsqueeze(1);
    auto mask = all.unsqueeze(1).logical_and(cols <= rows).logical_or(cols == rows);
    return {positions, mask.unsqueeze(1)};
}

}  // namespace

void KVCache::keepRows(const torch::Tensor& rows)
{
    int64_t first = 0;  // leading positions that are padding in every row kept
    if (valid.defined()) {
        valid = valid.index_select(0, rows);
        first = valid.any(0).to(torch::kInt32).argmax().item<int64_t>();  // the first used
        valid = valid.narrow(1, first, length - first);
        if (valid.all().item<bool>())
            valid = torch::Tensor();  // no padding left: the plain causal path again
    }
    for (auto* list : {&k, &v})
        for (auto& t : *list)
            if (t.defined())
                t = t.index_select(0, rows).narrow(2, first, t.size(2) - first);
    length -= first;
}

torch::Tensor CausalLM::runBlocks(const torch::Tensor& ids, KVCache* cache,
                                  const PackedRows* packed, const torch::Tensor& real)
{
    const int64_t past = cache ? cache->length : 0;
    torch::Tensor positions, mask;
    if (real.defined() && (!cache || packed))
        fail("rows with padding are decoded with a KV cache and without packing");
    if (packed) {
        if (cache)
            fail("packed rows cannot be decoded with a KV cache");
        if (m_prompt.defined())
            fail("packed rows cannot carry a soft prompt (prompt tuning trains unpacked: set "
                 "data.packing to false)");
        if (packed->positions.sizes() != ids.sizes() || packed->segments.sizes() != ids.sizes())
            fail("packed rows: positions and segments must have the shape of ids [batch, seq]");
        positions = packed->positions.to(ids.device(), torch::kInt64);
        mask = segmentMask(packed->segments.to(ids.device()));
    }
    auto h = embedWithTokenRows(ids);  // [batch, seq, hidden]
    int64_t virtualTokens = 0;
    if (m_prompt.defined() && past == 0 && !m_methodOff) {
        virtualTokens = m_prompt.size(0);
        h = torch::cat({m_prompt.to(h.scalar_type()).unsqueeze(0).expand({h.size(0), -1, -1}), h},
                       1);
    }
    if (cache && (real.defined() || cache->valid.defined()))
        std::tie(positions, mask) =
            paddedRows(*cache, real, h.size(0), h.size(1), virtualTokens, ids.device());
    h = addPositions(h, past, positions);
    BlockContext ctx = blockContext(past, h.size(1), h, positions);
    ctx.mask = mask;
    // The layers that slide get `windowed`: their own rotary tables where the architecture has
    // them, and once the keys reach past the window, a banded mask.
    BlockContext windowed = ctx;
    if (m_config.slidingWindow > 0)
        slidingLayerTables(windowed, past, h.size(1), h, positions);
    const bool sliding = m_config.slidingWindow > 0 && past + h.size(1) > m_config.slidingWindow;
    if (sliding && h.size(1) == 1 && !mask.defined()) {
        // a decoding step: its query sees the latest keys, no mask to form
        windowed.window = m_config.slidingWindow;
    } else if (sliding) {
        // Each row's positions where they are its own: packed rows', a padded cache's (its
        // record of real keys counted, padding holds the place of the last real position).
        torch::Tensor keyPositions;
        if (packed)
            keyPositions = positions;
        else if (cache && cache->valid.defined())
            keyPositions = cache->valid.to(torch::kInt64).cumsum(1) - 1;
        windowed.mask = slidingWindowMask(mask, past, h.size(1), m_config.slidingWindow, h.device(),
                                          keyPositions);
    }
    // Training keeps each layer's attention mask for its backward. LibTorch's attention turns a
    // bool mask into an additive one of the queries' dtype in every layer, which each layer then
    // keeps ([batch, 1, seq, seq] per layer); made additive here once, the layers share it.
    // (When every layer slides, the unwindowed mask serves none: it is dropped, not converted.)
    if (sliding && m_config.slidingLayers.empty())
        ctx.mask = torch::Tensor();
    if (!cache && torch::GradMode::is_enabled()) {
        const torch::ScalarType dtype = trainingMaskDtype(h);
        if (ctx.mask.defined())
            ctx.mask = additiveMask(ctx.mask, dtype);
        if (sliding)
            windowed.mask = additiveMask(windowed.mask, dtype);
    }
    if (!sliding)
        windowed.mask = ctx.mask;  // the same mask (made additive once)
    const bool checkpoint =
        m_checkpointing && is_training() && torch::GradMode::is_enabled() && !cache;
    torch::Tensor dummy;
    if (checkpoint)
        dummy = torch::empty({0}, h.options().requires_grad(true));
    for (size_t i = 0; i < m_blocks.size(); ++i) {
        const BlockContext& c = m_config.layerSlides(i) ? windowed : ctx;
        if (checkpoint)
            h = BlockCheckpoint::apply(
                h, dummy, static_cast<int64_t>(reinterpret_cast<intptr_t>(m_blocks[i].get())),
                orEmpty(c.cos), orEmpty(c.sin), orEmpty(c.mask));
        else
            h = m_blocks[i]->forward(h, c, cache, i, past);
    }
    if (cache)
        cache->length = past + h.size(1);
    // Virtual prompt positions carry no prediction: drop them before the head.
    return virtualTokens > 0 ? h.narrow(1, virtualTokens, ids.size(1)) : h;
}

torch::Tensor CausalLM::forward(const torch::Tensor& ids, KVCache* cache, const PackedRows* packed)
{
    return headLogits(finalNorm(runBlocks(ids, cache, packed)), false);
}

torch::Tensor CausalLM::forwardLast(const torch::Tensor& ids, KVCache* cache,
                                    const torch::Tensor& real)
{
    auto h = finalNorm(runBlocks(ids, cache, nullptr, real));
    return headLogits(h.select(1, h.size(1) - 1), true);  // [batch, hidden] -> [batch, vocab]
}

torch::Tensor CausalLM::forwardHidden(const torch::Tensor& ids, const PackedRows* packed)
{
    return finalNorm(runBlocks(ids, nullptr, packed));
}

bool CausalLM::headIsPlain()
{
    auto head = headLayer();
    return !head || !head->hasLora() || head->loraMerged() || head->loraOff;
}

torch::Tensor CausalLM::headWeight()
{
    auto head = headLayer();
    if (!head)
        return tokenEmbeddingWeight();
    if (head->hasLora() && !head->loraMerged())
        fail("the chunked loss needs a plain head weight, but lm_head carries LoRA (drop it from "
             "lora.targets or use loss full)");
    return head->denseWeight(head->weight.scalar_type());
}

torch::Tensor CausalLM::headWeightIn(torch::ScalarType dtype)
{
    if (!m_tiedHead16.defined() || m_tiedHead16.scalar_type() != dtype)
        return headWeight();
    const torch::Tensor embedding = tokenEmbeddingWeight();
    if (!embedding.requires_grad() && embedding.data_ptr() == m_tiedHeadSource &&
        embedding._version() == m_tiedHeadVersion)
        return m_tiedHead16;
    m_tiedHead16 = torch::Tensor();  // the embedding changed since (or trains): no copy of it
    return headWeight();
}

std::vector<std::pair<std::string, std::shared_ptr<LinearImpl>>> CausalLM::linearLayers()
{
    std::vector<std::pair<std::string, std::shared_ptr<LinearImpl>>> out;
    for (const auto& item : named_modules("", /*include_self=*/false)) {
        auto linear = std::dynamic_pointer_cast<LinearImpl>(item.value());
        // LoRA's own A/B layers are Linear too: they are not targets.
        if (linear && item.key().find("lora_") == std::string::npos)
            out.emplace_back(item.key(), linear);
    }
    return out;
}

void CausalLM::setMethodEnabled(bool on)
{
    m_methodOff = !on;
    for (auto& [name, layer] : linearLayers())
        layer->loraOff = !on;
    for (auto& block : m_blocks)
        block->adaptersOff = !on;
}

void CausalLM::setPromptEmbeddings(const torch::Tensor& prompt)
{
    if (m_prompt.defined())
        m_prompt.set_data(prompt);
    else
        m_prompt = register_parameter("prompt_embeddings", prompt);
}

void CausalLM::loadWeights(const Checkpoint& checkpoint, torch::Dtype dtype,
                           const torch::Device& device)
{
    torch::NoGradGuard noGrad;
    std::string quantTensor;
    if (const std::string format = quantizedCheckpointFormat(checkpoint, &quantTensor);
        !format.empty())
        fail(
            checkpoint.location(), ": tensor '", quantTensor, "' shows a checkpoint saved ", format,
            "-quantised, which Tunebench does not read; load the full-precision "
            "(F32, F16 or BF16) checkpoint and set quant: nf4, fp4 or int8 to quantise it at load");
    std::unordered_map<std::string, LinearImpl*> quantizing;  // "<layer>.weight" -> layer
    for (auto& [prefix, layer] : linearLayers())
        if (layer->quantOnLoad)
            quantizing[prefix + ".weight"] = layer.get();
    for (auto& item : named_parameters(/*recurse=*/true)) {
        if (loadStopRequested())
            fail(checkpoint.location(), ": loading stopped");
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
        std::vector<int64_t> expected = param.sizes().vec();
        if (info.shape != expected) {
            std::string got, want;
            for (auto d : info.shape)
                got += (got.empty() ? "" : ", ") + std::to_string(d);
            for (auto d : expected)
                want += (want.empty() ? "" : ", ") + std::to_string(d);
            fail(entry->file->path(), ": tensor '", found, "' has shape [", got,
                 "] but the config implies [", want, "]");
        }
        if (auto q = quantizing.find(name); q != quantizing.end()) {
            // Quantised from the file's own dtype on the device, one tensor at a time: the
            // full-precision weight is never held for the whole model.
            LinearImpl& layer = *q->second;
            layer.quantizeFrom(tensorView(*entry->file, info).to(device), layer.quantOptions);
            param.set_data(torch::empty({0}, torch::TensorOptions().dtype(dtype).device(device)));
            continue;
        }
        // from_blob views the mapped bytes; .to() copies into memory we own in the requested dtype.
        auto owned =
            tensorView(*entry->file, info).to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
        param.set_data(owned);
    }
}

void CausalLM::setQuantization(const QuantOptions& options)
{
    m_quant = options;
    const auto head = headLayer();
    for (auto& [name, layer] : linearLayers()) {
        const bool isHead = head && layer.get() == head.get();
        layer->quantOnLoad = options.enabled() && (!isHead || options.head);
        layer->quantOptions = options;
    }
}

void CausalLM::dequantizeLinears(torch::Dtype dtype)
{
    for (auto& [name, layer] : linearLayers())
        layer->dequantize(dtype);
    m_quant = {};
}

int64_t CausalLM::castFrozenLinearWeights(torch::Dtype dtype)
{
    torch::NoGradGuard noGrad;
    int64_t bytes = 0;
    for (size_t i = 0; i < numBlocks(); ++i)
        for (const auto& group : block(i).stackedGroups())
            bytes += holdStacked(group, dtype);
    for (auto& [name, layer] : linearLayers()) {
        auto& w = layer->weight;
        if (layer->quantizedWeight() || w.requires_grad() || w.scalar_type() == dtype ||
            !w.is_floating_point() || w.numel() == 0)
            continue;
        bytes += static_cast<int64_t>(w.nbytes());
        w.set_data(w.to(dtype));
    }
    return bytes;
}

int64_t CausalLM::holdTiedHeadCopy(torch::Dtype dtype)
{
    torch::NoGradGuard noGrad;
    // A tied head reads the token embedding, which stays in its dtype for the lookup: the fused
    // loss would cast all of it at every step (26.5M Llama: 7 ms of a 0.2 s bf16 step).
    const torch::Tensor embedding = tokenEmbeddingWeight();
    m_tiedHead16 = torch::Tensor();
    if (!headLayer() && !embedding.requires_grad() && embedding.is_floating_point() &&
        embedding.scalar_type() != dtype) {
        m_tiedHead16 = embedding.to(dtype);
        m_tiedHeadSource = embedding.data_ptr();
        m_tiedHeadVersion = embedding._version();
    }
    return tiedHeadCopyBytes();
}

int64_t CausalLM::tiedHeadCopyBytes() const
{
    return m_tiedHead16.defined() ? static_cast<int64_t>(m_tiedHead16.nbytes()) : 0;
}

int64_t CausalLM::weightBytes()
{
    int64_t n = tiedHeadCopyBytes();
    for (const auto& p : parameters())
        n += static_cast<int64_t>(p.nbytes());
    for (auto& [name, layer] : linearLayers())
        if (const QuantizedWeight* q = layer->quantizedWeight())
            n += q->bytes();
    return n;
}

int64_t CausalLM::parameterCount()
{
    int64_t n = 0;
    for (const auto& p : parameters())
        n += p.numel();
    for (auto& [name, layer] : linearLayers())
        if (layer->quantized())
            n += layer->weightNumel();
    return n;
}

void CausalLM::initRandom(uint64_t seed, torch::Dtype dtype, const torch::Device& device)
{
    torch::NoGradGuard noGrad;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (auto& item : named_parameters(true)) {
        const std::string& name = item.key();
        torch::Tensor& param = item.value();
        torch::Tensor value;
        const bool isNorm =
            name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0)
            value = torch::zeros(param.sizes());
        else if (isNorm)
            value = torch::ones(param.sizes());
        else
            value = at::normal(0.0, 0.02, param.sizes(), gen);
        param.set_data(value.to(device, dtype));
    }
    for (auto& [name, layer] : linearLayers())
        if (layer->quantOnLoad)
            layer->quantize(layer->quantOptions);
}

torch::Tensor ropeInvFreq(const ModelConfig& c, double theta)
{
    const int64_t dim = c.rotatedDim();
    auto exponents =
        torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
    auto invFreq = 1.0 / torch::pow(torch::tensor(theta > 0 ? theta : c.ropeTheta, torch::kFloat32),
                                    exponents);
    if (theta > 0)
        return invFreq;
    const auto& s = c.ropeScaling;
    if (s.type == "linear") {
        invFreq = invFreq / s.factor;
    } else if (s.type == "llama3") {
        const double lowWavelen = s.originalMaxPositions / s.lowFreqFactor;
        const double highWavelen = s.originalMaxPositions / s.highFreqFactor;
        auto wavelen = 2.0 * M_PI / invFreq;
        auto scaled = torch::where(wavelen > lowWavelen, invFreq / s.factor, invFreq);
        auto smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
        auto smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
        auto medium = (wavelen >= highWavelen).logical_and(wavelen <= lowWavelen);
        invFreq = torch::where(medium, smoothed, scaled);
    }
    return invFreq;
}

torch::Tensor applyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    if (ropeTakesFused(x, cos, sin))  // a decoding step's few positions (model/decode_ops.h)
        return fusedRope(x, cos, sin);
    if (ropeTakesTrainOp(x, cos, sin))  // longer runs, training's too (model/train_ops.h)
        return trainRope(x, cos, sin);
    const int64_t half = x.size(-1) / 2;
    auto x1 = x.narrow(-1, 0, half);
    auto x2 = x.narrow(-1, half, half);
    auto rotated = torch::cat({-x2, x1}, -1);
    return x * cos + rotated * sin;
}

void reserveCache(KVCache& cache, size_t layer, int64_t batch, int64_t kvHeads, int64_t headDim,
                  const torch::TensorOptions& options, int64_t pastLength, int64_t seq)
{
    if (cache.k.size() <= layer) {
        cache.k.resize(layer + 1);
        cache.v.resize(layer + 1);
    }
    auto& ck = cache.k[layer];
    auto& cv = cache.v[layer];
    const int64_t needed = pastLength + seq;
    if (!ck.defined() || ck.size(2) < needed) {
        // Grow geometrically so decoding appends in amortised O(1).
        int64_t capacity = std::max<int64_t>(needed, ck.defined() ? ck.size(2) * 2 : 256);
        auto nk = torch::empty({batch, kvHeads, capacity, headDim}, options);
        auto nv = torch::empty({batch, kvHeads, capacity, headDim}, options);
        if (pastLength > 0) {
            nk.narrow(2, 0, pastLength).copy_(ck.narrow(2, 0, pastLength));
            nv.narrow(2, 0, pastLength).copy_(cv.narrow(2, 0, pastLength));
        }
        ck = nk;
        cv = nv;
    }
}

bool attentionWidensToFp32(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const KVCache* cache)
{
    // bf16 as it lies, or made so by autocast (the rotary embedding's output is fp32 there)
    const bool bf16 = q.scalar_type() == torch::kBFloat16 ||
                      (at::autocast::is_autocast_enabled(at::kCPU) &&
                       at::autocast::get_autocast_dtype(at::kCPU) == at::kBFloat16);
    return bf16 && !cache && q.device().is_cpu() && q.size(2) < kFlashAttentionBf16MinQueries &&
           torch::GradMode::is_enabled() &&
           (q.requires_grad() || k.requires_grad() || v.requires_grad());
}

torch::Tensor cachedAttention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, KVCache* cache, size_t layer,
                              int64_t pastLength, const torch::Tensor& mask, int64_t window)
{
    const int64_t seq = q.size(2);
    torch::Tensor keys = k;
    torch::Tensor values = v;
    if (cache) {
        reserveCache(*cache, layer, k.size(0), k.size(1), k.size(3), k.options(), pastLength, seq);
        auto& ck = cache->k[layer];
        auto& cv = cache->v[layer];
        const int64_t needed = pastLength + seq;
        ck.narrow(2, pastLength, seq).copy_(k);
        cv.narrow(2, pastLength, seq).copy_(v);
        keys = ck.narrow(2, 0, needed);
        values = cv.narrow(2, 0, needed);
    } else {
        pastLength = 0;
    }
    if (window > 0 && keys.size(2) > window) {
        if (seq != 1 || mask.defined())
            fail("a sliding window without a mask is for one query per row");
        keys = keys.narrow(2, keys.size(2) - window, window);
        values = values.narrow(2, values.size(2) - window, window);
        pastLength = window - 1;
    }

    // A decoding step's few queries on the CPU: one loop over the cached keys (model/decode_ops.h).
    if (cache && attentionTakesDecode(q, keys, values, mask))
        return decodeAttention(q, keys, values, mask);

    // Training in bf16 on the CPU with short rows: LibTorch's CPU flash attention splits fewer
    // than 192 queries into blocks of 32, where its bf16 backward runs 1.5-2.6 times slower than
    // the same kernel in fp32 (B4 x T128, 6 heads of 64: 5.7 against 3.4 ms for forward and
    // backward, the casts included; from 192 queries its blocks of 64 make bf16 the faster).
    // So such attention runs in fp32, autocast held off, and its output is rounded to bf16 once (as
    // autocast's bf16 attention returns it).
    if (attentionWidensToFp32(q, k, v, cache)) {
        AutocastGuard fp32(at::kCPU, false, at::autocast::get_autocast_dtype(at::kCPU));
        const torch::Tensor wideMask =
            mask.defined() && mask.is_floating_point() ? mask.to(torch::kFloat) : mask;
        return cachedAttention(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat),
                               nullptr, layer, 0, wideMask)
            .to(torch::kBFloat16);
    }

    // Grouped-query attention: each kv head serves its group of query heads. Decoding on the CPU
    // lets the kernel map the heads (the same numbers, without copying every cached key and value
    // per step: 4 rows of a Llama of 32 heads over 8 kv heads, 1,000 positions: 4.7 against 71 ms
    // for a layer's attention); elsewhere each kv head is repeated for its group.
    const int64_t groups = q.size(1) / keys.size(1);
    const bool gqa = groups > 1 && cache && q.device().is_cpu();
    if (groups > 1 && !gqa) {
        keys = keys.repeat_interleave(groups, 1);
        values = values.repeat_interleave(groups, 1);
    }
    auto attend = [&](const std::optional<torch::Tensor>& attnMask, bool causal) {
        return at::scaled_dot_product_attention(q, keys, values, attnMask, 0.0, causal,
                                                std::nullopt, gqa);
    };
    if (mask.defined())  // packed rows (causal within each segment), rows with padding
        return attend(mask, false);
    if (pastLength == 0)
        return attend(std::nullopt, /*causal=*/seq > 1);
    if (seq == 1)
        return attend(std::nullopt, false);
    // Chunk after a prefix: query i sees keys 0 .. pastLength + i (bottom-right aligned causal
    // mask).
    auto rows =
        torch::arange(seq, torch::TensorOptions().device(q.device())).unsqueeze(1) + pastLength;
    auto cols =
        torch::arange(pastLength + seq, torch::TensorOptions().device(q.device())).unsqueeze(0);
    return attend(cols <= rows, false);
}

}  // namespace tb
