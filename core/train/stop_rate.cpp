// The stop rate of a model on held-out conversations (greedy, bounded budget).
#include "train/stop_rate.h"

#include "model/model.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>

namespace tb {

std::vector<Example> stopProbeExamples(const std::vector<Example>& examples, size_t limit)
{
    std::vector<Example> out;
    for (const Example& e : examples) {
        if (out.size() >= limit)
            break;
        if (!e.plainText && !e.messages.empty() && e.messages.back().role == "assistant")
            out.push_back(e);
    }
    return out;
}

StopRate measureStopRate(const Model& model, const Tokenizer& tokenizer, const ChatTemplate& chat,
                         const std::vector<Example>& examples)
{
    StopRate r;
    GenerateOptions o;
    o.greedy = true;
    o.stopTokenIds = chatStopIds(chat, tokenizer);
    for (const Example& e : examples) {
        if (e.plainText || e.messages.empty() || e.messages.back().role != "assistant")
            continue;
        const std::vector<ChatMessage> before(e.messages.begin(), e.messages.end() - 1);
        const std::vector<int32_t> prompt = chatPromptIds(chat, tokenizer, messagesValue(before));
        const auto answer =
            static_cast<int>(tokenizer.encode(e.messages.back().content, false).size());
        o.maxNewTokens = std::min(256, 2 * answer + 16);
        const GenerateResult g = model.generate(prompt, o, &tokenizer);
        ++r.prompts;
        if (g.stopReason == "eos")
            ++r.stopped;
    }
    return r;
}

}  // namespace tb
