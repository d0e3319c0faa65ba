// Synthetic generation: fill the prompt, generate with the model, store the results as pending
// records.
#include "data/curate/synthetic.h"

#include "data/example.h"
#include "data/record.h"
#include "data/store/pairs_store.h"
#include "data/store/store.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace tb {

using nlohmann::json;

std::string fillTemplate(const std::string& promptTemplate, const json& fields)
{
    std::string out;
    for (size_t i = 0; i < promptTemplate.size();) {
        const char c = promptTemplate[i];
        if (c == '{') {
            const size_t close = promptTemplate.find('}', i);
            if (close == std::string::npos)
                fail("synthetic prompt template: '{' at offset ", i, " is never closed");
            const std::string key = promptTemplate.substr(i + 1, close - i - 1);
            const auto it = fields.find(key);
            if (it == fields.end()) {
                std::string known;
                for (const auto& [k, v] : fields.items())
                    known += (known.empty() ? "" : ", ") + k;
                fail("synthetic prompt template: placeholder {", key,
                     "} is not a field of the seed (fields: ", known, ")");
            }
            out += it->is_string() ? it->get<std::string>() : it->dump();
            i = close + 1;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

namespace {

// The seed's prompt side, rendered for generation, and a function that builds the new record's
// fields.
struct SeedPrompt {
    std::string text;
    std::function<json(const std::string& generated)> fields;
    std::string kind;
};

SeedPrompt seedPrompt(const StoredRecord& seed, const SynthOptions& options,
                      ChatTemplateFamily family)
{
    SeedPrompt p;
    if (!options.promptTemplate.empty()) {
        const std::string prompt = fillTemplate(options.promptTemplate, seed.fields);
        p.text = prompt;
        p.kind = "prompt-completion";
        p.fields = [prompt](const std::string& g) {
            return json{{"prompt", prompt}, {"completion", g}};
        };
        return p;
    }
    p.kind = seed.kind;
    if (seed.kind == "text") {
        // Continue the seed's opening words.
        const std::string text = seed.fields.value("text", std::string());
        size_t cut = 0;
        for (int words = 0; words < 16 && cut != std::string::npos; ++words)
            cut = text.find(' ', cut + 1);
        const std::string opening = cut == std::string::npos ? text : text.substr(0, cut);
        p.text = opening;
        p.fields = [opening](const std::string& g) { return json{{"text", opening + g}}; };
        return p;
    }
    Example example = recordToExample(seed.kind, seed.fields);
    while (!example.messages.empty() && example.messages.back().role == "assistant")
        example.messages.pop_back();
    if (example.messages.empty())
        fail("synthetic: seed record ", seed.id, " has no prompt to answer");
    p.text = renderChatText(family, example.messages, true);
    json base = seed.fields;
    if (seed.kind == "alpaca") {
        p.fields = [base](const std::string& g) {
            json f = base;
            f["output"] = g;
            return f;
        };
    } else if (seed.kind == "prompt-completion") {
        p.fields = [base](const std::string& g) {
            json f = base;
            f["completion"] = g;
            return f;
        };
    } else {
        json messages = json::array();
        for (const auto& m : example.messages)
            messages.push_back({{"role", m.role}, {"content", m.content}});
        p.fields = [base, messages](const std::string& g) {
            json f = base;
            f["messages"] = messages;
            f["messages"].push_back({{"role", "assistant"}, {"content", g}});
            return f;
        };
    }
    return p;
}

std::string trim(const std::string& s)
{
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

SynthReport generateSynthetic(DataStore& store, const Model& model, const Tokenizer& tokenizer,
                              const std::vector<int64_t>& seedIds, const SynthOptions& options,
                              const std::function<bool(int64_t, int64_t)>& progress)
{
    if (options.perSeed < 1)
        fail("synthetic: --per-seed ", options.perSeed, " must be at least 1");
    if (seedIds.empty())
        fail(store.path(), ": no seed records to generate from");
    const auto family = parseChatTemplateName(options.chatTemplate);
    if (!family)
        fail("synthetic: chat template \"", options.chatTemplate,
             "\" (allowed: chatml, llama3, inst, alpaca, plain)");
    SynthReport report;
    std::vector<NewRecord> out;
    const int64_t total = int64_t(seedIds.size()) * options.perSeed;
    for (int64_t seedId : seedIds) {
        const StoredRecord seed = store.record(seedId);
        const SeedPrompt prompt = seedPrompt(seed, options, *family);
        const std::vector<int32_t> ids = tokenizer.encode(prompt.text, true);
        for (int k = 0; k < options.perSeed; ++k) {
            if (progress && !progress(int64_t(out.size()), total))
                fail("synthetic generation cancelled; nothing was stored");
            GenerateOptions g = options.generate;
            g.seed = options.generate.seed + uint64_t(seedId) * 1000003ull + uint64_t(k);
            const GenerateResult r = model.generate(ids, g, &tokenizer);
            NewRecord rec;
            rec.kind = prompt.kind;
            rec.fields = prompt.fields(
                seed.kind == "text" && options.promptTemplate.empty() ? r.text : trim(r.text));
            rec.fields["seed_id"] = seedId;
            rec.synthetic = true;
            rec.split = seed.split == "general" ? "train" : seed.split;
            out.push_back(std::move(rec));
        }
        ++report.seeds;
    }
    report.ids = store.addRecords(out, 0, options.who, "synthetic");
    report.generated = int64_t(report.ids.size());
    if (progress)
        progress(total, total);
    return report;
}

int64_t generateRanking(DataStore& store, const Model& model, const Tokenizer& tokenizer,
                        const std::vector<ChatMessage>& prompt, int k, const SynthOptions& options)
{
    if (k < 2)
        fail("ranking: ", k, " answers; a ranking needs at least 2");
    if (prompt.empty())
        fail("ranking: the prompt has no message");
    const auto family = parseChatTemplateName(options.chatTemplate);
    if (!family)
        fail("ranking: chat template \"", options.chatTemplate,
             "\" (allowed: chatml, llama3, inst, alpaca, plain)");
    const std::vector<int32_t> ids = tokenizer.encode(renderChatText(*family, prompt, true), true);
    std::vector<std::string> answers;
    for (int i = 0; i < k; ++i) {
        GenerateOptions g = options.generate;
        g.seed = options.generate.seed + uint64_t(i);
        answers.push_back(trim(model.generate(ids, g, &tokenizer).text));
    }
    return addRanking(store, prompt, answers, options.who);
}

}  // namespace tb
