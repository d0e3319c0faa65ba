// Generation with a KV cache: greedy or sampled (temperature, top-k, top-p, repetition penalty,
// seed), stopping at EOS, a token budget or stop strings, streaming each token to a callback.
#include "model/model_impl.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <chrono>
#include <unordered_set>

namespace tb {
namespace {

// Next token from one row of logits [vocab] (fp32, CPU).
int64_t pickToken(torch::Tensor logits, const GenerateOptions& o,
                  const std::vector<int64_t>& history, at::Generator& gen)
{
    if (o.repetitionPenalty != 1.0 && !history.empty()) {
        auto idx = torch::tensor(history, torch::kInt64);
        auto seen = logits.index_select(0, idx);
        seen = torch::where(seen < 0, seen * o.repetitionPenalty, seen / o.repetitionPenalty);
        logits.index_put_({idx}, seen);
    }
    if (o.greedy || o.temperature <= 0.0)
        return logits.argmax().item<int64_t>();
    logits = logits / o.temperature;
    if (o.topK > 0 && o.topK < logits.size(0)) {
        auto kth = std::get<0>(logits.topk(o.topK)).min();
        logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
    }
    if (o.topP < 1.0) {
        auto [sorted, order] = logits.sort(/*dim=*/0, /*descending=*/true);
        auto cumulative = sorted.softmax(0).cumsum(0);
        // Drop tokens once the mass before them already reaches top_p; always keep the best one.
        auto drop = (cumulative - sorted.softmax(0)) >= o.topP;
        drop[0] = false;
        auto mask = torch::zeros_like(drop).scatter(0, order, drop);
        logits = logits.masked_fill(mask, -std::numeric_limits<float>::infinity());
    }
    auto probs = logits.softmax(0);
    return at::multinomial(probs, 1, false, gen).item<int64_t>();
}

bool endsWithIncompleteChar(const std::string& text)
{
    // U+FFFD as UTF-8: a decoder's stand-in for bytes that do not yet form a character.
    return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

GenerateResult Model::generate(const std::vector<int32_t>& prompt, const GenerateOptions& o,
                               const Tokenizer* tokenizer, const TokenCallback& onToken) const
{
    if (prompt.empty())
        fail("generate: the prompt has no tokens");
    if (!o.stopStrings.empty() && !tokenizer)
        fail("generate: stop strings need a tokenizer");
    if (o.maxNewTokens < 0)
        fail("generate: max new tokens must not be negative");
    torch::InferenceMode guard;
    auto& module = *m_impl->module;
    const auto& cfg = module.config();

    std::unordered_set<int64_t> eos(cfg.eosTokenIds.begin(), cfg.eosTokenIds.end());
    if (tokenizer && tokenizer->eosId())
        eos.insert(*tokenizer->eosId());
    eos.insert(o.stopTokenIds.begin(), o.stopTokenIds.end());

    std::vector<int64_t> history(prompt.begin(), prompt.end());
    for (int64_t id : history)
        if (id < 0 || id >= cfg.vocabSize)
            fail("token id ", id, " is outside the vocabulary (", cfg.vocabSize, ")");
    auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);

    GenerateResult result;
    result.stopReason = "max_tokens";
    result.prefillTokens = static_cast<int64_t>(prompt.size());
    KVCache cache;
    using Clock = std::chrono::steady_clock;

    auto t0 = Clock::now();
    auto input = torch::tensor(history, torch::kInt64).unsqueeze(0).to(m_impl->device);
    auto last = module.forwardLast(input, &cache).squeeze(0).to(torch::kCPU, torch::kFloat32);
    auto t1 = Clock::now();
    result.prefillSeconds = std::chrono::duration<double>(t1 - t0).count();

    std::string emitted;  // text already passed to the callback
    for (int step = 0; step < o.maxNewTokens; ++step) {
        if (step > 0) {
            if (cache.length >= cfg.maxPositions) {
                result.stopReason = "context_full";
                break;
            }
            auto next =
                torch::tensor({history.back()}, torch::kInt64).view({1, 1}).to(m_impl->device);
            last = module.forwardLast(next, &cache).squeeze(0).to(torch::kCPU, torch::kFloat32);
        }
        const int64_t token = pickToken(last.clone(), o, history, gen);
        if (o.stopAtEos && eos.count(token)) {
            result.stopReason = "eos";
            break;
        }
        history.push_back(token);
        result.tokens.push_back(static_cast<int32_t>(token));

        std::string piece;
        bool stop = false;
        if (tokenizer) {
            std::string text = tokenizer->decode(result.tokens, true);
            for (const auto& s : o.stopStrings) {
                auto pos = text.find(s);
                if (!s.empty() && pos != std::string::npos) {
                    text.resize(pos);
                    stop = true;
                }
            }
            if ((stop || !endsWithIncompleteChar(text)) && text.size() >= emitted.size() &&
                text.compare(0, emitted.size(), emitted) == 0) {
                piece = text.substr(emitted.size());
                emitted = text;
            }
            result.text = text;
        }
        if (onToken && !onToken(static_cast<int32_t>(token), piece)) {
            result.stopReason = "cancelled";
            break;
        }
        if (stop) {
            result.stopReason = "stop_string";
            break;
        }
    }
    result.decodeSeconds = std::chrono::duration<double>(Clock::now() - t1).count();
    return result;
}

}  // namespace tb
