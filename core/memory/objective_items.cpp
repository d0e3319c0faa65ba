// The memory items of preference objectives and reward models: reference, logprobs, head.
#include "memory/objective_items.h"

#include "util/error.h"

#include <algorithm>

namespace tb {
namespace {

bool isOneOf(const std::string& value, std::initializer_list<const char*> names)
{
    for (const char* n : names)
        if (value == n)
            return true;
    return false;
}

std::string eq(int64_t bytes)
{
    return cat(" = ", groupDigits(bytes), " B");
}

}  // namespace

ObjectiveShape objectiveShape(const MethodOptions& method, const EstimateOptions& o)
{
    if (!isOneOf(o.objective, {"sft", "dpo", "ipo", "simpo", "orpo", "reward"}))
        fail("objective is '", o.objective, "' (allowed: sft, dpo, ipo, simpo, orpo, reward)");
    if (!isOneOf(o.reference, {"none", "auto", "off", "copy", "precomputed"}))
        fail("reference is '", o.reference, "' (allowed: auto, off, copy, precomputed)");
    ObjectiveShape s;
    s.objective = o.objective;
    s.pairs = o.objective != "sft";
    s.reward = o.objective == "reward";
    s.logprobs = s.pairs && !s.reward;
    s.pairsPerMicroBatch = s.pairs ? o.batch : 0;
    s.rows = s.pairs ? 2 * o.batch : o.batch;
    const bool peft = method.method == Method::Lora || method.method == Method::Adapter ||
                      method.method == Method::Prompt;
    const bool needsReference = o.objective == "dpo" || o.objective == "ipo";
    if (!needsReference) {
        if (o.reference != "none" && o.reference != "auto")
            fail("reference is '", o.reference, "' but objective ", o.objective,
                 " has no reference model (only dpo and ipo have one)");
        return s;
    }
    s.reference =
        o.reference == "none" || o.reference == "auto" ? (peft ? "off" : "copy") : o.reference;
    if (s.reference == "off" && !peft)
        fail("reference is 'off' but method ", methodName(method.method),
             " changes the base weights themselves: nothing to switch off (use copy or "
             "precomputed)");
    return s;
}

std::string rowsWords(const ObjectiveShape& s)
{
    if (!s.pairs)
        return std::to_string(s.rows);
    return cat(s.rows, " (2 x ", s.pairsPerMicroBatch, " pair",
               s.pairsPerMicroBatch == 1 ? "" : "s", ": chosen and rejected)");
}

ObjectiveBytes objectiveBytes(const ModelConfig& model, const ObjectiveShape& s,
                              const EstimateOptions& o, const ObjectiveWidths& w,
                              int64_t parametersBase)
{
    ObjectiveBytes b;
    const int64_t rows = s.rows, seq = o.seq, tokens = rows * seq, v = model.vocabSize;
    const int64_t h = model.hiddenSize, pairs = s.pairsPerMicroBatch;
    const int64_t gpus = o.gpus;
    auto shard = [gpus](int64_t bytes) { return (bytes + gpus - 1) / gpus; };

    if (s.reference == "copy") {
        b.reference = parametersBase * w.weight;
        if (o.zero >= 3)
            b.reference = shard(b.reference);
        b.items.push_back(
            {"reference", b.reference,
             cat("A frozen second copy of the base weights, in the weights' dtype (", w.weight,
                 " B each), gives the reference log-probabilities in one extra no-grad forward "
                 "per micro-batch; it needs no gradient and no optimizer state",
                 o.zero >= 3 ? cat("; ZeRO-3 gives each GPU 1/", gpus) : std::string(), "."),
             cat(groupDigits(parametersBase), " base parameters x ", w.weight, " B",
                 o.zero >= 3 ? cat(" / ", gpus, " GPUs") : std::string(), eq(b.reference))});
    } else if (s.reference == "off") {
        b.items.push_back({"reference", 0,
                           "None: the reference is the policy itself with its LoRA, adapters or "
                           "prompt switched off for one extra no-grad forward per micro-batch, "
                           "so no second copy of the weights exists.",
                           "0 B (the weights item holds the base once)"});
    } else if (s.reference == "precomputed") {
        b.items.push_back(
            {"reference", 0,
             "None on the device: one no-grad pass before the first step stores each pair's two "
             "reference log-probabilities (chosen, rejected), held on the host and copied in "
             "with each micro-batch; no reference model in memory during training.",
             cat("0 B on the device; host: 2 x 4 B per pair of the training set (",
                 groupDigits(2 * 4 * pairs), " B for this micro-batch's ", pairs, " pairs)")});
    }

    // The reference pass (off, copy): no autograd, so only its largest temporaries live, before
    // the policy's forward: the logits with their fp32 copy and log-softmax (or the chunked
    // loss's chunk), one MLP's temporaries and the residual stream in and out.
    if (s.reference == "off" || s.reference == "copy") {
        const bool chunked = o.loss == "chunked";
        const int64_t chunk = std::min(o.lossChunk, tokens);
        const int64_t perLogit = w.compute + (w.compute != 4 ? 4 : 0) + 4;
        const int64_t logits = chunked ? 4 * chunk * v + 12 * tokens : perLogit * tokens * v;
        // Phi-3's gate_up_proj output stays beside its gate and up copies.
        const int64_t mlpFactor = model.architecture == Architecture::Gpt2 ? 2
                                  : model.fusedProjections()               ? 5
                                                                           : 3;
        const int64_t mlp = mlpFactor * w.compute * model.intermediateSize * tokens;
        const int64_t residual = 2 * w.residual * h * tokens;
        b.referenceForward = logits + mlp + residual;
        b.referenceForwardWhat = cat(
            "the no-grad reference forward: ",
            chunked ? cat("one chunk's fp32 logits 4 B x ", groupDigits(chunk), " x ",
                          groupDigits(v), " + 12 B x ", groupDigits(tokens), " tokens")
                    : cat(w.compute != 4 ? "logits, their fp32 copy and log-softmax "
                                         : "logits and log-softmax ",
                          perLogit, " B x ", groupDigits(tokens), " tokens x ", groupDigits(v),
                          " vocab"),
            " + one MLP's temporaries + the residual stream (", formatBytes(mlp + residual), ")");
    }

    if (s.logprobs) {
        const int64_t sums = s.reference != "none" ? 2 : 1;
        b.logprobs = 4 * tokens + sums * 4 * rows;
        b.items.push_back({"logprobs", b.logprobs,
                           cat("The per-token log-probabilities of the answers' labels, [", rows,
                               ", ", seq, "] fp32, kept for backward, and their sum per sequence",
                               sums == 2 ? " for the policy and for the reference" : "",
                               ", from which the pair loss is formed."),
                           cat("4 B x ", rowsWords(s), " sequences x seq ", seq, " + ", sums,
                               " x 4 B x ", rows, " sums", eq(b.logprobs))});
    }

    if (s.reward) {
        b.headParameters = h;
        const int64_t weight = h * w.weight, grad = h * w.grad;
        const int64_t states = h * w.statesPerParameter * w.state;
        b.headWeight = weight;
        b.headGradient = grad;
        b.headStates = states;
        b.head = weight + grad + states;
        b.items.push_back(
            {"head", b.head,
             cat("The reward model's scalar head score.weight [1, ", h,
                 "], trainable whatever the method: its weight, gradient and ",
                 w.statesPerParameter, " optimizer state", w.statesPerParameter == 1 ? "" : "s",
                 " per parameter."),
             cat(h, " parameters x (", w.weight, " B weight + ", w.grad, " B gradient + ",
                 w.statesPerParameter, " x ", w.state, " B states)", eq(b.head))});
    }
    return b;
}

MemoryItem rewardScoresItem(const ModelConfig& model, const ObjectiveShape& s,
                            const ObjectiveWidths& w)
{
    const int64_t h = model.hiddenSize;
    const int64_t input = w.autocast ? w.compute : w.residual;
    const int64_t bytes = input * s.rows * h + 4 * s.rows;
    return {"logits", bytes,
            "A reward model has no [tokens, vocab] logits: the scalar head reads each sequence's "
            "last hidden state, so only that input (kept for the head's gradient) and one fp32 "
            "score per sequence exist.",
            cat(input, " B x ", rowsWords(s), " sequences x ", h, " hidden + 4 B x ", s.rows,
                " scores", eq(bytes))};
}

}  // namespace tb
