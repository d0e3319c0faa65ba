// `tunebench generate`: continue a prompt with a base model or a run's tuned model, streaming.
#include "cli/commands.h"

#include "model/model.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "train/run_store.h"
#include "train/tuned_model.h"
#include "util/error.h"
#include <nlohmann/json.hpp>

namespace tb {

using nlohmann::json;

namespace {

// The whitespace that token `after` shows after token `before` but not on its own.
std::string spaceBetween(const Tokenizer& tokenizer, int32_t before, int32_t after)
{
    const std::string alone = tokenizer.decode({after}, true);
    const std::string head = tokenizer.decode({before}, true);
    const std::string joined = tokenizer.decode({before, after}, true);
    if (joined.size() <= head.size() + alone.size() || joined.compare(0, head.size(), head) != 0 ||
        joined.compare(joined.size() - alone.size(), alone.size(), alone) != 0)
        return "";
    const std::string between =
        joined.substr(head.size(), joined.size() - head.size() - alone.size());
    return between.find_first_not_of(" \t") == std::string::npos ? between : "";
}

GenerateOptions generateOptions(const Args& args)
{
    GenerateOptions o;
    o.maxNewTokens = static_cast<int>(args.integer("max-new-tokens", 64));
    o.greedy = args.flag("greedy");
    o.temperature = args.number("temperature", 1.0);
    o.topK = static_cast<int>(args.integer("top-k", 0));
    o.topP = args.number("top-p", 1.0);
    o.repetitionPenalty = args.number("repetition-penalty", 1.0);
    o.seed = args.seed(0);
    if (args.has("stop"))
        o.stopStrings.push_back(args.value("stop"));
    if (o.maxNewTokens < 0)
        fail("option --max-new-tokens must not be negative");
    if (o.topP <= 0.0 || o.topP > 1.0)
        fail("option --top-p must be in (0, 1]");
    if (o.repetitionPenalty <= 0.0)
        fail("option --repetition-penalty must be positive");
    return o;
}

}  // namespace

int cmdGenerate(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "run", "prompt", "max-new-tokens", "greedy", "temperature", "top-k",
                    "top-p", "repetition-penalty", "seed", "stop", "dtype", "device", "chat",
                    "template", "json"});
    GenerateOptions options = generateOptions(args);
    std::unique_ptr<Model> model;
    std::string dir = modelArg(args);
    std::string runTemplate = "model";
    if (args.has("run")) {
        // The fine-tuned model of a run: its base model's tokenizer, its newest checkpoint's
        // weights.
        if (args.has("model"))
            fail("generate: give --model or --run, not both");
        const json config = RunStore(args.value("run")).readRunInfo().at("config");
        dir = config.at("model").get<std::string>();
        // The run's own template renders its chat prompts, as training rendered its examples.
        if (config.contains("data") && config["data"].contains("chat_template"))
            runTemplate = config["data"]["chat_template"].get<std::string>();
        model = loadTunedModel(args.value("run"), loadOptions(args));
    } else {
        model = Model::load(dir, loadOptions(args));
    }
    auto tok = loadTokenizer(dir);
    std::vector<int32_t> prompt;
    if (args.flag("chat")) {
        // --prompt is the user's message, rendered with the chat template and its generation
        // prompt; the template's end-of-turn tokens stop generation.
        const std::string name = args.value("template", runTemplate);
        const auto chat = chatTemplateByName(name, dir);
        if (!chat)
            fail("option --template '", name,
                 "' (allowed: model, chatml, llama3, inst, alpaca, plain)");
        const jinja::Value messages =
            jinja::Value::array({{{"role", "user"}, {"content", args.value("prompt")}}});
        prompt = chatPromptIds(*chat, *tok, messages);
        options.stopTokenIds = chatStopIds(*chat, *tok);
    } else {
        if (args.has("template"))
            fail("option --template needs --chat");
        prompt = tok->encode(args.value("prompt"), true);
    }
    const bool asJson = args.flag("json");
    TokenCallback stream;
    if (!asJson) {
        out << args.value("prompt") << std::flush;
        // Printed after the prompt, the answer keeps the space its first token carries there
        // (sentencepiece drops it from a text's first token: "Once" + "upon" read "Onceupon").
        const int32_t last = args.flag("chat") ? -1 : prompt.back();
        stream = [&out, &tok, last, first = true](int32_t id, const std::string& text) mutable {
            if (first && last >= 0)
                out << spaceBetween(*tok, last, id);
            first = false;
            out << text << std::flush;
            return true;
        };
    }
    GenerateResult r = model->generate(prompt, options, tok.get(), stream);
    if (asJson) {
        out << json{{"prompt_ids", prompt},
                    {"generated_ids", r.tokens},
                    {"text", r.text},
                    {"stop_reason", r.stopReason}}
                   .dump()
            << "\n";
    } else {
        out << "\n";
    }
    return 0;
}

}  // namespace tb
