// Memory estimate arithmetic: parameters, activations, loss buffers, ZeRO shares and the peak.
#include "memory/estimator.h"

#include "memory/objective_items.h"
#include "model/attention_width.h"
#include "model/swiglu_kernel.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "util/error.h"
#include "util/join.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace tb {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

// Bytes per element of each kind of tensor under a precision (docs/memory.md).
struct Precision {
    int64_t weight;  // parameters as stored
    int64_t grad;
    int64_t state;     // optimizer moments
    int64_t compute;   // matmul outputs (16-bit under autocast)
    int64_t residual;  // residual stream and norm outputs (fp32 under autocast)
    bool autocast;  // matmuls cast fp32 inputs (one copy per call) and weights (kept for backward)
    const char* weightName;
};

Precision precisionOf(const std::string& name)
{
    if (name == "fp32")
        return {4, 4, 4, 4, 4, false, "fp32"};
    if (name == "bf16-mixed" || name == "fp16-mixed")
        return {4, 4, 4, 2, 4, true, "fp32"};
    if (name == "bf16")
        return {2, 2, 2, 2, 2, false, "bf16"};
    fail("precision is '", name, "' (allowed: fp32, bf16-mixed, fp16-mixed, bf16)");
}

int64_t optimizerStatesPerParameter(const std::string& optimizer)
{
    if (optimizer == "adamw")
        return 2;
    if (optimizer == "sgd")
        return 0;
    if (optimizer == "sgd-momentum")
        return 1;
    fail("optimizer is '", optimizer, "' (allowed: adamw, sgd, sgd-momentum)");
}

void validate(const ModelConfig& model, const MethodOptions& run, const EstimateOptions& o)
{
    auto atLeast = [](const char* name, int64_t value, int64_t least) {
        if (value < least)
            fail(name, " is ", value, " (must be at least ", least, ")");
    };
    atLeast("batch", o.batch, 1);
    atLeast("seq", o.seq, 1);
    atLeast("grad-accum", o.gradAccum, 1);
    atLeast("gpus", o.gpus, 1);
    atLeast("loss chunk", o.lossChunk, 1);
    if (o.zero < 0 || o.zero > 3)
        fail("zero is ", o.zero, " (allowed: 0, 1, 2, 3)");
    // The items are counted in 64-bit bytes: a shape whose largest ones (the parameters and their
    // states, the logits, the saved activations) pass 2^60 bytes (1 EiB, beyond any device) is
    // refused rather than wrapped into negative figures.
    const double tokens = 2.0 * double(o.batch) * double(o.seq);  // pairs: chosen and rejected
    const double largest =
        std::max({16.0 * double(parameterCount(model)), 8.0 * tokens * double(model.vocabSize),
                  64.0 * tokens * double(model.hiddenSize) * double(model.numLayers) +
                      8.0 * tokens * double(o.seq) * double(model.numHeads)});
    if (largest > std::ldexp(1.0, 60))
        fail("batch ", o.batch, " x seq ", o.seq,
             " on this model needs more than 2^60 bytes (1 EiB)", "; no device holds that");
    if (o.attention != "sdpa" && o.attention != "naive")
        fail("attention is '", o.attention, "' (allowed: sdpa, naive)");
    if (o.loss != "full" && o.loss != "chunked")
        fail("loss is '", o.loss, "' (allowed: full, chunked)");
    if (o.deviceMemory && *o.deviceMemory <= 0)
        fail("device memory is ", *o.deviceMemory, " bytes (must be positive)");
    if (run.quant.enabled() && (run.method == Method::Full || run.method == Method::Partial))
        fail("quant ", quantKindName(run.quant.kind),
             " holds the frozen base weights quantised, "
             "but method '",
             methodName(run.method), "' trains them; use lora, adapter or prompt");
    if (run.method == Method::Lora)
        atLeast("lora rank", run.lora.rank, 1);
    if (run.method == Method::Adapter)
        atLeast("adapter size", run.adapter.size, 0);
    if (run.method == Method::Prompt)
        atLeast("prompt tokens", run.prompt.numTokens, 1);
    if (run.method == Method::Partial) {
        atLeast("trainable blocks", run.partial.trainableBlocks, 0);
        if (run.partial.trainableBlocks == 0 && run.partial.modules.empty())
            fail(
                "trainable blocks is 0 and no module trains: method 'partial' would train nothing");
    }
    const int64_t virtualTokens = run.method == Method::Prompt ? run.prompt.numTokens : 0;
    if (model.architecture == Architecture::Gpt2 && o.seq + virtualTokens > model.maxPositions)
        fail("seq is ", o.seq, virtualTokens ? cat(" plus ", virtualTokens, " prompt tokens") : "",
             " but ", model.sourcePath, " has n_positions ", model.maxPositions);
}

enum class Input { Norm1, AttnOut, Norm2, MlpInner };

struct BlockLinear {
    std::string target;  // the LoRA target name that matches it
    int64_t in, out;
    Input input;
};

std::vector<BlockLinear> blockLinears(const ModelConfig& c)
{
    const int64_t h = c.hiddenSize, i = c.intermediateSize;
    if (c.architecture == Architecture::Gpt2)
        return {{"c_attn", h, 3 * h, Input::Norm1},
                {"c_proj", h, h, Input::AttnOut},
                {"c_fc", h, i, Input::Norm2},
                {"c_proj", i, h, Input::MlpInner}};
    const int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
    if (c.fusedProjections())  // Phi-3
        return {{"qkv_proj", h, q + 2 * kv, Input::Norm1},
                {"o_proj", q, h, Input::AttnOut},
                {"gate_up_proj", h, 2 * i, Input::Norm2},
                {"down_proj", i, h, Input::MlpInner}};
    return {{"q_proj", h, q, Input::Norm1},      {"k_proj", h, kv, Input::Norm1},
            {"v_proj", h, kv, Input::Norm1},     {"o_proj", q, h, Input::AttnOut},
            {"gate_proj", h, i, Input::Norm2},   {"up_proj", h, i, Input::Norm2},
            {"down_proj", i, h, Input::MlpInner}};
}

// What trains inside one block.
struct BlockTraining {
    bool weights = false;        // every weight (full; partial's trainable blocks)
    bool norms = false;          // the norm weights
    std::set<std::string> lora;  // targets with a LoRA branch
    int64_t loraRank = 0;
    bool loraDropout = false;  // each LoRA branch keeps its own dropped input and the mask
    bool byteMask = false;  // CUDA's fused dropout keeps a 1-byte mask, the CPU's one of x's dtype
    int adapters = 0;       // bottleneck adapters (houlsby 2, pfeiffer 1)
    int64_t adapterWidth = 0;
    bool adapterKeepsInput = false;  // gelu/silu save their input as well as the output
};

// Saved-for-backward bytes of one block: perToken x tokens + perSequence x batch (naive attention's
// s x s probabilities); 16-bit weight copies under autocast (saved ones, and the trainable ones the
// autocast cache holds during forward).
struct BlockBytes {
    int64_t perToken = 0;
    int64_t perSequence = 0;
    int64_t weightCopies = 0;
    int64_t weightCopiesTrainable = 0;
    // Backward's largest moment inside the block beyond its saved tensors, per token: the MLP's
    // inner gradients (the product's and its two factors': 3 i, or 2 i as the down projection's
    // saved input is freed; GPT-2's gelu: 2 i or 1 i), in the compute dtype.
    int64_t backwardPerToken = 0;
    bool outputNeedsGrad = false;
    bool rotary = false;     // the rotary multiplications kept cos/sin
    bool attention = false;  // the attention kept its inputs (and a mask, when there is one)
    std::vector<std::string> terms;  // "label bytes-per-token", for the formula

    void add(const std::string& label, int64_t bytes, const std::string& symbolic)
    {
        if (bytes == 0)
            return;
        perToken += bytes;
        terms.push_back(cat(label, " ", symbolic));
    }
};

// Follows llama.cpp / gpt2.cpp / layers.cpp op by op: an op records (and keeps tensors) only when
// an input needs a gradient, and keeps an input only when the gradient of another input needs it.
// inputNeedsGrad: false for the first blocks when the embeddings are frozen (nothing upstream
// trains).
BlockBytes blockBytes(const ModelConfig& c, const BlockTraining& t, const Precision& p, bool naive,
                      int64_t seq, bool inputNeedsGrad, bool wideAttention, bool fusedSwiglu,
                      bool stacked)
{
    const bool gpt2 = c.architecture == Architecture::Gpt2;
    const int64_t h = c.hiddenSize, i = c.intermediateSize;
    const int64_t q = c.numHeads * c.headDim, kv = c.numKvHeads * c.headDim;
    const int64_t cb = p.compute, rb = p.residual;
    BlockBytes b;

    // RMSNorm keeps its input in fp32 (a copy under pure bf16) and 1/rms when the input needs a
    // gradient, and its normalised input when its weight trains; LayerNorm keeps its input, mean
    // and 1/std. Returns whether the output needs a gradient.
    auto norm = [&](bool inGrad, const char* label) {
        if (gpt2) {
            if (inGrad || t.norms)  // mean and 1/std in the input's dtype (CPU kernels)
                b.add(cat(label, " input"), rb * h + 2 * rb, cat(rb, "h+", 2 * rb));
        } else {
            b.add(cat(label, " input"), inGrad ? 4 * h + 4 : 0, "4h+4");
            b.add(cat(label, " normalised"), t.norms ? rb * h : 0, cat(rb, "h"));
        }
        return inGrad || t.norms;
    };

    // Linears: a trainable weight keeps its input, LoRA's A keeps it too and B keeps A's output.
    // Norm outputs are fp32 under autocast, so each matmul that keeps one casts its own 16-bit
    // copy; other inputs are kept once. Autocast's weight copy is kept when the input needs a
    // gradient.
    const auto linears = blockLinears(c);
    std::vector<bool> outGrad(linears.size());
    // LoRA dropout (dropout(x) * mask): each branch's A keeps its own dropped input, not the
    // shared one, and the multiplication keeps the mask, in x's dtype, when x needs a gradient.
    auto group = [&](Input input, bool inGrad, bool inputKept, const std::string& label) {
        int calls = 0, lora = 0;
        for (size_t j = 0; j < linears.size(); ++j) {
            const auto& l = linears[j];
            if (l.input != input)
                continue;
            const bool hasLora = t.lora.count(l.target) > 0;
            calls += (t.weights ? 1 : 0) + (hasLora && !t.loraDropout ? 1 : 0);
            lora += hasLora ? 1 : 0;
            outGrad[j] = inGrad || t.weights || hasLora;
            if (p.autocast) {
                // LoRA's A copy is kept for the input's gradient, B's always (A trains).
                const int64_t loraA = hasLora ? 2 * t.loraRank * l.in : 0;
                const int64_t loraB = hasLora ? 2 * t.loraRank * l.out : 0;
                const int64_t base = t.weights ? 2 * l.in * l.out : 0;
                b.weightCopies += (inGrad ? base + loraA : 0) + loraB;
                b.weightCopiesTrainable += (t.weights ? 2 * l.in * l.out : 0) + loraA + loraB;
            }
        }
        const int64_t size = input == Input::AttnOut ? q : input == Input::MlpInner ? i : h;
        const bool norm = input == Input::Norm1 || input == Input::Norm2;
        if (norm && p.autocast && stacked)  // one 16-bit copy for the stacked product
            b.add(label, calls > 0 ? cb * size : 0, cat(cb, "h (one cast, stacked products)"));
        else if (norm && p.autocast)
            b.add(label, calls * cb * size, cat(cb, size == h ? "h" : "i", " per matmul"));
        else if (!inputKept)
            b.add(label, calls > 0 ? (norm ? rb : cb) * size : 0,
                  cat(norm ? rb : cb, size == h   ? "h"
                                      : size == q ? "q"
                                                  : "i"));
        if (t.loraDropout && lora > 0) {
            // x as the branch gets it: a 16-bit cast of a norm's fp32 output under autocast
            // (stacked products share one; each other matmul casts the dropped input itself).
            const int64_t xb = norm && p.autocast && stacked ? cb : norm ? rb : cb;
            const int64_t kept = norm && p.autocast && !stacked ? cb : xb;
            const int64_t mask = t.byteMask ? 1 : xb;
            b.add(cat(label, " LoRA dropout"), lora * (kept + (inGrad ? mask : 0)) * size,
                  cat(lora, "x(", kept, inGrad ? cat("+", mask) : std::string(),
                      size == h   ? ")h"
                      : size == q ? ")q"
                                  : ")i"));
        }
        b.add(cat(label, " LoRA"), lora * t.loraRank * cb, cat(lora, "x", cb, "r"));
    };
    // Bottleneck adapter (trainable): keeps its input, and the activation's input and/or output;
    // autocast's copy of `down` is kept for its input's gradient, that of `up` always.
    auto adapter = [&](bool inGrad) {
        const int64_t m = t.adapterWidth, acts = t.adapterKeepsInput ? 2 : 1;
        b.add("adapter", cb * (h + acts * m), cat(cb, "(h+", acts, "m)"));
        if (p.autocast) {
            b.weightCopies += (inGrad ? 2 : 1) * 2 * h * m;
            b.weightCopiesTrainable += 2 * 2 * h * m;
        }
    };

    // Attention: q, k, v as the kernel reads them (k, v repeated to every head under GQA); fused
    // SDPA keeps its output and the fp32 logsumexp, naive attention the s x s probabilities per
    // head. bf16 attention over short rows on the CPU runs in fp32 (wideAttention,
    // model/attention_width.h): fp32 q, k, v and output, and the output's bf16 rounding is a tensor
    // of its own that the next matmul keeps when it keeps its input.
    const bool y1Grad = norm(inputNeedsGrad, "norm 1");
    group(Input::Norm1, y1Grad, false, "attention input");
    // GPT-2's c_attn and Phi-3's qkv_proj give q, k and v in one product.
    const bool fusedQkv = gpt2 || c.fusedProjections();
    bool qGrad = outGrad[0], kGrad = fusedQkv ? outGrad[0] : outGrad[1];
    const bool vGrad = fusedQkv ? outGrad[0] : outGrad[2];
    if (!gpt2 && c.qkNorm) {  // RMSNorm per head: input in fp32 and 1/rms per head
        b.add("q-norm input", qGrad ? 4 * q + 4 * c.numHeads : 0, "4q+4nh");
        b.add("k-norm input", kGrad ? 4 * kv + 4 * c.numKvHeads : 0, "4kv+4nkv");
        b.add("q/k normalised", t.norms ? cb * (q + kv) : 0, cat(cb, "(q+kv)"));
        qGrad = qGrad || t.norms;
        kGrad = kGrad || t.norms;
    }
    b.rotary = !gpt2 && (qGrad || kGrad);
    const bool attention = qGrad || kGrad || vGrad;
    b.attention = attention;
    const int64_t ab = wideAttention ? 4 : cb;  // bytes of what the attention kernel keeps
    if (attention) {
        b.add("q,k,v", 3 * q * ab, cat("3x", ab, "q"));
        if (naive) {
            const int64_t probBytes =
                p.autocast ? 4 + 2 : cb;  // autocast: fp32 softmax + 16-bit copy
            b.perSequence += c.numHeads * seq * seq * probBytes;
            b.terms.push_back(cat("probabilities ", probBytes, "·nh·s² per sequence"));
        } else {
            b.add("attention output + logsumexp", ab * q + 4 * c.numHeads, cat(ab, "q+4nh"));
        }
    }
    group(Input::AttnOut, attention, attention && !naive && !wideAttention, "attention output");
    const size_t oIndex = fusedQkv ? 1 : 3;
    bool aGrad = outGrad[oIndex];
    const bool gemma = c.architecture == Architecture::Gemma3;
    if (gemma)  // Gemma 3's norm after the attention, before the residual
        aGrad = norm(aGrad, "post-attention norm");
    if (t.adapters == 2) {
        adapter(aGrad);
        aGrad = true;
    }
    const bool hGrad = inputNeedsGrad || aGrad;

    const bool y2Grad = norm(hGrad, "norm 2");
    group(Input::Norm2, y2Grad, false, "mlp input");
    bool innerGrad = false;
    if (gpt2) {
        innerGrad = outGrad[2];
        b.add("gelu input", innerGrad ? cb * i : 0, cat(cb, "i"));
    } else {
        // Phi-3's gate_up_proj gives gate and up in one product.
        const bool gGrad = c.fusedProjections() ? outGrad[2] : outGrad[4];
        const bool uGrad = c.fusedProjections() ? outGrad[2] : outGrad[5];
        innerGrad = gGrad || uGrad;
        if (fusedSwiglu) {  // one op keeps gate and up, silu recomputed (model/train_ops.h)
            b.add("gate, up", innerGrad ? 2 * cb * i : 0, cat("2x", cb, "i"));
        } else {
            b.add("gate", gGrad ? cb * i : 0, cat(cb, "i"));  // silu's (gelu's) input
            b.add(gemma ? "gelu, up" : "silu, up", (uGrad ? cb * i : 0) + (gGrad ? cb * i : 0),
                  cat("2x", cb, "i"));
        }
    }
    const int64_t beforeDown = b.perToken;
    group(Input::MlpInner, innerGrad, false, "down input");
    // The product's gradient and its factors' (gelu: its input's): while the down projection's
    // input is freed when it was kept (full, LoRA or partial training of the down projection),
    // all of them beside it otherwise (measured on lora-tiny: 2 x 4 B x i x tokens with LoRA on
    // down_proj, 3 x with q_proj, v_proj only).
    const bool downInputKept = b.perToken > beforeDown;
    if (y2Grad || innerGrad)
        b.backwardPerToken = ((gpt2 ? 1 : 2) + (downInputKept ? 0 : 1)) * cb * i;
    bool mGrad = outGrad.back();
    if (gemma)  // and after the MLP
        mGrad = norm(mGrad, "post-feedforward norm");
    if (t.adapters > 0) {
        adapter(mGrad);
        mGrad = true;
    }
    b.outputNeedsGrad = hGrad || mGrad;
    return b;
}

// Largest trainable tensor (elements) of the method itself: AdamW's step makes temporaries of its
// size.
int64_t largestMethodTensor(const ModelConfig& c, const MethodOptions& run)
{
    const int64_t h = c.hiddenSize;
    const bool gpt2 = c.architecture == Architecture::Gpt2;
    int64_t blockMax = 0;
    for (const auto& l : blockLinears(c))
        blockMax = std::max(blockMax, l.in * l.out);
    const int64_t embeddings = std::max(c.vocabSize * h, gpt2 ? c.maxPositions * h : 0);
    switch (run.method) {
    case Method::Full:
        return std::max(blockMax, embeddings);
    case Method::Partial: {
        int64_t n = run.partial.trainableBlocks > 0 ? blockMax : h;
        for (const auto& m : run.partial.modules)
            if (m == "embeddings" || m == "lm_head")
                n = std::max(n, embeddings);
        return n;
    }
    case Method::Lora: {
        int64_t n = 0;
        for (const auto& t : resolvedLoraTargets(c, run.lora)) {
            for (const auto& l : blockLinears(c))
                if (l.target == t)
                    n = std::max(n, run.lora.rank * std::max(l.in, l.out));
            if (t == "lm_head")
                n = std::max(n, run.lora.rank * std::max(h, c.vocabSize));
        }
        return n;
    }
    case Method::Adapter:
        return h * adapterSize(c, run.adapter);
    case Method::Prompt:
        return static_cast<int64_t>(run.prompt.numTokens) * h;
    }
    return 0;
}

// The same with the trainable-token deltas, [rows, hidden].
int64_t largestTrainableTensor(const ModelConfig& c, const MethodOptions& run, int64_t rows)
{
    return std::max(largestMethodTensor(c, run), rows * c.hiddenSize);
}

bool contains(const std::vector<std::string>& list, const std::string& item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

// 4.127 bits: three decimals.
std::string bitsText(double bits)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.3f", bits);
    return buffer;
}

// The base's linear layers held quantised: every block's, and the untied head with quant.head.
// computeBytes: the width a layer is dequantised into.
void quantizedWeights(const ModelConfig& c, const MethodOptions& run, int64_t computeBytes,
                      MemoryEstimate& e)
{
    if (!run.quant.enabled())
        return;
    int64_t largest = 0;
    auto add = [&](int64_t rows, int64_t cols, int64_t count) {
        const QuantBytes b = quantizedBytes(run.quant, rows, cols);
        e.quantizedParameters += count * rows * cols;
        e.quantizedBytes.data += count * b.data;
        e.quantizedBytes.absmax += count * b.absmax;
        e.quantizedBytes.absmax2 += count * b.absmax2;
        e.quantizedBytes.code2 += count * b.code2;
        largest = std::max(largest, rows * cols);
    };
    for (const LinearShape& l : blockLinearShapes(c))
        add(l.out, l.in, c.numLayers);
    if (run.quant.head && !c.tieWordEmbeddings)
        add(c.vocabSize, c.hiddenSize, 1);
    e.dequantTransient = largest * computeBytes;
}

}  // namespace

int64_t fusedLossChunkTokens(int64_t vocab)
{
    return std::max<int64_t>(64, (int64_t(256) << 20) / (8 * std::max<int64_t>(vocab, 1)));
}

MemoryEstimate estimateMemory(const ModelConfig& model, const MethodOptions& run,
                              const EstimateOptions& options)
{
    const Precision p = precisionOf(options.precision);
    const int64_t statesPerParam = optimizerStatesPerParameter(options.optimizer);
    validate(model, run, options);
    // Pair objectives forward each pair's chosen and rejected sequence together: from here on
    // o.batch counts sequences (2 x pairs), options.batch what the run config says.
    const ObjectiveShape objective = objectiveShape(run, options);
    const bool reward = objective.reward;
    EstimateOptions o = options;
    o.batch = objective.rows;
    const int64_t h = model.hiddenSize, v = model.vocabSize, layers = model.numLayers;
    const bool gpt2 = model.architecture == Architecture::Gpt2;
    const int64_t gpus = o.gpus;
    auto shard = [gpus](int64_t bytes) { return (bytes + gpus - 1) / gpus; };

    MemoryEstimate e;
    e.parametersBase = parameterCount(model);
    e.trainableParameters = trainableParameterCount(model, run);
    e.trainableTokens = static_cast<int64_t>(trainableTokenIds(model, run).size());
    e.trainableTokenParameters = trainableTokenParameters(model, e.trainableTokens);
    const bool adds =
        run.method == Method::Lora || run.method == Method::Adapter || run.method == Method::Prompt;
    // Trainable token deltas are new tensors beside the checkpoint's, whatever the method.
    e.parameters = e.parametersBase + (adds ? e.trainableParameters : e.trainableTokenParameters);
    const int64_t frozen = e.parameters - e.trainableParameters;

    // Parameters, gradients, optimizer states: exact. Quantised layers (frozen) at their packed
    // size, the rest of the frozen parameters in the weight width.
    quantizedWeights(model, run, p.compute, e);
    e.masterWeights = 0;

    // What trains where.
    BlockTraining trained, frozenBlock;
    trained.weights = trained.norms = true;
    int64_t trainedBlocks = 0;  // the last ones
    bool embeddingsTrain = false, headTrains = false, finalNormTrains = false, soft = false;
    switch (run.method) {
    case Method::Full:
        trainedBlocks = layers;
        embeddingsTrain = headTrains = finalNormTrains = true;
        break;
    case Method::Partial: {
        const auto& mods = run.partial.modules;
        embeddingsTrain =
            contains(mods, "embeddings") || (contains(mods, "lm_head") && model.tieWordEmbeddings);
        trainedBlocks = run.partial.trainableBlocks;
        frozenBlock.norms = finalNormTrains = contains(mods, "norms");
        headTrains = embeddingsTrain || contains(mods, "lm_head");
        break;
    }
    case Method::Lora:
        for (const auto& t : resolvedLoraTargets(model, run.lora)) {
            if (t == "lm_head")
                headTrains = true;
            else
                frozenBlock.lora.insert(t);
        }
        frozenBlock.loraRank = run.lora.rank;
        frozenBlock.loraDropout = run.lora.dropout > 0;
        frozenBlock.byteMask = o.cudaOverhead;  // a CUDA device
        break;
    case Method::Adapter:
        frozenBlock.adapters = run.adapter.kind == AdapterKind::Pfeiffer ? 1 : 2;
        frozenBlock.adapterWidth = adapterSize(model, run.adapter);
        frozenBlock.adapterKeepsInput = run.adapter.activation == AdapterActivation::Gelu ||
                                        run.adapter.activation == AdapterActivation::Silu;
        break;
    case Method::Prompt:
        // The soft prompt joins the embeddings' output: every block's input needs a gradient.
        soft = true;
        break;
    }
    // Mixed precision holds the frozen linear weights that are not quantised in 16 bits
    // (train/setup.h, chooseMixedPrecision): the blocks' that do not train and an untied LM head's
    // base (LoRA's too).
    const bool loraHead = run.method == Method::Lora && headTrains;
    const bool head16 = p.autocast && !model.tieWordEmbeddings && (!headTrains || loraHead) &&
                        !(run.quant.enabled() && run.quant.head);
    int64_t frozen16 = head16 ? v * h : 0;
    if (p.autocast && !run.quant.enabled())
        for (const LinearShape& l : blockLinearShapes(model))
            frozen16 += (layers - trainedBlocks) * l.out * l.in;
    // The fused head loss (train/chunked_loss.h): what `loss: full` trains next-token objectives
    // with unless LoRA sits on the head. Each chunk's logits form the gradients in forward, so no
    // [tokens, vocab] buffer outlives its chunk and nothing keeps the head's input.
    const bool fused = o.loss == "full" && !reward && !objective.pairs && !loraHead;
    // With it, a head tied to a frozen token embedding gets a 16-bit copy beside the embedding
    // (train/setup.h): the loss's products read it instead of casting the embedding every step.
    const int64_t tiedHead16 =
        fused && p.autocast && model.tieWordEmbeddings && !embeddingsTrain ? v * h : 0;
    e.weightsTrainable = e.trainableParameters * p.weight;
    e.weightsFrozen = (frozen - e.quantizedParameters - frozen16) * p.weight + 2 * frozen16 +
                      2 * tiedHead16 + e.quantizedBytes.total();
    e.weights = e.weightsTrainable + e.weightsFrozen;
    if (o.zero >= 3)
        e.weights = shard(e.weights);
    const bool fusedHeadGradient = fused && headTrains;  // the head's weight gradient, [v, h]
    // A reward model never runs the LM head: an untied trainable head gets no gradient and so no
    // optimizer state (a tied one still trains as the embedding).
    const int64_t unusedHead =
        reward && headTrains && !model.tieWordEmbeddings && run.method != Method::Lora ? v * h : 0;
    if (reward)
        headTrains = false;
    e.gradients = (e.trainableParameters - unusedHead) * p.grad;
    const int64_t wholeGradients = e.gradients;  // before ZeRO-2 shares them
    if (o.zero >= 2)
        e.gradients = shard(e.gradients);
    e.optimizerStates = (e.trainableParameters - unusedHead) * statesPerParam * p.state;
    if (o.zero >= 1)
        e.optimizerStates = shard(e.optimizerStates);

    // Activations for one micro-batch (accumulation runs micro-batches one after another). Blocks
    // record from the first one whose input or weights need a gradient.
    const int64_t virtualTokens = run.method == Method::Prompt ? run.prompt.numTokens : 0;
    const int64_t seq = o.seq + virtualTokens;
    const int64_t tokens = o.batch * seq;
    const bool naive = o.attention == "naive";
    // bf16 (mixed or pure) on the CPU, where the kernels below take their own paths.
    const bool cpuBf16 = !o.cudaOverhead && o.precision.rfind("bf16", 0) == 0;
    // bf16 attention over fewer than 192 queries runs in fp32 (model/attention_width.h).
    const bool wideAttention = cpuBf16 && !naive && seq < kFlashAttentionBf16MinQueries;
    // bf16 SwiGLU over more rows than a decoding step's runs as one op (model/train_ops.h).
    // (Gemma 3's GELU-tanh gating is not that op.)
    const bool fusedSwiglu = cpuBf16 && !gpt2 && model.architecture != Architecture::Gemma3 &&
                             o.batch * seq > kSwigluFewRows;
    // Under CPU bf16 autocast q, k, v and gate, up run as stacked products over one bf16 cast of
    // their input (model/stacked_linears.h); quantised weights keep each layer's own. (Phi-3's are
    // one layer each already, which casts its input as any other layer.)
    const bool stacked = cpuBf16 && p.autocast && !gpt2 && !model.fusedProjections() &&
                         !run.quant.enabled() && o.batch * seq > kSwigluFewRows;
    auto blockTotal = [&](const BlockBytes& b) {
        return b.perToken * tokens + b.perSequence * o.batch;
    };
    auto kindOf = [&](int64_t layer) -> const BlockTraining& {
        return layer >= layers - trainedBlocks ? trained : frozenBlock;
    };
    int64_t blocksNo = 0, copiesNo = 0;
    // Trainable token rows join the embeddings' output too.
    const bool tokenRows = e.trainableTokens > 0;
    bool grad = embeddingsTrain || soft || tokenRows, rotary = false, attentionKept = false;
    for (int64_t l = 0; l < layers; ++l) {
        BlockBytes b =
            blockBytes(model, kindOf(l), p, naive, seq, grad, wideAttention, fusedSwiglu, stacked);
        b.rotary = b.rotary && model.layerRotates(static_cast<size_t>(l));  // SmolLM3's NoPE
        blocksNo += blockTotal(b);
        copiesNo += b.weightCopies;
        e.blocksStoring += b.perToken > 0 ? 1 : 0;
        rotary = rotary || b.rotary;
        attentionKept = attentionKept || b.attention;
        grad = b.outputNeedsGrad;
    }
    const bool lastGrad = grad;
    const BlockBytes mainBlock = blockBytes(model, kindOf(layers - 1), p, naive, seq, true,
                                            wideAttention, fusedSwiglu, stacked);
    e.activationsPerBlock = blockTotal(mainBlock);
    e.activationsCheckpoint = p.residual * h * tokens;

    // Final norm, the head's input, the token ids (kept by a trainable embedding) and the rotary
    // tables (kept by the rotary multiplications, shared by all blocks).
    auto headBytes = [&](bool inGrad) {
        int64_t perToken = 0;
        if (gpt2)
            perToken += inGrad || finalNormTrains ? p.residual * (h + 2) : 0;
        else
            perToken += (inGrad ? 4 * h + 4 : 0) + (finalNormTrains ? p.residual * h : 0);
        if (reward || fused)  // the scalar head's input: the logits item; fused: nothing kept
            ;
        else if (o.loss == "chunked")  // keeps the final norm's output itself (no autocast)
            perToken += inGrad || headTrains ? p.residual * h : 0;
        else
            perToken += p.autocast ? (headTrains ? 1 : 0) * p.compute * h
                                   : (headTrains ? p.residual * h : 0);
        perToken += loraHead && !reward ? run.lora.rank * p.compute : 0;
        // The token rows' head matmul keeps its input (a 16-bit copy under autocast) for the
        // delta's gradient; the chunked and fused losses keep or need none.
        if (tokenRows && o.loss != "chunked" && !fused && !reward)
            perToken += p.autocast ? p.compute * h : p.residual * h;
        perToken += embeddingsTrain ? 8 : 0;  // int64 ids
        perToken += tokenRows ? 8 : 0;        // the rows' int64 slot of each token
        // GPT-2's learned positions keep their int64 indices, [seq].
        return perToken * tokens + (embeddingsTrain && gpt2 ? 8 * seq : 0);
    };
    // (Gemma 3's sliding layers keep tables of their own.)
    const int64_t rotaryTables = (model.ropeThetaSliding > 0 && model.slidingWindow > 0 ? 2 : 1) *
                                 2 * seq * model.rotatedDim() * p.residual;
    // An attention mask, made once per forward and kept by every layer's attention for backward:
    // packed rows' [batch, seq, seq] (causal within each example), else, where a sliding window
    // is shorter than the sequence, its band [seq, seq]; additive, in the dtype attention sees
    // its queries in (model/causal_lm.cpp).
    // Packed rows with some layers outside the window keep both: the packed mask and its band.
    const bool windowMask = model.slidingWindow > 0 && seq > model.slidingWindow;
    const bool packedMask = o.packing && (!windowMask || !model.slidingLayers.empty());
    const int64_t maskBytes =
        ((packedMask ? o.batch : 0) + (windowMask ? (o.packing ? o.batch : 1) : 0)) * seq * seq *
        (wideAttention ? 4 : p.compute);
    // (checkpointed blocks keep it as an input of their recompute)
    const int64_t attentionMask = attentionKept ? maskBytes : 0;
    auto headCopies = [&](bool inGrad) -> int64_t {
        // (a 16-bit head has no copy; the fused loss's copies live only while it runs)
        if (!p.autocast || reward)
            return 0;
        const bool kept = o.loss != "chunked" && !fused;
        return (kept && !head16 && (inGrad || finalNormTrains) ? 2 * v * h : 0) +
               (loraHead ? 2 * int64_t(run.lora.rank) * (h + v) : 0) +
               (tokenRows && kept ? 2 * e.trainableTokens * h : 0);
    };
    e.activationsHead = headBytes(lastGrad);

    // Naive attention materialises one layer's scores and masked scores on the way to softmax.
    const int64_t naiveScores = naive ? 2 * model.numHeads * seq * seq * p.compute * o.batch : 0;

    copiesNo += headCopies(lastGrad);
    e.activationsNoCheckpointing = blocksNo + e.activationsHead + (rotary ? rotaryTables : 0) +
                                   attentionMask + naiveScores + copiesNo;
    // Checkpointing keeps every block's input, and backward recomputes one block at a time, every
    // block (its input then needs a gradient); autocast caches 16-bit copies of the trainable
    // weights during forward.
    // recomputeWhole: the largest of one block's recompute and its backward together (a trained
    // block saves more, a frozen one's MLP gradients can be wider: each kind on its own).
    int64_t recompute = 0, recomputeCopies = 0, cachedCopies = 0, recomputeWhole = 0;
    for (const BlockTraining* kind : {&trained, &frozenBlock}) {
        const int64_t count = kind == &trained ? trainedBlocks : layers - trainedBlocks;
        if (count == 0)
            continue;
        const BlockBytes b =
            blockBytes(model, *kind, p, naive, seq, true, wideAttention, fusedSwiglu, stacked);
        if (blockTotal(b) + b.weightCopies > recompute) {
            recompute = blockTotal(b) + b.weightCopies;
            recomputeCopies = b.weightCopies;
        }
        // Its backward: the gradient arriving at the block's output (residual width) and the
        // MLP's inner gradients.
        recomputeWhole = std::max(
            recomputeWhole, blockTotal(b) + b.weightCopies +
                                (p.residual * model.hiddenSize + b.backwardPerToken) * tokens);
        cachedCopies += count * b.weightCopiesTrainable;
        rotary = rotary || b.rotary;
    }
    const int64_t headCk = headBytes(true);
    const int64_t storedCk = layers * e.activationsCheckpoint + headCk +
                             (rotary ? rotaryTables : 0) + maskBytes + naiveScores +
                             headCopies(true);
    e.activationsCheckpointing = storedCk + recompute;
    if (o.gradientCheckpointing)
        e.activationsHead = headCk;
    e.activations =
        o.gradientCheckpointing ? e.activationsCheckpointing : e.activationsNoCheckpointing;
    e.activationsStored = o.gradientCheckpointing ? storedCk : e.activationsNoCheckpointing;
    e.activationsWeightCopies =
        o.gradientCheckpointing ? headCopies(true) + recomputeCopies : copiesNo;
    const bool chunked = o.loss == "chunked";

    // Full loss: cross-entropy keeps the fp32 log-softmax; backward's start holds it with the
    // gradients of the log-softmax and of the logits: three [tokens, vocab] fp32 buffers.
    // Chunked loss (train/chunked_loss.h): one fp32 [chunk, vocab] buffer, fp32 copies of 16-bit
    // inputs, and per token its label index and logsumexp (12 B); its head-weight gradient
    // accumulator becomes the gradient, counted under gradients.
    const int64_t chunk = std::min(o.lossChunk, o.batch * o.seq);
    const int64_t chunkCopies =
        chunked ? (p.weight != 4 ? 4 * v * h : 0) + (p.residual != 4 ? 4 * o.batch * o.seq * h : 0)
                : 0;
    // The forward side can be higher: the head's logits (compute dtype, virtual tokens included)
    // live until the loss is formed, beside its fp32 copy of the real ones (when it is a copy) and
    // the log-softmax.
    const int64_t s = o.seq;
    // (with one sequence the real tokens' logits are contiguous: no copy)
    const bool copied = p.compute != 4 || (virtualTokens > 0 && o.batch > 1);
    const int64_t forwardSide = p.compute * (s + virtualTokens) + (copied ? 4 * s : 0) + 4 * s;
    e.logits = chunked ? 4 * chunk * v + chunkCopies + 12 * o.batch * o.seq
                       : std::max(3 * 4 * s, forwardSide) * o.batch * v;
    // The fused loss, per chunk of n tokens: the fp32 logits (16-bit ones beside their fp32 copy,
    // but bf16 ones on the CPU),
    // made log-softmax, softmax and the logits' gradient in place (a 16-bit copy of that under
    // autocast), and the head weight's gradient formed from it (each chunk's part beside the fp32
    // sum); autocast's copy of a 32-bit head weight while it runs (none for a frozen tied head,
    // whose copy the weights hold). Kept for backward: the hidden states' gradient, the head
    // weight's (in its dtype) and the token rows'.
    const int64_t realTokens = o.batch * o.seq;
    const int64_t fusedChunk = std::min(realTokens, fusedLossChunkTokens(v));
    const bool oneChunk = fusedChunk >= realTokens;
    const int64_t hiddenGradient = lastGrad || finalNormTrains ? realTokens * h * p.residual : 0;
    const int64_t headSum = fusedHeadGradient ? 4 * v * h : 0;
    const int64_t headParts =
        fusedHeadGradient && !(oneChunk && p.compute == 4) ? p.compute * v * h : 0;
    const int64_t fusedHeld = hiddenGradient + (fusedHeadGradient ? p.weight * v * h : 0) +
                              (tokenRows ? 4 * e.trainableTokens * h : 0);
    // On CUDA logsumexp's fp32 temporary covers kFusedLossLogsumexpRows rows at a time; on the CPU
    // one kernel forms each row's softmax in place without it (train/loss_rows_kernel.h).
    const int64_t logsumexpRows =
        o.cudaOverhead ? 4 * std::min(kFusedLossLogsumexpRows, fusedChunk) * v : 0;
    // bf16 logits on the CPU are made softmax - onehot in place, a row at a time in fp32 scratch
    // (train/loss_rows_kernel.h): no fp32 copy of them. fp16 ones, and any on CUDA, get one.
    const int64_t fusedLogits =
        fusedChunk * v * (p.compute == 4 || cpuBf16 ? p.compute : p.compute + 4) + logsumexpRows +
        (oneChunk ? 0 : headSum);
    const int64_t fusedForward =
        hiddenGradient + (p.autocast && !head16 && !tiedHead16 ? 2 * v * h : 0) +
        std::max(fusedLogits, fusedChunk * v * p.compute + headSum + headParts);
    if (fused)
        e.logits = std::max(fusedForward, fusedHeld);

    // The objective's own bytes: a reference model, the log-probability buffers, a reward head.
    const ObjectiveWidths widths{p.weight,   p.grad,         p.state,   p.compute,
                                 p.residual, statesPerParam, p.autocast};
    const ObjectiveBytes ob = objectiveBytes(model, objective, o, widths, e.parametersBase);
    const MemoryItem scores = reward ? rewardScoresItem(model, objective, widths) : MemoryItem{};
    if (reward)
        e.logits = scores.bytes;
    e.logitsForward = chunked || reward ? e.logits
                      : fused           ? fusedForward
                                        : forwardSide * o.batch * v;
    e.logitsSaved = chunked || reward ? e.logitsForward : fused ? fusedHeld : 4 * s * o.batch * v;
    e.objective = objective.objective;
    e.reference = objective.reference;
    e.sequences = o.batch;
    e.referenceWeights = ob.reference;
    e.referenceForward = ob.referenceForward;
    e.logprobs = ob.logprobs;
    e.head = ob.head;
    e.headWeight = ob.headWeight;
    e.headGradient = ob.headGradient;
    e.headStates = ob.headStates;
    e.headParameters = ob.headParameters;

    // The peak over the step's phases, on top of weights and optimizer states. Gradients of earlier
    // micro-batches are held throughout; gradients of this one grow as backward frees activations.
    if (o.optimizer == "adamw") {
        e.stepWorkspace = 2 * largestTrainableTensor(model, run, e.trainableTokens) * p.state;
        if (o.zero >= 1)
            e.stepWorkspace = shard(e.stepWorkspace);
    }
    // ZeRO-2 reduce-scatters in the step's last backward only (dist/grad_sync.h): the earlier
    // micro-batches' gradients are held whole on every rank.
    const bool zero2 = o.zero >= 2 && gpus > 1;
    const int64_t held = o.gradAccum > 1 ? wholeGradients : 0;
    const int64_t vh = v * h * p.grad;
    auto phase = [&e](const char* name, int64_t bytes, std::string what) {
        e.phases.push_back({name, bytes, std::move(what)});
    };
    const char* heldWhat = o.gradAccum > 1 ? " + gradients held across accumulation" : "";
    // A quantised base: one layer's weight dequantised at a time, in forward and backward.
    const int64_t dq = e.dequantTransient;
    const char* dqWhat = dq > 0 ? " + one dequantised layer" : "";
    // The reference pass runs first in each micro-batch, before the policy's forward.
    if (ob.referenceForward > 0)
        phase("reference forward", ob.referenceForward + held + dq,
              ob.referenceForwardWhat + heldWhat + dqWhat);
    const char* lpWhat = ob.logprobs > 0 ? " + log-probabilities" : "";
    if (!o.gradientCheckpointing) {
        phase("backward", e.activations + e.logits + ob.logprobs + held + dq,
              cat("backward's start: activations + logits", lpWhat, heldWhat, dqWhat));
    } else {
        // Forward's end: autocast still caches 16-bit copies of the trainable weights.
        const int64_t logitsForward = e.logitsForward;
        if (p.autocast)
            phase("forward", storedCk + cachedCopies + logitsForward + ob.logprobs + held + dq,
                  cat("forward's end: checkpoints + autocast's cached 16-bit copies of the "
                      "trainable weights + the forward side of the loss",
                      lpWhat, heldWhat, dqWhat));
        phase("backward", storedCk + e.logits + ob.logprobs + held + dq,
              cat("backward's start: checkpoints + logits", lpWhat, heldWhat, dqWhat));
        // Recomputing the last block, with the head's gradient already made.
        const int64_t headGrad = headTrains && run.method != Method::Lora ? vh : 0;
        phase("recompute",
              storedCk + recomputeWhole + held + headGrad + dq,  // whole under ZeRO-2 too
              cat("recomputing the last block and its backward: checkpoints + one block's "
                  "activations + the gradients of its output and of its MLP's inner width",
                  headGrad ? " + the head's gradient" : "", heldWhat, dqWhat));
    }
    // Backward's end with a trained tied embedding: the head's gradient waits in autograd's buffer
    // for the embedding's, then the two are summed (fp32: into a new tensor) and accumulated.
    if (embeddingsTrain && model.tieWordEmbeddings && !reward) {
        const int64_t extra = (p.compute == 4 ? 2 : 1) + (o.gradAccum > 1 ? 1 : 0);
        phase("end of backward", e.gradients + extra * vh,  // whole under ZeRO-2 too
              cat("backward's end: gradients + ", extra,
                  " more [vocab, hidden] gradients of the tied embedding (head's, embedding's",
                  extra > 1 ? ", their sum)" : ")"));
    }
    // ZeRO-2's last backward: each bucket's whole gradient stays until every reduce-scatter of
    // the step has finished, beside the shards they fill.
    if (zero2)
        phase("end of backward", wholeGradients + e.gradients,
              "backward's end under ZeRO-2: every bucket's whole gradient, reduce-scattered, "
              "beside this GPU's shards (the whole ones are freed when the reductions finish)");
    phase("optimizer step", e.gradients + e.stepWorkspace,
          cat("the optimizer step: gradients + temporaries of the largest tensor (",
              formatBytes(e.stepWorkspace), ")"));
    const MemoryPhase* peak = &e.phases.front();
    for (const auto& ph : e.phases)
        if (ph.bytes > peak->bytes)
            peak = &ph;
    e.peakPhase = peak->name;
    const int64_t fixed =
        e.weights + e.optimizerStates + e.masterWeights + e.referenceWeights + e.head;
    const int64_t beforeOverhead = fixed + peak->bytes;
    e.overhead = o.cudaOverhead ? 512 * kMiB + beforeOverhead / 20 : 0;
    e.total = beforeOverhead + e.overhead;

    // Items, each with one sentence and its arithmetic.
    const std::string perGpu = gpus > 1 ? cat(" / ", gpus, " GPUs") : "";
    const std::string T = groupDigits(e.trainableParameters);
    auto eq = [](int64_t bytes) { return cat(" = ", groupDigits(bytes), " B"); };

    // The trainable token rows, itemised inside the trainable count.
    const std::string rowsWhat =
        e.trainableTokens > 0
            ? cat(" (", groupDigits(e.trainableTokenParameters), " of them the deltas of ",
                  e.trainableTokens, " trainable token row", e.trainableTokens == 1 ? "" : "s",
                  model.tieWordEmbeddings ? ", tied head" : " in the embedding and the head", ")")
            : std::string();
    std::string weightsWhat =
        run.method == Method::Full
            ? cat("all ", groupDigits(e.parameters), " parameters train")
            : cat(T, " trainable", rowsWhat, " and ", groupDigits(frozen), " frozen");
    const QuantBytes& qb = e.quantizedBytes;
    const std::string quantWhat =
        run.quant.enabled()
            ? cat("; ", groupDigits(e.quantizedParameters), " frozen linear weights held ",
                  quantKindName(run.quant.kind), run.quant.doubleQuant ? " (double-quantised)" : "",
                  " at ",
                  bitsText(8.0 * static_cast<double>(qb.total()) /
                           static_cast<double>(e.quantizedParameters)),
                  " bits each, statistics included, dequantised one layer at a time")
            : std::string();
    const std::string quantFormula =
        run.quant.enabled()
            ? cat(" + ", groupDigits(e.quantizedParameters), " ", quantKindName(run.quant.kind),
                  ": codes ", groupDigits(qb.data), " B + absmax ", groupDigits(qb.absmax), " B",
                  run.quant.doubleQuant ? cat(" + second absmax ", groupDigits(qb.absmax2),
                                              " B + dynamic maps ", groupDigits(qb.code2), " B")
                                        : std::string())
            : std::string();
    e.items.push_back(
        {"weights", e.weights,
         cat("The parameters in ", p.weightName, " (", p.weight, " B each): ", weightsWhat,
             quantWhat, o.zero >= 3 ? cat("; ZeRO-3 gives each GPU 1/", gpus) : std::string(),
             "; inference needs them too."),
         cat("(", T, " trainable",
             e.trainableTokens > 0 ? cat(" incl. token rows ", e.trainableTokens, " x ", h,
                                         model.tieWordEmbeddings ? "" : " x 2")
                                   : std::string(),
             " + ", groupDigits(frozen - e.quantizedParameters), " frozen) x ", p.weight, " B",
             quantFormula, o.zero >= 3 ? perGpu : "", eq(e.weights))});
    if (run.quant.enabled())
        e.items.push_back(
            {"dequantized", e.dequantTransient,
             "A quantised layer's weight is dequantised just in time for its matrix product, in "
             "forward and again for the input gradient in backward, and freed after it: one "
             "layer's full weight is alive at a time, counted in the phases.",
             cat("the largest quantised layer ",
                 groupDigits(e.dequantTransient / std::max<int64_t>(1, p.compute)), " x ",
                 p.compute, " B", eq(e.dequantTransient))});
    e.items.push_back(
        {"gradients", e.gradients,
         cat("One gradient per trainable parameter, written by backward and read by the "
             "optimizer step; frozen parameters need none",
             unusedHead ? "; a reward model's untied LM head never runs and gets none" : "", "."),
         cat(T, " trainable",
             unusedHead ? cat(" - ", groupDigits(unusedHead), " unused LM head") : std::string(),
             " x ", p.grad, " B", o.zero >= 2 ? perGpu : "", eq(e.gradients))});
    const char* statesWhy =
        o.optimizer == "adamw" ? "AdamW keeps two running averages per trainable parameter (of the "
                                 "gradient and of its "
                                 "square)."
        : o.optimizer == "sgd"
            ? "Plain SGD keeps no state: each update uses the current gradient alone."
            : "SGD with momentum keeps one velocity buffer per trainable parameter.";
    e.items.push_back(
        {"optimizer_states", e.optimizerStates, statesWhy,
         cat(T, " trainable",
             unusedHead ? cat(" - ", groupDigits(unusedHead), " unused LM head") : std::string(),
             " x ", statesPerParam, " state", statesPerParam == 1 ? "" : "s", " x ", p.state, " B",
             o.zero >= 1 ? perGpu : "", eq(e.optimizerStates))});
    const char* masterWhy =
        p.autocast
            ? "None: Tunebench trains the fp32 weights themselves and autocast casts them to "
              "16 bits per operation, so no separate master copy exists (frameworks that "
              "store bf16 weights need 4 B per trainable parameter here)."
        : p.weight == 4 ? "None: the weights are already fp32, so no separate master copy exists."
                        : "None: pure bf16 updates the bf16 weights directly, without an fp32 "
                          "master copy (cheaper, but small updates can round away).";
    e.items.push_back({"master_weights", 0, masterWhy, "0 B"});
    auto objectiveItem = [&](const char* key) {
        for (const auto& item : ob.items)
            if (item.key == key)
                e.items.push_back(item);
    };
    objectiveItem("reference");

    const std::string pairsWhy =
        objective.pairs
            ? cat("Each pair is two sequences, chosen and rejected, forwarded together: ",
                  options.batch, " pairs per micro-batch make ", o.batch,
                  " sequences here and in the logits. ")
            : std::string();
    std::string actsWhy =
        pairsWhy + (o.gradientCheckpointing
                        ? cat("With gradient checkpointing only each block's input is kept (",
                              formatBytes(e.activationsCheckpoint),
                              " per block) and backward recomputes one "
                              "block at a time; without it: ",
                              formatBytes(e.activationsNoCheckpointing), ".")
                        : cat("Tensors the forward pass saves so backward can compute gradients: ",
                              e.blocksStoring, " blocks x ", formatBytes(e.activationsPerBlock),
                              " plus the head; with gradient checkpointing: ",
                              formatBytes(e.activationsCheckpointing), "."));
    std::string actsFormula = cat(
        "per token per block: ", join(mainBlock.terms, " + "), " = ",
        groupDigits(mainBlock.perToken), " B (h=", h, ", q=", model.numHeads * model.headDim,
        ", i=", model.intermediateSize, ", nh=", model.numHeads, "); x ", groupDigits(tokens),
        " tokens (batch ", rowsWords(objective), " x seq ", seq,
        virtualTokens ? cat(" incl. ", virtualTokens, " virtual") : "", ")",
        mainBlock.perSequence ? cat(" + ", groupDigits(mainBlock.perSequence), " B x batch") : "",
        " = ", groupDigits(e.activationsPerBlock), " B per block");
    if (o.gradientCheckpointing)
        actsFormula += cat("; checkpoints ", layers, " x ", p.residual,
                           "h x tokens + one recomputed "
                           "block ",
                           groupDigits(recompute), " B");
    else
        actsFormula += cat("; x ", e.blocksStoring, " blocks");
    actsFormula += cat("; head (final norm, head input) ", groupDigits(e.activationsHead), " B");
    if (naiveScores)
        actsFormula += cat("; one layer's scores 2·nh·s²·", p.compute, " B x batch ",
                           groupDigits(naiveScores), " B");
    if (const int64_t mask = o.gradientCheckpointing ? maskBytes : attentionMask; mask > 0)
        actsFormula += cat("; the attention mask",
                           packedMask && windowMask ? "s (packed rows, and their window's band)"
                           : o.packing              ? " (packed rows, s² x batch)"
                                                    : " (sliding window, s²)",
                           " ", groupDigits(mask), " B");
    if (p.autocast)
        actsFormula += cat("; autocast's 16-bit weight copies kept for backward 2 B x weights ",
                           groupDigits(e.activationsWeightCopies), " B");
    actsFormula += eq(e.activations);
    e.items.push_back({"activations", e.activations, actsWhy, actsFormula});

    if (reward)
        e.items.push_back(scores);
    else if (o.loss == "chunked")
        e.items.push_back(
            {"logits", e.logits,
             "The chunked loss materialises the logits of one chunk of tokens at a "
             "time and recomputes them in backward, instead of holding the whole "
             "[tokens, vocab] matrix.",
             cat("4 B x ", groupDigits(chunk), " tokens (chunk) x ", groupDigits(v), " vocab",
                 chunkCopies ? " + fp32 copies of the 16-bit head weight/input" : "", " + 12 B x ",
                 groupDigits(o.batch * o.seq), " tokens", eq(e.logits))});
    else if (fused)
        e.items.push_back(
            {"logits", e.logits,
             "The fused loss forms the gradients while it runs, chunk by chunk: one chunk's "
             "logits and log-softmax at a time, and the gradients of the hidden states and of "
             "the head, instead of the whole [tokens, vocab] matrix kept for backward.",
             cat(p.compute == 4 ? "4 B" : cat("(", p.compute, " + 4 B)"), " x ",
                 groupDigits(fusedChunk), " tokens (chunk) x ", groupDigits(v), " vocab",
                 hiddenGradient ? " + the hidden states' gradient" : "",
                 fusedHeadGradient ? " + the head weight's gradient" : "",
                 p.autocast && !head16 ? " + a 16-bit copy of the head weight" : "",
                 eq(e.logits))});
    else
        e.items.push_back({"logits", e.logits,
                           "The loss's fp32 [tokens, vocab] buffers: backward starts with the "
                           "log-softmax cross-entropy saved and the gradients of the log-softmax "
                           "and of the logits.",
                           forwardSide > 3 * 4 * s
                               ? cat("(", p.compute, " B x (seq ", s, " + ", virtualTokens,
                                     " virtual) + 2 x 4 B x seq ", s, ") x batch ", o.batch, " x ",
                                     groupDigits(v),
                                     " vocab (the forward side: logits, fp32 copy, "
                                     "log-softmax)",
                                     eq(e.logits))
                               : cat("3 x 4 B x ", groupDigits(o.batch * o.seq), " tokens x ",
                                     groupDigits(v), " vocab", eq(e.logits))});
    if (objective.pairs && !reward)
        e.items.back().formula += cat(" (", rowsWords(objective), " sequences)");
    objectiveItem("logprobs");
    objectiveItem("head");
    e.items.push_back(
        {"overhead", e.overhead,
         o.cudaOverhead ? "CUDA context, library workspaces and caching-allocator rounding, "
                          "estimated as 512 MiB plus 5% of the rest."
                        : "None counted (no CUDA context on the CPU).",
         o.cudaOverhead ? cat("512 MiB + ", groupDigits(beforeOverhead), " B / 20", eq(e.overhead))
                        : "0 B"});

    // Inference on one device, for comparison: no gradients, no optimizer states, and instead of
    // the saved activations only the KV cache and one block's temporaries.
    {
        const int64_t d = p.compute;  // a model served in 16 bits, or fp32
        const int64_t weights = e.parametersBase * d;
        const int64_t kv =
            2 * layers * model.numKvHeads * model.headDim * options.batch * o.seq * d;
        const int64_t mlpFactor =
            gpt2 ? 2 : 3;  // gpt2: fc output and GELU; gated: gate, up, product
        const int64_t mlp = mlpFactor * options.batch * o.seq * model.intermediateSize * d;
        const int64_t nextLogits = 4 * options.batch * v;
        const int64_t before = weights + kv + mlp + nextLogits;
        const int64_t overhead = o.cudaOverhead ? 512 * kMiB + before / 20 : 0;
        e.inference = before + overhead;
        e.inferenceFormula =
            cat("weights ", groupDigits(e.parametersBase), " x ", d, " B = ", groupDigits(weights),
                " B; KV cache 2 x ", layers, " layers x ", model.numKvHeads, " KV heads x ",
                model.headDim, " head_dim x batch ", options.batch, " x seq ", o.seq, " x ", d,
                " B = ", groupDigits(kv), " B; one MLP's temporaries ", mlpFactor,
                " x batch x seq x ", model.intermediateSize, " x ", d, " B = ", groupDigits(mlp),
                " B; next-token logits 4 B x batch x ", groupDigits(v), " = ",
                groupDigits(nextLogits), " B",
                o.cudaOverhead ? cat("; overhead 512 MiB + 5 % = ", groupDigits(overhead), " B")
                               : std::string(),
                "; total ", groupDigits(e.inference), " B");
    }

    if (o.deviceMemory) {
        e.fits = e.total <= *o.deviceMemory;
        if (!*e.fits && o.advise)
            e.advice = memoryAdvice(model, run, options, e);
    }
    return e;
}

}  // namespace tb
