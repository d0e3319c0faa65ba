// `tunebench template render`: a conversation through a model's chat template (its own Jinja
// template or a family) as text, token ids and the per-token loss mask training uses.
#include "cli/commands.h"

#include "data/example.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

namespace tb {
namespace {

using jinja::Value;

// FILE.json: an array of messages, or an object with "messages" and optional "tools".
void readConversation(const std::string& path, Value* messages, Value* tools)
{
    const std::string text = readFile(path);
    checkJsonDepth(text, path);
    Value doc;
    try {
        doc = Value::parse(text);
    } catch (const Value::exception& e) {
        fail(path, ": not valid JSON (", e.what(), ")");
    }
    if (doc.is_object()) {
        if (!doc.contains("messages"))
            fail(path, ": an object needs key 'messages' (an array of {role, content})");
        *messages = doc["messages"];
        if (doc.contains("tools"))
            *tools = doc["tools"];
    } else {
        *messages = doc;
    }
    if (!messages->is_array())
        fail(path, ": 'messages' must be an array of {role, content} objects");
    if (messages->empty())  // as apply_chat_template refuses it
        fail(path, ": 'messages' is empty: there is no conversation to render");
    for (size_t i = 0; i < messages->size(); ++i) {
        const Value& m = (*messages)[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            fail(path, ": message ", i + 1, " needs a string 'role'");
    }
    if (!tools->is_null() && !tools->is_array())
        fail(path, ": 'tools' must be an array");
}

std::vector<ChatMessage> plainMessages(const Value& messages, const std::string& path)
{
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < messages.size(); ++i) {
        const Value& m = messages[i];
        if (m.contains("content") && !m["content"].is_string() && !m["content"].is_null())
            fail(path, ": message ", i + 1,
                 ": a family template renders string contents only (the model's own template "
                 "takes structured ones)");
        out.push_back(
            {m["role"].get<std::string>(), m.contains("content") && m["content"].is_string()
                                               ? m["content"].get<std::string>()
                                               : std::string()});
    }
    return out;
}

}  // namespace

int cmdTemplate(const Args& args, std::ostream& out)
{
    if (args.positional().size() < 2 || args.positional()[1] != "render")
        fail("usage: tunebench template render --model DIR --messages FILE.json "
             "[--add-generation-prompt] [--template model|FAMILY] [--train-on all|last] [--json]");
    args.allowOnly({"model", "messages", "add-generation-prompt", "template", "train-on", "json"});
    const std::string modelDir = modelArg(args);
    const std::string path = args.value("messages");
    Value messages, tools;
    readConversation(path, &messages, &tools);
    const std::string name = args.value("template", "model");
    const auto chat = chatTemplateByName(name, modelDir);
    if (!chat)
        fail("option --template '", name,
             "' (allowed: model, chatml, llama3, inst, alpaca, plain)");
    const auto trainOn = parseTrainOn(args.value("train-on", "all"));
    if (!trainOn)
        fail("option --train-on '", args.value("train-on"), "' (allowed: all, last)");
    const bool prompt = args.flag("add-generation-prompt");
    const auto tokenizer = loadTokenizer(modelDir);

    TokenizeOptions options;
    options.setTemplate(*chat);
    options.trainOn = *trainOn;
    options.maxLength = 0;
    TokenizedExample t;
    std::string text;
    // A conversation whose loss a training run could not place (the template rewrites earlier
    // turns) still renders: the text and ids, with the mask's reason instead of the mask.
    std::string noMask;
    if (chat->isModel()) {
        text = chat->render(messages, prompt, tools);
        try {
            t = tokenizeMessages(*tokenizer, messages, tools, options);
        } catch (const Error& e) {
            noMask = e.what();
            t.ids = tokenizer->encode(prompt ? text : chat->render(messages, false, tools), false);
            t.lossMask.assign(t.ids.size(), 0);
        }
    } else {
        Example example;
        example.messages = plainMessages(messages, path);
        t = tokenizeExample(*tokenizer, example, options);
        const std::string eos = tokenizer->eosId() ? tokenizer->idToPiece(*tokenizer->eosId()) : "";
        text = renderChatText(*chat->family(), example.messages, prompt, "", eos);
    }
    if (prompt) {
        // The prompt as generation encodes it; the conversation's mask where the ids agree.
        const std::vector<int32_t> ids = tokenizer->encode(text, !chat->isModel());
        std::vector<uint8_t> mask(ids.size(), 0);
        for (size_t i = 0; i < ids.size() && i < t.ids.size() && ids[i] == t.ids[i]; ++i)
            mask[i] = t.lossMask[i];
        t.ids = ids;
        t.lossMask = mask;
    }
    if (args.flag("json")) {
        Value j{{"text", text}, {"ids", t.ids}, {"loss_mask", t.lossMask}};
        if (!noMask.empty()) {
            j["loss_mask"] = nullptr;
            j["loss_mask_error"] = noMask;
        }
        out << j.dump() << "\n";
        return 0;
    }
    int64_t loss = 0;
    for (uint8_t m : t.lossMask)
        loss += m;
    out << text << (text.ends_with("\n") ? "" : "\n") << "(" << chat->name() << " template, "
        << t.ids.size() << " tokens, ";
    if (noMask.empty())
        out << loss << " carry loss)\n";
    else
        out << "no loss mask: " << noMask << ")\n";
    return 0;
}

}  // namespace tb
