// Record kinds: validation with reasons that name the field, and the example, field-text and
// dedup-text views of a record.
#include "data/record.h"

#include "util/error.h"

#include <algorithm>

namespace tb {
namespace {

using nlohmann::json;

const char* typeName(const json& value)
{
    return value.is_null() ? "null" : value.type_name();
}

// "a number" / "an object": nlohmann's type names with their article.
std::string withArticle(const json& value)
{
    if (value.is_null())
        return "null";
    const std::string name = typeName(value);
    const bool vowel = name[0] == 'a' || name[0] == 'o';
    return (vowel ? "an " : "a ") + name;
}

// A required text field: present, a string, not empty.
std::optional<std::string> checkRequired(const json& fields, const char* key)
{
    const auto it = fields.find(key);
    if (it == fields.end())
        return cat("missing field \"", key, "\"");
    if (!it->is_string())
        return cat("field \"", key, "\" is ", withArticle(*it), ", expected a string");
    if (it->get_ref<const std::string&>().empty())
        return cat("field \"", key, "\" is empty");
    return std::nullopt;
}

// An optional text field: absent, null or a string (possibly empty).
std::optional<std::string> checkOptional(const json& fields, const char* key)
{
    const auto it = fields.find(key);
    if (it == fields.end() || it->is_null() || it->is_string())
        return std::nullopt;
    return cat("field \"", key, "\" is ", withArticle(*it), ", expected a string");
}

std::optional<std::string> checkChat(const json& fields)
{
    const auto it = fields.find("messages");
    if (it == fields.end())
        return std::string("missing field \"messages\"");
    const json& messages = *it;
    if (!messages.is_array())
        return cat("field \"messages\" is ", withArticle(messages), ", expected an array");
    if (messages.empty())
        return std::string("empty conversation");
    bool hasAssistant = false;
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& m = messages[i];
        const std::string where = cat("messages[", i, "]");
        if (!m.is_object())
            return cat(where, " is ", withArticle(m), ", expected an object");
        const auto role = m.find("role");
        if (role == m.end())
            return cat(where, ".role is missing");
        if (!role->is_string())
            return cat(where, ".role is ", withArticle(*role), ", expected a string");
        const std::string& r = role->get_ref<const std::string&>();
        if (r != "system" && r != "user" && r != "assistant")
            return cat(where, ".role is \"", r, "\"; expected system, user or assistant");
        const auto content = m.find("content");
        if (content == m.end())
            return cat(where, ".content is missing");
        if (!content->is_string())
            return cat(where, ".content is ", withArticle(*content), ", expected a string");
        if (content->get_ref<const std::string&>().empty() && r != "system")
            return cat(where,
                       ".content is empty");  // an empty system prompt is dropped, not an error
        hasAssistant = hasAssistant || r == "assistant";
    }
    if (!hasAssistant)
        return std::string("no assistant turn (nothing to train on)");
    return std::nullopt;
}

// The string value of fields[key], or "" when absent, null or not a string.
std::string text(const json& fields, const char* key)
{
    const auto it = fields.find(key);
    return it != fields.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

bool isRecordKind(const std::string& kind)
{
    return std::any_of(std::begin(kRecordKinds), std::end(kRecordKinds),
                       [&](const char* k) { return kind == k; });
}

std::optional<std::string> validateRecord(const std::string& kind, const json& fields)
{
    if (!fields.is_object())
        return cat("record is ", withArticle(fields), ", expected an object");
    std::optional<std::string> problem;
    if (kind == "alpaca") {
        if (!(problem = checkRequired(fields, "instruction")))
            if (!(problem = checkOptional(fields, "input")))
                problem = checkRequired(fields, "output");
        return problem;
    }
    if (kind == "chat")
        return checkChat(fields);
    if (kind == "prompt-completion") {
        if (!(problem = checkRequired(fields, "prompt")))
            problem = checkRequired(fields, "completion");
        return problem;
    }
    if (kind == "text")
        return checkRequired(fields, "text");
    return cat("unknown record kind \"", kind,
               "\"; expected alpaca, chat, prompt-completion or text");
}

Example recordToExample(const std::string& kind, const json& fields)
{
    return recordToExample(kind, fields, "record");
}

Example recordToExample(const std::string& kind, const json& fields, const std::string& where)
{
    if (const std::optional<std::string> problem = validateRecord(kind, fields))
        fail(where, " (", kind, "): ", *problem);
    Example ex;
    if (kind == "alpaca") {
        const std::string instruction = text(fields, "instruction");
        const std::string input = text(fields, "input");
        ex.messages = {{"user", input.empty() ? instruction : instruction + "\n\n" + input},
                       {"assistant", text(fields, "output")}};
    } else if (kind == "chat") {
        for (const json& m : fields["messages"]) {
            std::string content = m["content"].get<std::string>();
            if (!content.empty())
                ex.messages.push_back({m["role"].get<std::string>(), std::move(content)});
        }
    } else if (kind == "prompt-completion") {
        ex.messages = {{"user", text(fields, "prompt")}, {"assistant", text(fields, "completion")}};
    } else {  // text
        ex.messages = {{"assistant", text(fields, "text")}};
        ex.plainText = true;
    }
    return ex;
}

std::vector<std::pair<std::string, std::string>> recordFieldTexts(const std::string& kind,
                                                                  const json& fields)
{
    std::vector<std::pair<std::string, std::string>> out;
    if (!fields.is_object())
        return out;
    auto add = [&](const char* key, bool keepEmpty) {
        const auto it = fields.find(key);
        if (it == fields.end() || !it->is_string())
            return;
        const std::string& value = it->get_ref<const std::string&>();
        if (keepEmpty || !value.empty())
            out.emplace_back(key, value);
    };
    if (kind == "alpaca") {
        add("instruction", true);
        add("input", false);
        add("output", true);
    } else if (kind == "chat") {
        const auto messages = fields.find("messages");
        if (messages == fields.end() || !messages->is_array())
            return out;
        for (const char* role : {"system", "user", "assistant"}) {
            std::string joined;
            bool any = false;
            for (const json& m : *messages) {
                if (!m.is_object() || text(m, "role") != role)
                    continue;
                if (any)
                    joined += '\n';
                joined += text(m, "content");
                any = true;
            }
            if (any)
                out.emplace_back(role, std::move(joined));
        }
    } else if (kind == "prompt-completion") {
        add("prompt", true);
        add("completion", true);
    } else if (kind == "text") {
        add("text", true);
    }
    return out;
}

std::string recordText(const std::string& kind, const json& fields)
{
    std::string out;
    bool first = true;
    auto append = [&](const std::string& part) {
        if (!first)
            out += '\n';
        out += part;
        first = false;
    };
    if (kind == "chat") {
        const auto messages = fields.is_object() ? fields.find("messages") : fields.end();
        if (messages != fields.end() && messages->is_array())
            for (const json& m : *messages)
                if (m.is_object())
                    append(text(m, "content"));
        return out;
    }
    for (const auto& [field, value] : recordFieldTexts(kind, fields))
        append(value);
    return out;
}

}  // namespace tb
