// Memory advice (the changes that make a run fit, each re-estimated) and byte-size words.
#include "memory/estimator.h"

#include "peft/trainable_count.h"
#include "util/error.h"
#include "util/join.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace tb {
namespace {

// Total of `method` with `options`, without advice of its own.
int64_t totalOf(const ModelConfig& model, const MethodOptions& method, EstimateOptions options)
{
    options.advise = false;
    return estimateMemory(model, method, options).total;
}

MethodOptions loraInstead(const MethodOptions& method)
{
    MethodOptions lora = method;
    lora.method = Method::Lora;
    lora.lora = LoraOptions{};  // r=8 on the default targets
    return lora;
}

}  // namespace

std::vector<std::string> memoryAdvice(const ModelConfig& model, const MethodOptions& method,
                                      const EstimateOptions& options,
                                      const MemoryEstimate& estimate)
{
    std::vector<std::string> advice;
    if (!options.deviceMemory || estimate.total <= *options.deviceMemory)
        return advice;
    const int64_t limit = *options.deviceMemory;
    auto fits = [limit](int64_t total) { return total <= limit; };
    const bool wholeModel = method.method == Method::Full || method.method == Method::Partial;
    const bool pairs = options.objective != "sft";
    // LoRA instead of a whole model switches a copied reference off (no second copy needed).
    const bool copied = estimate.reference == "copy";
    auto asLora = [&](EstimateOptions o) {
        if (copied)
            o.reference = "off";
        return o;
    };

    if (options.loss == "full") {
        EstimateOptions o = options;
        o.loss = "chunked";
        const int64_t t = totalOf(model, method, o);
        if (fits(t))
            advice.push_back(cat("Use the chunked loss (--loss chunked), which holds the logits "
                                 "of one chunk of tokens at a time: total ",
                                 formatBytes(t), "."));
    }
    if (!options.gradientCheckpointing) {
        EstimateOptions o = options;
        o.gradientCheckpointing = true;
        const int64_t t = totalOf(model, method, o);
        if (fits(t))
            advice.push_back(cat("Turn on gradient checkpointing (--grad-checkpointing), about a "
                                 "third more compute: total ",
                                 formatBytes(t), "."));
    }
    // Halve the micro-batch and double the accumulation until it fits: the same sequences per step.
    for (EstimateOptions o = options; o.batch > 1;) {
        o.batch = (o.batch + 1) / 2;
        o.gradAccum *= 2;
        const int64_t t = totalOf(model, method, o);
        if (fits(t)) {
            advice.push_back(cat("Use micro-batch ", o.batch, " with ", o.gradAccum,
                                 " accumulation steps (--batch ", o.batch, " --grad-accum ",
                                 o.gradAccum, "), about the same ",
                                 options.batch * options.gradAccum, pairs ? " pairs" : " sequences",
                                 " per optimizer step: total ", formatBytes(t), "."));
            break;
        }
    }
    // DPO, IPO: the reference's frozen copy of the weights is the largest thing to drop.
    if (copied) {
        EstimateOptions o = options;
        o.reference = "precomputed";
        const int64_t t = totalOf(model, method, o);
        if (fits(t))
            advice.push_back(cat("Precompute the reference log-probabilities (\"preference\": "
                                 "{\"reference\": \"precomputed\"}, --reference precomputed): one "
                                 "no-grad pass before training stores 8 B per pair on the host, "
                                 "and the reference copy of the weights (",
                                 formatBytes(estimate.referenceWeights),
                                 ") is never loaded: total ", formatBytes(t), "."));
    }
    if (wholeModel) {
        const MethodOptions lora = loraInstead(method);
        const int64_t t = totalOf(model, lora, asLora(options));
        if (fits(t))
            advice.push_back(cat("Train LoRA r=8 on ",
                                 join(resolvedLoraTargets(model, lora.lora), ","), " instead of ",
                                 methodName(method.method), " fine-tuning (--method lora",
                                 copied ? " --reference off" : "", ")",
                                 copied ? cat(", the reference being the policy with its LoRA "
                                              "switched off (no copy of the weights)")
                                        : std::string(),
                                 ": total ", formatBytes(t), "."));
    }
    // ZeRO: the fewest GPUs, then the lowest stage, that fit.
    bool zeroFound = false;
    for (int64_t k : {int64_t(2), int64_t(4), int64_t(8)}) {
        if (k < options.gpus || zeroFound)
            continue;
        for (int z = 1; z <= 3 && !zeroFound; ++z) {
            if (k == options.gpus && z <= options.zero)
                continue;
            EstimateOptions o = options;
            o.gpus = k;
            o.zero = z;
            const int64_t t = totalOf(model, method, o);
            if (fits(t)) {
                advice.push_back(cat("Shard with ZeRO-", z, " on ", k, " GPUs (--gpus ", k,
                                     " --zero ", z, "): ", formatBytes(t), " per GPU."));
                zeroFound = true;
            }
        }
    }
    if (advice.empty()) {
        // No single change fits: try the cheap ones together.
        EstimateOptions o = options;
        o.gradientCheckpointing = true;
        o.loss = "chunked";
        o.gradAccum = options.batch * options.gradAccum;
        o.batch = 1;
        const MethodOptions m = wholeModel ? loraInstead(method) : method;
        const int64_t t = totalOf(model, m, wholeModel ? asLora(o) : o);
        if (fits(t))
            advice.push_back(cat("Combine the chunked loss and gradient checkpointing with "
                                 "micro-batch 1 and ",
                                 o.gradAccum, " accumulation steps",
                                 wholeModel ? (copied ? " and LoRA r=8 with the reference switched "
                                                        "off (--method lora --reference off)"
                                                      : " and LoRA r=8 (--method lora)")
                                            : "",
                                 " (--loss chunked --grad-checkpointing --batch 1 --grad-accum ",
                                 o.gradAccum, "): total ", formatBytes(t), "."));
    }
    return advice;
}

int64_t parseByteSize(const std::string& text)
{
    auto bad = [&text]() -> int64_t {
        fail("cannot read the size '", text, "' (examples: 24GiB, 24G, 24GB, 80e9, 25769803776)");
    };
    size_t used = 0;
    double number = 0;
    try {
        number = std::stod(text, &used);
    } catch (const std::exception&) {
        return bad();
    }
    std::string unit;
    for (size_t i = used; i < text.size(); ++i)
        if (!std::isspace(static_cast<unsigned char>(text[i])))
            unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    const double kibi = 1024.0;
    double scale = 0;
    if (unit.empty() || unit == "b")
        scale = 1;
    else if (unit == "k" || unit == "kib")
        scale = kibi;
    else if (unit == "kb")
        scale = 1e3;
    else if (unit == "m" || unit == "mib")
        scale = kibi * kibi;
    else if (unit == "mb")
        scale = 1e6;
    else if (unit == "g" || unit == "gib")
        scale = kibi * kibi * kibi;
    else if (unit == "gb")
        scale = 1e9;
    else if (unit == "t" || unit == "tib")
        scale = kibi * kibi * kibi * kibi;
    else if (unit == "tb")
        scale = 1e12;
    else
        return bad();
    const double bytes = std::round(number * scale);
    if (!std::isfinite(bytes) || bytes < 1 || bytes > 9e18)
        return bad();
    return static_cast<int64_t>(bytes);
}

std::string formatBytes(int64_t bytes)
{
    const double b = static_cast<double>(bytes);
    const double kibi = 1024.0;
    char buffer[64];
    if (std::abs(b) >= kibi * kibi * kibi)
        std::snprintf(buffer, sizeof buffer, "%.2f GiB", b / (kibi * kibi * kibi));
    else if (std::abs(b) >= kibi * kibi)
        std::snprintf(buffer, sizeof buffer, "%.1f MiB", b / (kibi * kibi));
    else if (std::abs(b) >= kibi)
        std::snprintf(buffer, sizeof buffer, "%.1f KiB", b / kibi);
    else
        std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
    return buffer;
}

std::string groupDigits(int64_t value)
{
    std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

std::string trainingMemoryPrimer()
{
    return "Why training needs more memory than inference: inference keeps the weights and one "
           "layer's temporaries at a time. Training also keeps, for every trainable parameter, a "
           "gradient (written by backward, read by the optimizer) and the optimizer's state "
           "(AdamW: two running averages), and it keeps every block's activations from the "
           "forward pass until backward has used them. In fp32 with AdamW, full fine-tuning "
           "needs 4 + 4 + 8 = 16 bytes per parameter before any activation: 64 GB for a "
           "4B-parameter model, 19.2 GB for a 1.2B one. LoRA, adapters and prompt tuning freeze "
           "the base model, so gradients and optimizer states shrink to their few trainable "
           "parameters; gradient checkpointing recomputes activations instead of keeping them; "
           "ZeRO splits optimizer states, gradients and weights over GPUs.";
}

}  // namespace tb
