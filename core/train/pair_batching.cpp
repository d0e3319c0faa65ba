// Preference pairs tokenized as TRL tokenizes them and batched as [chosen..., rejected...] rows.
#include "train/pair_batching.h"

#include "util/error.h"

#include <algorithm>

namespace tb {
namespace {

size_t commonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b)
{
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n])
        ++n;
    return n;
}

// The tokens of prompt + answer (conversation or plain text), and of the prompt alone.
struct Rendered {
    std::vector<int32_t> prompt, chosen, rejected;
};

Rendered render(const PairExample& p, const Tokenizer& tok, const ChatTemplate& chat)
{
    Rendered r;
    if (p.plainText) {
        r.prompt = tok.encode(p.promptText, true);
        r.chosen = plainAnswerRowIds(p.promptText, p.chosenText, tok);
        r.rejected = plainAnswerRowIds(p.promptText, p.rejectedText, tok);
        return r;
    }
    r.prompt = chatPromptIds(chat, tok, messagesValue(p.prompt));
    r.chosen = answerRowIds(p.prompt, p.chosen, tok, chat);
    r.rejected = answerRowIds(p.prompt, p.rejected, tok, chat);
    return r;
}

}  // namespace

std::vector<int32_t> answerRowIds(const std::vector<ChatMessage>& prompt,
                                  const std::vector<ChatMessage>& answer, const Tokenizer& tok,
                                  const ChatTemplate& chat)
{
    std::vector<ChatMessage> messages = prompt;
    messages.insert(messages.end(), answer.begin(), answer.end());
    std::vector<int32_t> ids =
        tok.encode(chat.render(messagesValue(messages), false), !chat.isModel());
    // A family's text has no EOS where the tokenizer's EOS ends its assistant turns: the id is
    // appended, as tokenizeExample does. A model template writes its own end tokens.
    if (!chat.isModel() && chat.endOfTurnTokens().empty() && tok.eosId())
        ids.push_back(*tok.eosId());
    return ids;
}

std::vector<int32_t> plainAnswerRowIds(const std::string& prompt, const std::string& answer,
                                       const Tokenizer& tok)
{
    std::vector<int32_t> ids = tok.encode(prompt + answer, true);
    if (tok.eosId())
        ids.push_back(*tok.eosId());
    return ids;
}

PairSet tokenizePairs(const std::vector<PairExample>& pairs, const Tokenizer& tokenizer,
                      const ChatTemplate& chat, int maxLength)
{
    PairSet set;
    const auto max = static_cast<size_t>(maxLength);
    for (const PairExample& p : pairs) {
        Rendered r;
        try {
            r = render(p, tokenizer, chat);
        } catch (const std::exception& e) {
            set.rejected.emplace_back(p.source, cat("cannot render the pair: ", e.what()));
            continue;
        }
        // The answers start where the prompt alone and prompt + answer diverge (a template or a
        // merge across the boundary may change the prompt's last tokens).
        const size_t shared =
            std::min(commonPrefix(r.prompt, r.chosen), commonPrefix(r.prompt, r.rejected));
        PairSequence s;
        s.prompt.assign(r.prompt.begin(), r.prompt.begin() + static_cast<std::ptrdiff_t>(shared));
        s.chosen.assign(r.chosen.begin() + static_cast<std::ptrdiff_t>(shared), r.chosen.end());
        s.rejected.assign(r.rejected.begin() + static_cast<std::ptrdiff_t>(shared),
                          r.rejected.end());
        if (s.prompt.empty()) {
            set.rejected.emplace_back(p.source, "the answers share no prompt token");
            continue;
        }
        if (s.prompt.size() >= max) {
            set.rejected.emplace_back(p.source, cat("the prompt has ", s.prompt.size(),
                                                    " tokens, data.max_length is ", maxLength,
                                                    ": no answer token would fit"));
            continue;
        }
        if (s.chosen.empty() || s.rejected.empty()) {
            set.rejected.emplace_back(p.source, s.chosen.empty()
                                                    ? "the chosen answer has no token"
                                                    : "the rejected answer has no token");
            continue;
        }
        if (s.chosen == s.rejected) {
            set.rejected.emplace_back(p.source,
                                      "chosen and rejected are the same tokens: nothing to prefer");
            continue;
        }
        const size_t room = max - s.prompt.size();
        for (auto* answer : {&s.chosen, &s.rejected})
            if (answer->size() > room) {
                answer->resize(room);
                s.truncated = true;
            }
        if (s.chosen == s.rejected) {
            set.rejected.emplace_back(p.source, cat("chosen and rejected are the same within "
                                                    "data.max_length (",
                                                    maxLength, " tokens)"));
            continue;
        }
        set.truncated += s.truncated ? 1 : 0;
        set.tokens +=
            static_cast<int64_t>(2 * s.prompt.size() + s.chosen.size() + s.rejected.size());
        s.margin = p.margin;
        s.source = p.source;
        set.pairs.push_back(std::move(s));
    }
    return set;
}

PairBatch makePairBatch(const PairSet& set, const std::vector<int64_t>& indices, int32_t padId)
{
    PairBatch b;
    b.pairs = static_cast<int64_t>(indices.size());
    std::vector<const std::vector<int32_t>*> answers;
    std::vector<const PairSequence*> rows;
    for (int side = 0; side < 2; ++side)
        for (int64_t i : indices) {
            const PairSequence& p = set.pairs.at(static_cast<size_t>(i));
            rows.push_back(&p);
            answers.push_back(side == 0 ? &p.chosen : &p.rejected);
            const auto length = static_cast<int64_t>(p.prompt.size() + answers.back()->size());
            b.lengths.push_back(length);
            b.width = std::max(b.width, length);
            b.tokens += length;
        }
    for (int64_t i : indices)
        b.margins.push_back(set.pairs.at(static_cast<size_t>(i)).margin.value_or(0.0));
    const auto width = static_cast<size_t>(b.width);
    b.ids.assign(rows.size() * width, padId);
    b.labels.assign(rows.size() * width, -100);
    b.fullLabels.assign(rows.size() * width, -100);
    for (size_t r = 0; r < rows.size(); ++r) {
        const auto& prompt = rows[r]->prompt;
        const auto& answer = *answers[r];
        int64_t* ids = b.ids.data() + r * width;
        int64_t* labels = b.labels.data() + r * width;
        int64_t* fullLabels = b.fullLabels.data() + r * width;
        std::copy(prompt.begin(), prompt.end(), ids);
        std::copy(answer.begin(), answer.end(), ids + prompt.size());
        const size_t length = prompt.size() + answer.size();
        for (size_t t = 0; t + 1 < length; ++t)
            fullLabels[t] = ids[t + 1];
        // Position t predicts token t + 1: the answer's tokens are predicted from the prompt's
        // last token onwards.
        for (size_t k = 0; k < answer.size(); ++k)
            labels[prompt.size() + k - 1] = answer[k];
    }
    return b;
}

}  // namespace tb
