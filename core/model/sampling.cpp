// Token picking (greedy, temperature, top-k, top-p, repetition penalty) and one sequence's stop
// rules and text, shared by generate() and generateBatch().
#include "model/sampling.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <cmath>
#include <limits>

namespace tb {

namespace {

bool endsWithIncompleteChar(const std::string& text)
{
    // U+FFFD as UTF-8: a decoder's stand-in for bytes that do not yet form a character.
    return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

void checkGenerateRequest(const std::vector<int32_t>& prompt, const GenerateOptions& o,
                          const Tokenizer* tokenizer, int64_t vocab, const char* what)
{
    if (prompt.empty())
        fail(what, ": the prompt has no tokens");
    if (!o.stopStrings.empty() && !tokenizer)
        fail(what, ": stop strings need a tokenizer");
    if (o.maxNewTokens < 0)
        fail(what, ": max new tokens must not be negative");
    if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
        fail(what, ": temperature must be 0 (greedy) or positive, found ", o.temperature);
    if (o.topK < 0)
        fail(what, ": top-k must be 0 (off) or positive, found ", o.topK);
    if (!(o.topP > 0 && o.topP <= 1))
        fail(what, ": top-p must be in (0, 1], found ", o.topP);
    if (!(o.repetitionPenalty > 0) || !std::isfinite(o.repetitionPenalty))
        fail(what, ": repetition penalty must be positive (1 = off), found ", o.repetitionPenalty);
    for (int64_t id : prompt)
        if (id < 0 || id >= vocab)
            fail("token id ", id, " is outside the vocabulary (", vocab, ")");
}

std::unordered_set<int64_t> stopTokenSet(const ModelConfig& config, const GenerateOptions& o,
                                         const Tokenizer* tokenizer)
{
    std::unordered_set<int64_t> ids(config.eosTokenIds.begin(), config.eosTokenIds.end());
    if (tokenizer && tokenizer->eosId())
        ids.insert(*tokenizer->eosId());
    ids.insert(o.stopTokenIds.begin(), o.stopTokenIds.end());
    return ids;
}

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
    // Shifted by the maximum first: a tiny temperature then sends the others to -inf (sampling
    // becomes greedy) instead of the maximum to +inf (a NaN softmax).
    logits = (logits - logits.max()) / o.temperature;
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

GenerationRow::GenerationRow(const std::vector<int32_t>& prompt, const GenerateOptions& options,
                             const Tokenizer* tokenizer, const std::unordered_set<int64_t>& stopIds)
    : m_options(options), m_tokenizer(tokenizer), m_stopIds(stopIds),
      m_history(prompt.begin(), prompt.end()),
      m_gen(at::make_generator<at::CPUGeneratorImpl>(options.seed))
{
    result.stopReason = "max_tokens";
    result.prefillTokens = static_cast<int64_t>(prompt.size());
}

int64_t GenerationRow::pick(const torch::Tensor& logits)
{
    return pickToken(logits.clone(), m_options, m_history, m_gen);
}

TokenOutcome GenerationRow::accept(int64_t token)
{
    TokenOutcome out;
    if (m_options.stopAtEos && m_stopIds.count(token)) {
        out.eos = true;
        return out;
    }
    m_history.push_back(token);
    result.tokens.push_back(static_cast<int32_t>(token));
    if (!m_tokenizer)
        return out;
    std::string text = m_tokenizer->decode(result.tokens, true);
    for (const auto& s : m_options.stopStrings) {
        auto pos = text.find(s);
        if (!s.empty() && pos != std::string::npos) {
            text.resize(pos);
            out.stopString = true;
        }
    }
    if ((out.stopString || !endsWithIncompleteChar(text)) && text.size() >= m_emitted.size() &&
        text.compare(0, m_emitted.size(), m_emitted) == 0) {
        out.piece = text.substr(m_emitted.size());
        m_emitted = text;
    }
    result.text = text;
    return out;
}

}  // namespace tb
