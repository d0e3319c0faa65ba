// Example formats and tokenization with loss masks.
#include "data/example.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <algorithm>

namespace tb {

const char* exampleFormatName(ExampleFormat format)
{
    switch (format) {
    case ExampleFormat::Auto:
        return "auto";
    case ExampleFormat::Alpaca:
        return "alpaca";
    case ExampleFormat::Messages:
        return "messages";
    case ExampleFormat::PromptCompletion:
        return "prompt_completion";
    case ExampleFormat::Text:
        return "text";
    }
    return "auto";
}

std::optional<ExampleFormat> parseExampleFormat(const std::string& name)
{
    for (ExampleFormat f : {ExampleFormat::Auto, ExampleFormat::Alpaca, ExampleFormat::Messages,
                            ExampleFormat::PromptCompletion, ExampleFormat::Text})
        if (name == exampleFormatName(f))
            return f;
    if (name == "chat")
        return ExampleFormat::Messages;
    return std::nullopt;
}

// Each segment is encoded on its own (addSpecial=false) so a token never straddles a
// prompt/response boundary and the mask lines up with the ids exactly. Sentencepiece adds its
// dummy-prefix space at the start of every encode call, so "Q\n" + "A" becomes pieces of "Q\n" then
// "▁A": not the pieces of the joined string, but the same ones generation sees when the prompt ends
// the input and the model writes the answer, and decoding gives back the text (with a space after a
// segment break).
TokenizedExample tokenizeExample(const Tokenizer& tokenizer, const Example& example,
                                 const TokenizeOptions& options)
{
    TokenizedExample out;
    auto push = [&](int32_t id, bool loss) {
        out.ids.push_back(id);
        out.lossMask.push_back(loss ? 1 : 0);
    };
    auto pushText = [&](const std::string& text, bool loss) {
        for (int32_t id : tokenizer.encode(text, false))
            push(id, loss);
    };

    // BOS only when the tokenizer itself would add it (add_bos_token); it is never predicted.
    const std::optional<int32_t> bos = tokenizer.bosId();
    if (bos) {
        const std::vector<int32_t> probe = tokenizer.encode("a", true);
        if (!probe.empty() && probe.front() == *bos)
            push(*bos, false);
    }
    const std::optional<int32_t> eos = options.addEos ? tokenizer.eosId() : std::nullopt;

    if (example.plainText) {
        for (const ChatMessage& m : example.messages)
            pushText(m.content, true);
        if (eos)
            push(*eos, true);
    } else {
        for (const ChatSegment& seg : renderChat(options.family, example.messages, false, "", "")) {
            const bool loss = seg.trainable || !options.lossOnResponsesOnly;
            pushText(seg.text, loss);
            // A turn that already ends in a special token (ChatML <|im_end|>, Llama-3 <|eot_id|>
            // when the tokenizer knows them) has its stop token; every other one gets EOS.
            if (seg.trainable && eos && !(!out.ids.empty() && tokenizer.isSpecial(out.ids.back())))
                push(*eos, true);
        }
    }

    if (options.maxLength > 0 && out.ids.size() > static_cast<size_t>(options.maxLength)) {
        out.ids.resize(options.maxLength);
        out.lossMask.resize(options.maxLength);
        out.truncated = true;
    }
    return out;
}

}  // namespace tb
