// Preference pairs: the row layouts they are read from and the checks each pair passes.
#include "data/pairs.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <cctype>

namespace tb {

using nlohmann::json;

const char* pairLayoutName(PairLayout layout)
{
    switch (layout) {
    case PairLayout::Auto:
        return "auto";
    case PairLayout::Standard:
        return "standard";
    case PairLayout::HhRlhf:
        return "hh-rlhf";
    case PairLayout::UltraFeedback:
        return "ultrafeedback";
    }
    return "auto";
}

std::optional<PairLayout> parsePairLayout(const std::string& name)
{
    for (PairLayout l :
         {PairLayout::Auto, PairLayout::Standard, PairLayout::HhRlhf, PairLayout::UltraFeedback})
        if (name == pairLayoutName(l))
            return l;
    return std::nullopt;
}

namespace {

using Messages = std::vector<ChatMessage>;

const char* typeName(const json& v)
{
    return v.is_string()    ? "a string"
           : v.is_array()   ? "a list"
           : v.is_object()  ? "an object"
           : v.is_number()  ? "a number"
           : v.is_boolean() ? "a boolean"
                            : "null";
}

const json& need(const json& row, const char* key)
{
    if (!row.contains(key))
        fail("missing key \"", key, "\"");
    return row[key];
}

bool blank(const std::string& text)
{
    for (unsigned char c : text)
        if (!std::isspace(c))
            return false;
    return true;
}

// A message list: every entry an object with string "role" (system, user, assistant) and
// "content".
Messages messagesOf(const json& list, const char* key)
{
    if (!list.is_array())
        fail("\"", key, "\" is ", typeName(list), ", not a message list");
    Messages out;
    for (size_t i = 0; i < list.size(); ++i) {
        const json& m = list[i];
        const std::string where = cat("\"", key, "\" message ", i + 1);
        if (!m.is_object())
            fail(where, " is ", typeName(m), ", not an object");
        if (!m.contains("role") || !m["role"].is_string())
            fail(where, " has no string \"role\"");
        if (!m.contains("content") || !m["content"].is_string())
            fail(where, " has no string \"content\"");
        const std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant")
            fail(where, " has unknown role \"", role, "\" (system, user or assistant)");
        out.push_back(ChatMessage{role, m["content"].get<std::string>()});
    }
    return out;
}

bool sameMessages(const Messages& a, const Messages& b)
{
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].role != b[i].role || a[i].content != b[i].content)
            return false;
    return true;
}

json messagesJson(const Messages& messages)
{
    json out = json::array();
    for (const ChatMessage& m : messages)
        out.push_back({{"role", m.role}, {"content", m.content}});
    return out;
}

// Anthropic's HH-RLHF text: "\n\nHuman: ...\n\nAssistant: ..." as turns (one space after the
// colon dropped).
Messages anthropicMessages(const std::string& text, const char* key)
{
    static const std::string kHuman = "\n\nHuman:", kAssistant = "\n\nAssistant:";
    Messages out;
    size_t pos = 0;
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t'))
        ++pos;
    auto markerAt = [&](size_t at) -> const std::string* {
        if (text.compare(at, kHuman.size(), kHuman) == 0)
            return &kHuman;
        if (text.compare(at, kAssistant.size(), kAssistant) == 0)
            return &kAssistant;
        return nullptr;
    };
    if (!markerAt(pos))
        fail("\"", key, "\" does not start with \"\\n\\nHuman:\" (Anthropic's HH-RLHF form)");
    while (pos < text.size()) {
        const std::string* marker = markerAt(pos);
        size_t begin = pos + marker->size();
        if (begin < text.size() && text[begin] == ' ')
            ++begin;
        size_t end = begin;
        while (end < text.size() && !markerAt(end))
            ++end;
        out.push_back(
            ChatMessage{marker == &kHuman ? "user" : "assistant", text.substr(begin, end - begin)});
        pos = end;
    }
    return out;
}

Messages conversationOf(const json& value, const char* key)
{
    if (value.is_string())
        return anthropicMessages(value.get<std::string>(), key);
    if (value.is_array())
        return messagesOf(value, key);
    fail("\"", key, "\" is ", typeName(value), ", not a conversation (a message list or text)");
}

// Splits two full conversations at their last assistant turn; the turns before it must be the
// same in both.
void splitConversations(PairExample& pair, const Messages& chosen, const Messages& rejected)
{
    auto lastAssistant = [](const Messages& m, const char* key) {
        if (m.empty())
            fail("\"", key, "\" is an empty conversation");
        if (m.back().role != "assistant")
            fail("\"", key, "\" does not end with an assistant turn (it ends with a ",
                 m.back().role, " turn)");
        return m.size() - 1;
    };
    const size_t c = lastAssistant(chosen, "chosen"), r = lastAssistant(rejected, "rejected");
    const Messages promptC(chosen.begin(), chosen.begin() + long(c));
    const Messages promptR(rejected.begin(), rejected.begin() + long(r));
    if (!sameMessages(promptC, promptR)) {
        size_t i = 0;
        while (i < promptC.size() && i < promptR.size() && promptC[i].role == promptR[i].role &&
               promptC[i].content == promptR[i].content)
            ++i;
        fail("no shared prompt: \"chosen\" and \"rejected\" differ at turn ", i + 1,
             ", before their last assistant turns (turn ", c + 1, " and ", r + 1, ")");
    }
    pair.prompt = promptC;
    pair.chosen = {chosen.back()};
    pair.rejected = {rejected.back()};
}

std::optional<double> numberOf(const json& row, const char* key, bool required)
{
    if (!row.contains(key)) {
        if (required)
            fail("missing key \"", key, "\"");
        return std::nullopt;
    }
    const json& v = row[key];
    if (!v.is_number())
        fail("\"", key, "\" is ", typeName(v), ", not a number");
    return v.get<double>();
}

void parseStandard(PairExample& pair, const json& row)
{
    const json& prompt = need(row, "prompt");
    const json& chosen = need(row, "chosen");
    const json& rejected = need(row, "rejected");
    if (prompt.is_string()) {
        for (const auto& [key, v] : {std::pair{"chosen", &chosen}, {"rejected", &rejected}})
            if (!v->is_string())
                fail("\"", key, "\" is ", typeName(*v),
                     " but \"prompt\" is a string: the standard layout needs three strings or "
                     "three message lists");
        pair.plainText = true;
        pair.promptText = prompt.get<std::string>();
        pair.chosenText = chosen.get<std::string>();
        pair.rejectedText = rejected.get<std::string>();
        return;
    }
    pair.prompt = messagesOf(prompt, "prompt");
    pair.chosen = messagesOf(chosen, "chosen");
    pair.rejected = messagesOf(rejected, "rejected");
    if (!pair.prompt.empty() && pair.prompt.back().role != "user")
        fail("\"prompt\" ends with a turn of role ", pair.prompt.back().role, ", not a user turn");
    for (const auto& [key, list] :
         {std::pair{"chosen", &pair.chosen}, {"rejected", &pair.rejected}})
        for (size_t i = 0; i < list->size(); ++i)
            if ((*list)[i].role != "assistant")
                fail("\"", key, "\" message ", i + 1, " is a ", (*list)[i].role,
                     " turn; answers are assistant turns");
}

void parseUltraFeedback(PairExample& pair, const json& row)
{
    const Messages chosen = messagesOf(need(row, "chosen"), "chosen");
    const Messages rejected = messagesOf(need(row, "rejected"), "rejected");
    pair.scoreChosen = numberOf(row, "score_chosen", true);
    pair.scoreRejected = numberOf(row, "score_rejected", true);
    splitConversations(pair, chosen, rejected);
    if (row.contains("prompt")) {
        const json& p = row["prompt"];
        if (!p.is_string())
            fail("\"prompt\" is ", typeName(p), ", not a string");
        const ChatMessage* lastUser = nullptr;
        for (const ChatMessage& m : pair.prompt)
            if (m.role == "user")
                lastUser = &m;
        if (!lastUser || lastUser->content != p.get<std::string>())
            fail("\"prompt\" does not match the last user turn the conversations share");
    }
}

PairLayout detect(const json& row)
{
    const bool scores = row.contains("score_chosen") || row.contains("score_rejected");
    if (!row.contains("prompt"))
        return scores ? PairLayout::UltraFeedback : PairLayout::HhRlhf;
    // UltraFeedback-binarised repeats the prompt as a string beside full conversations.
    if (row["prompt"].is_string() && row.contains("chosen") && row["chosen"].is_array())
        return PairLayout::UltraFeedback;
    return PairLayout::Standard;
}

std::string joinContents(const Messages& messages)
{
    std::string out;
    for (const ChatMessage& m : messages) {
        if (!out.empty())
            out += '\n';
        out += m.content;
    }
    return out;
}

void checkContent(const PairExample& pair)
{
    if (pair.plainText) {
        if (blank(pair.promptText))
            fail("empty prompt");
        if (blank(pair.chosenText))
            fail("empty chosen answer");
        if (blank(pair.rejectedText))
            fail("empty rejected answer");
        if (pair.chosenText == pair.rejectedText)
            fail("chosen is identical to rejected");
        return;
    }
    if (pair.prompt.empty() || blank(joinContents(pair.prompt)))
        fail("empty prompt");
    if (pair.chosen.empty() || blank(joinContents(pair.chosen)))
        fail("empty chosen answer");
    if (pair.rejected.empty() || blank(joinContents(pair.rejected)))
        fail("empty rejected answer");
    if (sameMessages(pair.chosen, pair.rejected))
        fail("chosen is identical to rejected");
}

}  // namespace

PairExample parsePairRow(const json& row, PairLayout layout)
{
    if (!row.is_object())
        fail("the row is ", typeName(row), ", not a JSON object");
    PairExample pair;
    pair.layout = layout == PairLayout::Auto ? detect(row) : layout;
    switch (pair.layout) {
    case PairLayout::Standard:
        parseStandard(pair, row);
        break;
    case PairLayout::HhRlhf: {
        const Messages chosen = conversationOf(need(row, "chosen"), "chosen");
        const Messages rejected = conversationOf(need(row, "rejected"), "rejected");
        splitConversations(pair, chosen, rejected);
        break;
    }
    case PairLayout::UltraFeedback:
        parseUltraFeedback(pair, row);
        break;
    case PairLayout::Auto:
        break;
    }
    if (pair.layout == PairLayout::Standard) {
        pair.scoreChosen = numberOf(row, "score_chosen", false);
        pair.scoreRejected = numberOf(row, "score_rejected", false);
    }
    pair.margin = numberOf(row, "margin", false);
    checkContent(pair);
    return pair;
}

json pairToJson(const PairExample& pair)
{
    json out = json::object();
    if (pair.plainText) {
        out["prompt"] = pair.promptText;
        out["chosen"] = pair.chosenText;
        out["rejected"] = pair.rejectedText;
    } else {
        out["prompt"] = messagesJson(pair.prompt);
        out["chosen"] = messagesJson(pair.chosen);
        out["rejected"] = messagesJson(pair.rejected);
    }
    if (pair.scoreChosen)
        out["score_chosen"] = *pair.scoreChosen;
    if (pair.scoreRejected)
        out["score_rejected"] = *pair.scoreRejected;
    if (pair.margin)
        out["margin"] = *pair.margin;
    return out;
}

std::string pairText(const PairExample& pair)
{
    if (pair.plainText)
        return pair.promptText + "\n" + pair.chosenText + "\n" + pair.rejectedText;
    return joinContents(pair.prompt) + "\n" + joinContents(pair.chosen) + "\n" +
           joinContents(pair.rejected);
}

namespace {

// Byte offsets of the top-level elements of a JSON array text (strings and nesting skipped), so
// that each element can be named by its line.
std::vector<size_t> arrayElementOffsets(const std::string& text)
{
    std::vector<size_t> out;
    int depth = 0;
    bool inString = false, expectElement = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c)))
            continue;
        if (expectElement && depth == 1 && c != ']') {
            out.push_back(i);
            expectElement = false;
        }
        if (c == '"')
            inString = true;
        else if (c == '[' || c == '{')
            expectElement = ++depth == 1 && c == '[';
        else if (c == ']' || c == '}')
            --depth;
        else if (c == ',' && depth == 1)
            expectElement = true;
    }
    return out;
}

int64_t lineAt(const std::string& text, size_t offset, size_t& from, int64_t& line)
{
    for (; from < offset && from < text.size(); ++from)
        line += text[from] == '\n';
    return line;
}

void addRow(PairFile& out, const std::string& path, int64_t line, const json& row,
            PairLayout layout)
{
    const std::string location = cat(path, ":", line);
    try {
        PairExample pair = parsePairRow(row, layout);
        pair.source = location;
        out.pairs.push_back(std::move(pair));
    } catch (const Error& e) {
        out.rejected.push_back(PairRejection{location, e.what()});
    }
}

}  // namespace

PairFile readPairFile(const std::string& path, PairLayout layout)
{
    const std::string text = readFile(path);
    if (blank(text))
        fail(path, ": the file is empty");
    PairFile out;
    const bool jsonArray = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
    if (jsonArray) {
        checkJsonDepth(text, path);
        json rows;
        try {
            rows = json::parse(text);
        } catch (const json::parse_error& e) {
            fail(path, ": not JSON: ", e.what());
        }
        if (!rows.is_array())
            fail(path, ": a .json file of pairs must hold a JSON array, not ", typeName(rows));
        const std::vector<size_t> offsets = arrayElementOffsets(text);
        size_t from = 0;
        int64_t line = 1;
        for (size_t i = 0; i < rows.size(); ++i)
            addRow(out, path, i < offsets.size() ? lineAt(text, offsets[i], from, line) : 0,
                   rows[i], layout);
    } else {
        size_t begin = 0;
        int64_t line = 0;
        while (begin < text.size()) {
            size_t end = text.find('\n', begin);
            if (end == std::string::npos)
                end = text.size();
            ++line;
            const std::string row = text.substr(begin, end - begin);
            begin = end + 1;
            if (blank(row))
                continue;
            if (jsonTooDeep(row)) {
                out.rejected.push_back(
                    PairRejection{cat(path, ":", line),
                                  cat("JSON nested deeper than ", kMaxJsonDepth, " levels")});
                continue;
            }
            json parsed;
            try {
                parsed = json::parse(row);
            } catch (const json::parse_error& e) {
                out.rejected.push_back(
                    PairRejection{cat(path, ":", line), cat("not JSON: ", e.what())});
                continue;
            }
            addRow(out, path, line, parsed, layout);
        }
    }
    if (out.pairs.empty()) {
        if (out.rejected.empty())
            fail(path, ": no rows");
        fail(path, ": no valid preference pair (", out.rejected.size(),
             " rejected; first: ", out.rejected.front().location, ": ", out.rejected.front().reason,
             ")");
    }
    return out;
}

}  // namespace tb
