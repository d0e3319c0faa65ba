// Generation with a KV cache: greedy or sampled (temperature, top-k, top-p, repetition penalty,
// seed), stopping at EOS, a token budget or stop strings, streaming each token to a callback.
#include "model/model_impl.h"
#include "model/sampling.h"

#include <chrono>

namespace tb {

GenerateResult Model::generate(const std::vector<int32_t>& prompt, const GenerateOptions& o,
                               const Tokenizer* tokenizer, const TokenCallback& onToken) const
{
    auto& module = *m_impl->module;
    const auto& cfg = module.config();
    checkGenerateRequest(prompt, o, tokenizer, cfg.vocabSize, "generate");
    torch::InferenceMode guard;
    const auto stopIds = stopTokenSet(cfg, o, tokenizer);
    GenerationRow row(prompt, o, tokenizer, stopIds);
    GenerateResult& result = row.result;
    KVCache cache;
    using Clock = std::chrono::steady_clock;

    // ids [1, n] -> the last position's logits [vocab], fp32 on the CPU.
    auto lastLogits = [&](const torch::Tensor& ids) {
        return module.forwardLast(ids.to(m_impl->device), &cache)
            .squeeze(0)
            .to(torch::kCPU, torch::kFloat32);
    };
    // Every position of the sequence so far, into an empty cache.
    auto prefill = [&] {
        cache.clear();
        return lastLogits(torch::tensor(row.history(), torch::kInt64).unsqueeze(0));
    };
    auto t0 = Clock::now();
    auto last = prefill();
    auto t1 = Clock::now();
    result.prefillSeconds = std::chrono::duration<double>(t1 - t0).count();

    for (int step = 0; step < o.maxNewTokens; ++step) {
        if (step > 0) {
            if (cache.length >= cfg.maxPositions) {
                result.stopReason = "context_full";
                break;
            }
            if (longRopeSwitches(cfg, cache.length)) {
                // The sequence leaves LongRoPE's original context: every position again with the
                // long factors, as transformers' generate() drops its cache there.
                last = prefill();
            } else {
                last =
                    lastLogits(torch::tensor({row.history().back()}, torch::kInt64).view({1, 1}));
            }
        }
        const int64_t token = row.pick(last);
        const TokenOutcome outcome = row.accept(token);
        if (outcome.eos) {
            result.stopReason = "eos";
            break;
        }
        if (onToken && !onToken(static_cast<int32_t>(token), outcome.piece)) {
            result.stopReason = "cancelled";
            break;
        }
        if (outcome.stopString) {
            result.stopReason = "stop_string";
            break;
        }
    }
    result.decodeSeconds = std::chrono::duration<double>(Clock::now() - t1).count();
    return result;
}

}  // namespace tb
