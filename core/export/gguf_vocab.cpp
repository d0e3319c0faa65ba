// Reads a model folder's tokenizer into the tokenizer.ggml.* values of a GGUF file: sentencepiece
// pieces as they are, or a byte-level BPE tokenizer.json's vocabulary, merges and pre-tokenizer
// name.
#include "export/gguf_vocab.h"

#include "model/config.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

#include <optional>

namespace tb {
namespace {

using Json = nlohmann::json;

// The split regexes of the pre-tokenizers llama.cpp knows by name (as tokenizer.json spells them).
const char* const kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3Regex = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|)"
                                 R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|)"
                                R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::optional<Json> readJsonIfPresent(const std::string& path)
{
    if (!fileExists(path))
        return std::nullopt;
    try {
        return Json::parse(readFile(path));
    } catch (const Json::exception& e) {
        fail(path, ": not valid JSON (", e.what(), ")");
    }
}

std::string typeOf(const Json& j)
{
    return j.is_object() && j.contains("type") && j["type"].is_string()
               ? j["type"].get<std::string>()
               : std::string();
}

bool flag(const Json& j, const char* key, bool fallback)
{
    return j.is_object() && j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

// The pre-tokenizer as a flat list of steps (Sequence unrolled).
void flatten(const Json& p, std::vector<const Json*>& out)
{
    if (typeOf(p) == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array()) {
        for (const Json& child : p["pretokenizers"])
            flatten(child, out);
    } else {
        out.push_back(&p);
    }
}

std::string preTokenizerName(const Json& root, const std::string& path)
{
    const Json& model = root.contains("model") ? root["model"] : Json();
    if (typeOf(model) != "BPE")
        fail(path, ": GGUF export writes byte-level BPE tokenizer.json files; this model is '",
             typeOf(model), "'");
    if (flag(model, "byte_fallback", false))
        fail(path, ": a BPE with byte_fallback is a sentencepiece-style vocabulary, which GGUF "
                   "export does not write from tokenizer.json");
    std::vector<const Json*> steps;
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null())
        flatten(root["pre_tokenizer"], steps);
    std::string name;
    if (steps.size() == 1 && typeOf(*steps[0]) == "ByteLevel" &&
        flag(*steps[0], "use_regex", true) && !flag(*steps[0], "add_prefix_space", true))
        name = "gpt-2";
    if (steps.size() == 2 && typeOf(*steps[0]) == "Split" && typeOf(*steps[1]) == "ByteLevel" &&
        !flag(*steps[1], "use_regex", true) && !flag(*steps[1], "add_prefix_space", true) &&
        !flag(*steps[0], "invert", false) && steps[0]->value("behavior", "") == "Isolated") {
        const Json& pattern = steps[0]->value("pattern", Json::object());
        const std::string regex = pattern.value("Regex", "");
        if (regex == kLlama3Regex)
            name = "llama-bpe";
        else if (regex == kQwen2Regex)
            name = "qwen2";
        else if (regex == kGpt2Regex)
            name = "gpt-2";
    }
    if (name.empty())
        fail(path, ": its pre_tokenizer is not one llama.cpp knows by name (GGUF export writes "
                   "GPT-2's ByteLevel regex, Llama-3's or Qwen2's Split regex, without a prefix "
                   "space); llama.cpp would split text differently from the tokenizer the model "
                   "was trained with");
    const Json& normalizer = root.contains("normalizer") ? root["normalizer"] : Json();
    if (!normalizer.is_null() && !(typeOf(normalizer) == "NFC" && name == "qwen2"))
        fail(path, ": normalizer '", typeOf(normalizer),
             "' is not written to GGUF (only Qwen2's NFC is accepted)");
    return name;
}

Json parseTokenizerJson(const std::string& path)
{
    auto root = readJsonIfPresent(path);
    if (!root)
        fail(path, ": missing");
    return *root;
}

// "left right" from either spelling tokenizer.json uses for a merge.
std::string mergeText(const Json& m, const std::string& path)
{
    if (m.is_string())
        return m.get<std::string>();
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
        return m[0].get<std::string>() + " " + m[1].get<std::string>();
    fail(path, ": merge ", m.dump(), " is neither \"a b\" nor [\"a\", \"b\"]");
}

void readBpeVocab(const std::string& path, const ModelConfig& c, GgufVocab& v)
{
    const Json root = parseTokenizerJson(path);
    v.model = "gpt2";
    v.pre = preTokenizerName(root, path);
    std::vector<std::string> byId;
    std::vector<int32_t> types;
    auto put = [&](int64_t id, const std::string& token, int32_t type) {
        if (id < 0)
            fail(path, ": token '", token, "' has negative id ", id);
        if (id >= c.vocabSize)
            fail("export: ", path, " has token id ", id, " but the model's vocab_size is ",
                 c.vocabSize);
        if (static_cast<size_t>(id) >= byId.size()) {
            byId.resize(static_cast<size_t>(id) + 1);
            types.resize(static_cast<size_t>(id) + 1, 0);
        }
        byId[static_cast<size_t>(id)] = token;
        types[static_cast<size_t>(id)] = type;
    };
    const Json& vocab = root["model"].value("vocab", Json::object());
    for (const auto& [token, id] : vocab.items())
        put(id.get<int64_t>(), token, 1);
    // Added tokens keep their text as written (llama.cpp matches them in raw text): special ones
    // are control tokens, the others user-defined.
    if (root.contains("added_tokens") && root["added_tokens"].is_array())
        for (const Json& t : root["added_tokens"])
            put(t.at("id").get<int64_t>(), t.at("content").get<std::string>(),
                flag(t, "special", false) ? 3 : 4);
    for (int64_t id = 0; id < c.vocabSize; ++id) {
        if (static_cast<size_t>(id) < byId.size() && types[static_cast<size_t>(id)] != 0) {
            v.tokens.push_back(byId[static_cast<size_t>(id)]);
            v.types.push_back(types[static_cast<size_t>(id)]);
        } else {  // a gap in the ids, or embedding rows beyond the tokenizer
            v.tokens.push_back("[PAD" + std::to_string(id) + "]");
            v.types.push_back(5);
        }
    }
    if (root["model"].contains("merges"))
        for (const Json& m : root["model"]["merges"])
            v.merges.push_back(mergeText(m, path));
}

void readSentencePiece(const std::string& spModel, const ModelConfig& c, GgufVocab& v)
{
    SentencePieceSpec ids;
    const auto pieces = readSentencePieceVocab(spModel, &ids);
    if (static_cast<int64_t>(pieces.size()) > c.vocabSize)
        fail("export: ", spModel, " has ", pieces.size(), " pieces but the model's vocab_size is ",
             c.vocabSize);
    v.model = "llama";
    for (const auto& p : pieces) {
        v.tokens.push_back(p.piece);
        v.scores.push_back(p.score);
        v.types.push_back(static_cast<int32_t>(p.type));
    }
    for (int64_t id = static_cast<int64_t>(pieces.size()); id < c.vocabSize; ++id) {
        v.tokens.push_back("[PAD" + std::to_string(id) + "]");
        v.scores.push_back(-1000.0f);
        v.types.push_back(static_cast<int32_t>(SentencePieceEntry::Type::Unused));
    }
    v.bos = ids.bosId;
    v.eos = ids.eosId;
    v.unk = ids.unkId;
    v.pad = ids.padId;
    v.addSpacePrefix = ids.addDummyPrefix;
}

}  // namespace

std::string ggufPreTokenizerName(const std::string& tokenizerJson)
{
    return preTokenizerName(parseTokenizerJson(tokenizerJson), tokenizerJson);
}

void checkGgufTokenizer(const std::string& modelDir)
{
    if (fileExists(joinPath(modelDir, "tokenizer.model")))
        return;
    const std::string json = joinPath(modelDir, "tokenizer.json");
    if (!fileExists(json))
        fail("export: GGUF export needs a tokenizer.model (sentencepiece) or tokenizer.json "
             "(byte-level BPE); ",
             modelDir, " has neither");
    ggufPreTokenizerName(json);
}

GgufVocab readGgufVocab(const std::string& modelDir, const ModelConfig& c)
{
    GgufVocab v;
    const auto tokConfig = readJsonIfPresent(joinPath(modelDir, "tokenizer_config.json"));
    const std::string spModel = joinPath(modelDir, "tokenizer.model");
    if (fileExists(spModel)) {
        readSentencePiece(spModel, c, v);
        v.addBos = tokConfig ? flag(*tokConfig, "add_bos_token", true) : true;
    } else {
        readBpeVocab(joinPath(modelDir, "tokenizer.json"), c, v);
        // Our tokenizer resolves tokenizer_config.json's token names and the post-processor: BOS is
        // added when encoding with special tokens puts it first.
        const auto tok = loadTokenizer(modelDir);
        v.bos = tok->bosId().value_or(-1);
        v.eos = tok->eosId().value_or(-1);
        const auto ids = tok->encode("a", true);
        v.addBos = v.bos >= 0 && !ids.empty() && ids.front() == v.bos;
        if (tokConfig && tokConfig->contains("add_bos_token"))
            v.addBos = flag(*tokConfig, "add_bos_token", v.addBos);
    }
    v.addEos = tokConfig ? flag(*tokConfig, "add_eos_token", false) : false;
    // config.json's ids win over the tokenizer's, as transformers reads them.
    if (!c.bosTokenIds.empty())
        v.bos = c.bosTokenIds.front();
    if (!c.eosTokenIds.empty())
        v.eos = c.eosTokenIds.front();

    if (tokConfig && tokConfig->contains("chat_template") &&
        (*tokConfig)["chat_template"].is_string())
        v.chatTemplate = (*tokConfig)["chat_template"].get<std::string>();
    else if (fileExists(joinPath(modelDir, "chat_template.jinja")))
        v.chatTemplate = readFile(joinPath(modelDir, "chat_template.jinja"));
    return v;
}

}  // namespace tb
