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
namespace {

// How many leading ids the text before `boundary` shares with the whole text's ids: the index of
// the first token at or across the boundary.
size_t sharedPrefix(const Tokenizer& tokenizer, const std::string& text, size_t boundary,
                    const std::vector<int32_t>& ids, bool* exact)
{
    *exact = true;
    if (boundary == 0)
        return 0;
    const std::vector<int32_t> prefix = tokenizer.encode(text.substr(0, boundary), false);
    size_t n = 0;
    while (n < prefix.size() && n < ids.size() && prefix[n] == ids[n])
        ++n;
    *exact = n == prefix.size();
    return n;
}

// The model's own template: the whole conversation tokenized as one text (transformers'
// apply_chat_template(tokenize=True)); a token carries loss when it overlaps an assistant span.
}  // namespace

TokenizedExample tokenizeMessages(const Tokenizer& tokenizer, const jinja::Value& messages,
                                  const jinja::Value& tools, const TokenizeOptions& options)
{
    if (!options.modelTemplate)
        fail("tokenizeMessages: needs the model's own template");
    const std::vector<ChatSegment> segments =
        options.modelTemplate->segments(messages, options.trainOn, tools);
    std::string text;
    std::vector<std::pair<size_t, size_t>> spans;  // byte ranges of trainable segments
    for (const ChatSegment& s : segments) {
        if (s.trainable)
            spans.emplace_back(text.size(), text.size() + s.text.size());
        text += s.text;
    }
    TokenizedExample out;
    out.ids = tokenizer.encode(text, false);
    out.lossMask.assign(out.ids.size(), options.lossOnResponsesOnly ? 0 : 1);
    if (!out.ids.empty() && tokenizer.bosId() && out.ids.front() == *tokenizer.bosId())
        out.lossMask.front() = 0;  // never predicted
    if (options.lossOnResponsesOnly)
        for (const auto& [begin, end] : spans) {
            bool exact = true;
            const size_t first = sharedPrefix(tokenizer, text, begin, out.ids, &exact);
            size_t last = sharedPrefix(tokenizer, text, end, out.ids, &exact);
            if (!exact)
                ++last;  // the token across the span's end overlaps it
            for (size_t i = first; i < std::min(last, out.ids.size()); ++i)
                out.lossMask[i] = 1;
        }
    return out;
}

TokenizedExample tokenizeExample(const Tokenizer& tokenizer, const Example& example,
                                 const TokenizeOptions& options)
{
    if (options.modelTemplate && !example.plainText) {
        TokenizedExample out;
        try {
            out = tokenizeMessages(tokenizer, messagesValue(example.messages), nullptr, options);
        } catch (const Error& e) {
            if (example.source.empty())
                throw;
            fail(example.source, ": ", e.what());
        }
        if (options.maxLength > 0 && out.ids.size() > static_cast<size_t>(options.maxLength)) {
            out.ids.resize(options.maxLength);
            out.lossMask.resize(options.maxLength);
            out.truncated = true;
        }
        return out;
    }
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
        const std::vector<ChatSegment> segments =
            renderChat(options.family, example.messages, false);
        // data.train_on last: only the last assistant turn carries loss.
        const auto lastTurn = std::find_if(segments.rbegin(), segments.rend(),
                                           [](const ChatSegment& s) { return s.trainable; });
        for (auto it = segments.begin(); it != segments.end(); ++it) {
            const bool assistant = it->trainable;
            const bool trains =
                assistant && (options.trainOn == TrainOn::All || std::next(it) == lastTurn.base());
            const bool loss = trains || !options.lossOnResponsesOnly;
            pushText(it->text, loss);
            // A turn that already ends in a special token (ChatML <|im_end|>, Llama-3 <|eot_id|>
            // when the tokenizer knows them) has its stop token; every other one gets EOS.
            if (assistant && eos && !(!out.ids.empty() && tokenizer.isSpecial(out.ids.back())))
                push(*eos, loss);
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
