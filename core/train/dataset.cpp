// Training data: reads JSONL examples, tokenizes them with loss masks, builds (packed)
// label-shifted sequences and padded batches, and orders them per epoch with a platform-independent
// shuffle.
#include "train/dataset.h"

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

namespace tb {
namespace {

using nlohmann::json;

constexpr int32_t kIgnore = -100; // label of a position that takes no loss (PyTorch's ignore_index)

// Byte offset of the first invalid UTF-8 sequence in s, or -1 when s is valid UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF).
std::ptrdiff_t invalidUtf8At(const std::string& s)
{
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = p[i];
        size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
        if (c < 0x80)
            len = 1;
        else if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else
            return static_cast<std::ptrdiff_t>(i);
        if (i + len > n)
            return static_cast<std::ptrdiff_t>(i);
        for (size_t k = 1; k < len; ++k) {
            const unsigned char b = p[i + k];
            if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
                return static_cast<std::ptrdiff_t>(i);
        }
        i += len;
    }
    return -1;
}

bool isBlank(const std::string& s)
{
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is what users need.
std::string jsonReason(const json::exception& e)
{
    std::string what = e.what();
    if (!what.empty() && what.front() == '[') {
        const size_t close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
    }
    return what;
}

const char* typeName(const json& value)
{
    return value.is_null() ? "null" : value.type_name();
}

// A row field that must be a non-empty string (or, when optional, may be absent or null).
// Returns "" with `reason` set on failure.
std::string stringField(const json& row, const char* key, bool required, std::string& reason)
{
    if (!row.contains(key) || row[key].is_null()) {
        if (required)
            reason = cat("missing \"", key, "\"");
        return "";
    }
    const json& value = row[key];
    if (!value.is_string()) {
        reason = cat("\"", key, "\" must be a string, got ", typeName(value));
        return "";
    }
    std::string text = value.get<std::string>();
    if (required && text.empty())
        reason = cat("\"", key, "\" is empty");
    return text;
}

// The format a row's keys suggest, if any.
std::optional<ExampleFormat> detectFormat(const json& row)
{
    if (row.contains("messages"))
        return ExampleFormat::Messages;
    if (row.contains("instruction") || row.contains("output"))
        return ExampleFormat::Alpaca;
    if (row.contains("prompt") || row.contains("completion"))
        return ExampleFormat::PromptCompletion;
    if (row.contains("text"))
        return ExampleFormat::Text;
    return std::nullopt;
}

bool parseAlpaca(const json& row, Example& ex, std::string& reason)
{
    const std::string instruction = stringField(row, "instruction", true, reason);
    if (!reason.empty())
        return false;
    const std::string input = stringField(row, "input", false, reason);
    if (!reason.empty())
        return false;
    const std::string output = stringField(row, "output", true, reason);
    if (!reason.empty())
        return false;
    const std::string user = input.empty() ? instruction : instruction + "\n\n" + input;
    ex.messages = {{"user", user}, {"assistant", output}};
    return true;
}

bool parseMessages(const json& row, Example& ex, std::string& reason)
{
    const json& messages = row["messages"];
    if (!messages.is_array()) {
        reason = cat("\"messages\" must be an array, got ", typeName(messages));
        return false;
    }
    bool hasAssistant = false;
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& m = messages[i];
        const std::string where = cat("messages[", i, "]");
        if (!m.is_object()) {
            reason = cat(where, " must be an object, got ", typeName(m));
            return false;
        }
        if (!m.contains("role") || !m["role"].is_string()) {
            reason = cat(where, ".role is missing or not a string");
            return false;
        }
        const std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant") {
            reason = cat(where, ".role \"", role, "\" is not system, user or assistant");
            return false;
        }
        if (!m.contains("content") || !m["content"].is_string()) {
            reason = cat(where, ".content is missing or not a string");
            return false;
        }
        std::string content = m["content"].get<std::string>();
        if (content.empty()) {
            if (role == "system")
                continue; // an empty system prompt says nothing: drop it, keep the row
            reason = cat(where, ".content is empty");
            return false;
        }
        hasAssistant = hasAssistant || role == "assistant";
        ex.messages.push_back({role, std::move(content)});
    }
    if (!hasAssistant) {
        reason = "\"messages\" has no assistant turn (nothing to train on)";
        return false;
    }
    return true;
}

bool parsePromptCompletion(const json& row, Example& ex, std::string& reason)
{
    const std::string prompt = stringField(row, "prompt", true, reason);
    if (!reason.empty())
        return false;
    const std::string completion = stringField(row, "completion", true, reason);
    if (!reason.empty())
        return false;
    ex.messages = {{"user", prompt}, {"assistant", completion}};
    return true;
}

bool parseText(const json& row, Example& ex, std::string& reason)
{
    const std::string text = stringField(row, "text", true, reason);
    if (!reason.empty())
        return false;
    ex.messages = {{"assistant", text}};
    ex.plainText = true;
    return true;
}

bool parseRow(ExampleFormat format, const json& row, Example& ex, std::string& reason)
{
    switch (format) {
    case ExampleFormat::Alpaca:
        return parseAlpaca(row, ex, reason);
    case ExampleFormat::Messages:
        if (!row.contains("messages")) {
            reason = "missing \"messages\"";
            return false;
        }
        return parseMessages(row, ex, reason);
    case ExampleFormat::PromptCompletion:
        return parsePromptCompletion(row, ex, reason);
    case ExampleFormat::Text:
        return parseText(row, ex, reason);
    case ExampleFormat::Auto:
        break;
    }
    reason = "internal: no format";
    return false;
}

// Splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same sequence on every platform.
class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : m_state(seed) {}
    uint64_t next()
    {
        uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound) without modulo bias (rejection of the short top range).
    uint64_t below(uint64_t bound)
    {
        const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
        uint64_t r = next();
        while (r >= limit)
            r = next();
        return r % bound;
    }

private:
    uint64_t m_state;
};

} // namespace

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

ExampleFile readExampleFile(const std::string& path, ExampleFormat format)
{
    if (isDirectory(path))
        fail(path, ": is a directory, not a .jsonl file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, ": cannot open");
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        fail(path, ": read error");
    if (data.compare(0, 3, "\xEF\xBB\xBF") == 0) // a UTF-8 byte order mark (Windows editors)
        data.erase(0, 3);
    const size_t first = data.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        fail(path, ": empty file (expected JSONL: one JSON object per line)");
    if (data[first] == '[')
        fail(path, ": is a JSON array, not JSONL; convert it to JSONL (one JSON object per line, "
                   "e.g. jq -c '.[]' in.json > out.jsonl)");

    ExampleFile file;
    file.format = format;
    size_t begin = 0;
    for (int64_t lineNo = 1; begin < data.size(); ++lineNo) {
        size_t end = data.find('\n', begin);
        if (end == std::string::npos)
            end = data.size();
        std::string line = data.substr(begin, end - begin);
        begin = end + 1;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (isBlank(line))
            continue;
        const std::string location = cat(path, ":", lineNo);
        auto reject = [&](std::string reason) {
            file.rejected.push_back({location, std::move(reason)});
        };
        if (const std::ptrdiff_t at = invalidUtf8At(line); at >= 0) {
            reject(cat("not valid UTF-8 (byte ", at + 1, " of the line); save the file as UTF-8"));
            continue;
        }
        json row;
        try {
            row = json::parse(line);
        } catch (const json::exception& e) {
            reject("not valid JSON: " + jsonReason(e));
            continue;
        }
        if (!row.is_object()) {
            reject(cat("expected a JSON object, got ", typeName(row)));
            continue;
        }
        const std::optional<ExampleFormat> rowFormat = detectFormat(row);
        ExampleFormat use = file.format;
        if (use == ExampleFormat::Auto) {
            if (!rowFormat) {
                reject("no known fields (expected instruction/output, messages, prompt/completion "
                       "or text)");
                continue;
            }
            use = *rowFormat;
        }
        Example ex;
        ex.source = location;
        std::string reason;
        if (!parseRow(use, row, ex, reason)) {
            if (rowFormat && *rowFormat != use)
                reason += cat(" (the row looks like ", exampleFormatName(*rowFormat),
                              " but the file is ", exampleFormatName(use), ")");
            reject(reason);
            continue;
        }
        file.format = use; // Auto: the first valid row fixes the file's format
        file.examples.push_back(std::move(ex));
    }
    if (file.examples.empty()) {
        std::string detail;
        if (!file.rejected.empty())
            detail = cat(" (", file.rejected.size(),
                         " rejected; first: ", file.rejected.front().location, ": ",
                         file.rejected.front().reason, ")");
        fail(path, ": no valid examples", detail);
    }
    return file;
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

SequenceSet buildSequences(const std::vector<TokenizedExample>& examples, int maxLength,
                           bool packing)
{
    if (maxLength <= 0)
        fail("buildSequences: maxLength must be positive, got ", maxLength);
    SequenceSet set;
    set.examples = static_cast<int64_t>(examples.size());

    // Labels of one example, shifted: position i predicts ids[i + 1]; its last position predicts
    // nothing (in a pack the next token belongs to another example).
    auto shiftedLabels = [](const TokenizedExample& ex, size_t n) {
        std::vector<int32_t> labels(n, kIgnore);
        for (size_t i = 0; i + 1 < n; ++i)
            if (ex.lossMask[i + 1])
                labels[i] = ex.ids[i + 1];
        return labels;
    };
    auto countLoss = [](const std::vector<int32_t>& labels) {
        return static_cast<int64_t>(
            std::count_if(labels.begin(), labels.end(), [](int32_t l) { return l != kIgnore; }));
    };

    if (!packing) {
        for (const TokenizedExample& ex : examples) {
            if (ex.ids.size() != ex.lossMask.size())
                fail("buildSequences: ids and lossMask differ in length (", ex.ids.size(), " vs ",
                     ex.lossMask.size(), ")");
            const size_t n = std::min(ex.ids.size(), static_cast<size_t>(maxLength));
            if (ex.truncated || n < ex.ids.size())
                ++set.truncated;
            if (n == 0)
                continue;
            Sequence seq;
            seq.ids.assign(ex.ids.begin(), ex.ids.begin() + n);
            seq.labels = shiftedLabels(ex, n);
            seq.length = static_cast<int32_t>(n);
            set.tokens += static_cast<int64_t>(n);
            set.lossTokens += countLoss(seq.labels);
            set.sequences.push_back(std::move(seq));
        }
        return set;
    }

    // Packing: one stream of ids and labels, cut into maxLength chunks. A chunk's last position
    // keeps its label (the next token of the same example, as llm.c's x/y windows do); only example
    // ends take none. The final, shorter chunk is kept: makeBatch pads it.
    std::vector<int32_t> ids, labels;
    for (const TokenizedExample& ex : examples) {
        if (ex.ids.size() != ex.lossMask.size())
            fail("buildSequences: ids and lossMask differ in length (", ex.ids.size(), " vs ",
                 ex.lossMask.size(), ")");
        if (ex.truncated)
            ++set.truncated;
        const std::vector<int32_t> exLabels = shiftedLabels(ex, ex.ids.size());
        ids.insert(ids.end(), ex.ids.begin(), ex.ids.end());
        labels.insert(labels.end(), exLabels.begin(), exLabels.end());
    }
    set.tokens = static_cast<int64_t>(ids.size());
    set.lossTokens = countLoss(labels);
    for (size_t start = 0; start < ids.size(); start += static_cast<size_t>(maxLength)) {
        const size_t end = std::min(ids.size(), start + static_cast<size_t>(maxLength));
        Sequence seq;
        seq.ids.assign(ids.begin() + start, ids.begin() + end);
        seq.labels.assign(labels.begin() + start, labels.begin() + end);
        seq.length = static_cast<int32_t>(end - start);
        set.sequences.push_back(std::move(seq));
    }
    return set;
}

TokenBatch makeBatch(const SequenceSet& set, const std::vector<int64_t>& indices, int32_t padId)
{
    TokenBatch batch;
    batch.rows = static_cast<int64_t>(indices.size());
    for (int64_t index : indices) {
        if (index < 0 || index >= static_cast<int64_t>(set.sequences.size()))
            fail("makeBatch: sequence index ", index, " out of range (", set.sequences.size(),
                 " sequences)");
        batch.width = std::max<int64_t>(batch.width, set.sequences[index].ids.size());
    }
    batch.ids.assign(batch.rows * batch.width, padId);
    batch.labels.assign(batch.rows * batch.width, kIgnore);
    for (int64_t r = 0; r < batch.rows; ++r) {
        const Sequence& seq = set.sequences[indices[r]];
        for (size_t i = 0; i < seq.ids.size(); ++i) {
            batch.ids[r * batch.width + i] = seq.ids[i];
            const int32_t label = i < seq.labels.size() ? seq.labels[i] : kIgnore;
            batch.labels[r * batch.width + i] = label;
            batch.lossTokens += label != kIgnore;
        }
    }
    return batch;
}

std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch)
{
    std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(count, 0)));
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int64_t>(i);
    // Seed and epoch mixed through one splitmix step each, so neighbouring seeds or epochs give
    // unrelated streams.
    const uint64_t seedMixed = SplitMix64(seed).next();
    const uint64_t epochMixed =
        SplitMix64(static_cast<uint64_t>(epoch) + 0x5851F42D4C957F2DULL).next();
    SplitMix64 rng(seedMixed ^ epochMixed);
    for (size_t i = order.size(); i > 1; --i) { // Fisher-Yates, from the back
        const size_t j = static_cast<size_t>(rng.below(i));
        std::swap(order[i - 1], order[j]);
    }
    return order;
}

} // namespace tb
