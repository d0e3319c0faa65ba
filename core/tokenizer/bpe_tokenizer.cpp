// Byte-level BPE tokenizer read from a Hugging Face tokenizer.json (GPT-2, Llama-3, Qwen2
// families).
//
// Pipeline, as Hugging Face `tokenizers` runs it for encode(text, add_special_tokens):
//   added tokens (normalized=false) matched on the raw text -> normalizer (NFC...) on the rest ->
//   added tokens (normalized=true) matched -> pre-tokenizers (Split regex, ByteLevel) -> BPE per
//   pre-token -> post-processor (TemplateProcessing BOS...). Decoding is ByteLevel with U+FFFD for
//   invalid UTF-8, like Rust's String::from_utf8_lossy.
// Normalization, the pre-tokenizer splits and the byte table live in pretokenizer.h. Text that is
// not valid UTF-8 has its invalid sequences replaced by U+FFFD before encoding (Python strings
// cannot hold them either).
#include "tokenizer/tokenizer.h"

#include "tokenizer/pretokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <mutex>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace tb {
namespace {

// Ids index tables of that many entries: more than any real vocabulary (the largest hold about
// 262,000 tokens), and a bound on what a hostile file can make Tunebench allocate.
constexpr int64_t kMaxTokenId = int64_t(1) << 24;

using Json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Pieces of the pipeline

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool special = false;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    std::string decodeForm;  // content, normalized when `normalized`
};

// Byte trie over added-token contents, matched leftmost-longest like tokenizers' Aho-Corasick.
class TokenTrie {
public:
    TokenTrie() : m_nodes(1) {}
    bool empty() const { return m_nodes.size() == 1; }

    void insert(const std::string& key, size_t token)
    {
        if (key.empty())
            return;
        size_t node = 0;
        for (unsigned char c : key) {
            auto it = m_nodes[node].next.find(c);
            if (it == m_nodes[node].next.end()) {
                m_nodes.emplace_back();
                it = m_nodes[node].next.emplace(c, m_nodes.size() - 1).first;
            }
            node = it->second;
        }
        m_nodes[node].token = static_cast<int64_t>(token);
    }

    // Longest key starting at text[at]: (token, length), or token -1.
    std::pair<int64_t, size_t> longestAt(std::string_view text, size_t at) const
    {
        std::pair<int64_t, size_t> best{-1, 0};
        size_t node = 0;
        for (size_t i = at; i < text.size(); ++i) {
            auto it = m_nodes[node].next.find(static_cast<unsigned char>(text[i]));
            if (it == m_nodes[node].next.end())
                break;
            node = it->second;
            if (m_nodes[node].token >= 0)
                best = {m_nodes[node].token, i + 1 - at};
        }
        return best;
    }

private:
    struct Node {
        std::unordered_map<unsigned char, size_t> next;
        int64_t token = -1;
    };
    std::vector<Node> m_nodes;
};

// A stretch of text between added tokens (token < 0), or an added token.
struct Segment {
    std::string_view text;
    int64_t token = -1;  // index into m_added
};

const Json* member(const Json& j, const char* key)
{
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

bool flag(const Json& j, const char* key, bool fallback)
{
    const Json* v = member(j, key);
    return v && v->is_boolean() ? v->get<bool>() : fallback;
}

std::string typeOf(const Json& j)
{
    const Json* t = member(j, "type");
    return t && t->is_string() ? t->get<std::string>() : "";
}

// ---------------------------------------------------------------------------------------------

class BpeTokenizer final : public Tokenizer {
public:
    explicit BpeTokenizer(const std::string& path) : m_path(path)
    {
        const std::string text = readFile(path);
        checkJsonDepth(text, path);
        Json root;
        try {
            root = Json::parse(text);
        } catch (const Json::exception& e) {
            fail(path, ": not valid JSON (", e.what(), ")");
        }
        try {
            if (!root.is_object())
                fail(path, ": not a tokenizer.json (the top level is not an object)");
            loadModel(root);
            loadAddedTokens(root);
            loadNormalizer(root);
            loadPreTokenizer(root);
            loadPostProcessor(root);
            checkDecoder(root);
            loadSpecialIds();
        } catch (const Json::exception& e) {
            fail(path, ": unexpected structure (", e.what(), ")");
        }
    }

    std::vector<int32_t> encode(const std::string& input, bool addSpecial) const override
    {
        const std::string text = toValidUtf8(input);
        std::vector<int32_t> ids;
        if (addSpecial)
            ids = m_templatePrefix;
        for (const Segment& raw : splitAdded(text, m_trieRaw)) {
            if (raw.token >= 0) {
                ids.push_back(m_added[raw.token].id);
                continue;
            }
            std::string normalized(raw.text);
            for (NormalForm form : m_normalizers)
                normalized = normalizeUnicode(normalized, form);
            for (const Segment& seg : splitAdded(normalized, m_trieNormalized)) {
                if (seg.token >= 0)
                    ids.push_back(m_added[seg.token].id);
                else
                    encodeOrdinary(seg.text, ids);
            }
        }
        if (addSpecial)
            ids.insert(ids.end(), m_templateSuffix.begin(), m_templateSuffix.end());
        return ids;
    }

    std::string decode(const std::vector<int32_t>& ids, bool skipSpecial) const override
    {
        std::string bytes;
        for (int32_t id : ids) {
            if (id < 0 || id >= vocabSize())
                fail("token id ", id, " is outside the vocabulary (", vocabSize(), ") of ", m_path);
            const std::string* token = tokenOf(id, true);
            if (!token || (skipSpecial && m_specialContents.count(*token)))
                continue;
            byteLevelDecode(*token, bytes);
        }
        return toValidUtf8(bytes);
    }

    int32_t vocabSize() const override { return static_cast<int32_t>(m_idToToken.size()); }

    std::string idToPiece(int32_t id) const override
    {
        const std::string* token = id >= 0 && id < vocabSize() ? tokenOf(id) : nullptr;
        if (!token)
            fail("token id ", id, " is not in the vocabulary of ", m_path);
        return *token;
    }

    std::optional<int32_t> pieceToId(const std::string& piece) const override
    {
        if (auto it = m_addedByContent.find(piece); it != m_addedByContent.end())
            return m_added[it->second].id;
        if (auto it = m_vocab.find(piece); it != m_vocab.end())
            return it->second;
        return std::nullopt;
    }

    bool isSpecial(int32_t id) const override
    {
        auto it = m_addedById.find(id);
        return it != m_addedById.end() && m_added[it->second].special;
    }

    std::string kind() const override { return "bpe"; }

private:
    struct Merge {
        int32_t rank;
        int32_t id;
    };

    static uint64_t pairKey(int32_t a, int32_t b)
    {
        return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    }

    const Merge* findMerge(int32_t a, int32_t b) const
    {
        auto it = m_merges.find(pairKey(a, b));
        return it == m_merges.end() ? nullptr : &it->second;
    }

    // forDecoding: normalized added tokens in their normalized form, as tokenizers >= 0.23 decodes
    // them (so an NFC tokenizer's added "cafe\u0301" decodes through ByteLevel as "caf\uFFFD").
    const std::string* tokenOf(int32_t id, bool forDecoding = false) const
    {
        if (auto it = m_addedById.find(id); it != m_addedById.end())
            return forDecoding ? &m_added[it->second].decodeForm : &m_added[it->second].content;
        return m_hasToken[id] ? &m_idToToken[id] : nullptr;
    }

    void loadModel(const Json& root)
    {
        const Json* model = member(root, "model");
        if (!model || !model->is_object())
            fail(m_path, ": key 'model' missing");
        const std::string type = typeOf(*model);
        if (!type.empty() && type != "BPE")
            fail(m_path, ": model.type is '", type, "'; only byte-level BPE tokenizer.json ",
                 "files are supported (not WordPiece, Unigram or WordLevel)");
        const Json* vocab = member(*model, "vocab");
        if (!vocab || !vocab->is_object())
            fail(m_path, ": key 'model.vocab' missing or not an object");
        const Json* merges = member(*model, "merges");
        if (!merges || !merges->is_array())
            fail(m_path, ": key 'model.merges' missing or not an array");
        for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
            const Json* v = member(*model, key);
            if (v && v->is_string() && !v->get<std::string>().empty())
                fail(m_path, ": model.", key, " '", v->get<std::string>(),
                     "' is not supported by byte-level BPE");
        }
        m_ignoreMerges = flag(*model, "ignore_merges", false);
        m_fuseUnk = flag(*model, "fuse_unk", false);

        m_vocab.reserve(vocab->size());
        int32_t maxId = -1;
        for (auto it = vocab->begin(); it != vocab->end(); ++it) {
            if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
                it.value().get<int64_t>() >= kMaxTokenId)
                fail(m_path, ": model.vocab['", it.key(), "'] is not a valid id (0 to ",
                     kMaxTokenId - 1, "): ", it.value().dump());
            const auto id = it.value().get<int32_t>();
            m_vocab.emplace(it.key(), id);
            maxId = std::max(maxId, id);
        }
        m_idToToken.resize(static_cast<size_t>(maxId + 1));
        m_hasToken.assign(m_idToToken.size(), false);
        for (const auto& [token, id] : m_vocab) {
            m_idToToken[id] = token;
            m_hasToken[id] = true;
        }
        for (int b = 0; b < 256; ++b) {
            auto it = m_vocab.find(byteLevelChar(static_cast<unsigned char>(b)));
            m_byteIds[b] = it == m_vocab.end() ? -1 : it->second;
        }
        if (const Json* unk = member(*model, "unk_token"); unk && unk->is_string()) {
            auto it = m_vocab.find(unk->get<std::string>());
            if (it == m_vocab.end())
                fail(m_path, ": model.unk_token '", unk->get<std::string>(),
                     "' is not in model.vocab");
            m_unkId = it->second;
        }

        m_merges.reserve(merges->size());
        std::string joined;
        for (size_t rank = 0; rank < merges->size(); ++rank) {
            const Json& entry = (*merges)[rank];
            std::string a, b;
            if (entry.is_string()) {  // "a b"
                const std::string& s = entry.get_ref<const std::string&>();
                const size_t space = s.find(' ');
                if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
                    fail(m_path, ": model.merges[", rank, "] '", s,
                         "' is not two tokens separated by a space");
                a = s.substr(0, space);
                b = s.substr(space + 1);
            } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
                       entry[1].is_string()) {  // ["a", "b"]
                a = entry[0].get<std::string>();
                b = entry[1].get<std::string>();
            } else {
                fail(m_path, ": model.merges[", rank,
                     "] is neither \"a b\" nor [\"a\", \"b\"]: ", entry.dump());
            }
            joined = a + b;
            auto ia = m_vocab.find(a), ib = m_vocab.find(b), ij = m_vocab.find(joined);
            for (auto [it, token] : {std::pair{ia, &a}, std::pair{ib, &b}, std::pair{ij, &joined}})
                if (it == m_vocab.end())
                    fail(m_path, ": model.merges[", rank, "] refers to token '", *token,
                         "' which is not in model.vocab");
            // A repeated pair keeps its last rank, as tokenizers' HashMap collect does.
            m_merges[pairKey(ia->second, ib->second)] = {static_cast<int32_t>(rank), ij->second};
        }
    }

    void loadAddedTokens(const Json& root)
    {
        const Json* list = member(root, "added_tokens");
        if (!list)
            return;
        if (!list->is_array())
            fail(m_path, ": key 'added_tokens' is not an array");
        for (size_t i = 0; i < list->size(); ++i) {
            const Json& t = (*list)[i];
            const Json* id = member(t, "id");
            const Json* content = member(t, "content");
            if (!id || !id->is_number_integer() || !content || !content->is_string())
                fail(m_path, ": added_tokens[", i,
                     "] needs an integer 'id' and a string 'content'");
            // Read as a signed number: an id of 2^64 - 1 is -1 here, not a huge one.
            if (id->get<int64_t>() < 0 || id->get<int64_t>() >= kMaxTokenId)
                fail(m_path, ": added_tokens[", i, "].id ", id->dump(), " is not a valid id (0 to ",
                     kMaxTokenId - 1, ")");
            AddedToken token;
            token.id = id->get<int32_t>();
            token.content = toValidUtf8(content->get<std::string>());
            token.special = flag(t, "special", false);
            token.singleWord = flag(t, "single_word", false);
            token.lstrip = flag(t, "lstrip", false);
            token.rstrip = flag(t, "rstrip", false);
            token.normalized = flag(t, "normalized", !token.special);
            if (static_cast<size_t>(token.id) >= m_idToToken.size()) {
                m_idToToken.resize(static_cast<size_t>(token.id) + 1);
                m_hasToken.resize(m_idToToken.size(), false);
            }
            m_addedById[token.id] = m_added.size();
            m_addedByContent[token.content] = m_added.size();
            if (token.special)
                m_specialContents.insert(token.content);
            m_added.push_back(std::move(token));
        }
    }

    void loadNormalizer(const Json& root)
    {
        const Json* n = member(root, "normalizer");
        if (n)
            addNormalizer(*n);
        // Normalized added tokens are matched in their normalized form.
        for (size_t i = 0; i < m_added.size(); ++i) {
            std::string key = m_added[i].content;
            if (m_added[i].normalized)
                for (NormalForm form : m_normalizers)
                    key = normalizeUnicode(key, form);
            m_added[i].decodeForm = key;
            (m_added[i].normalized ? m_trieNormalized : m_trieRaw).insert(key, i);
        }
    }

    void addNormalizer(const Json& n)
    {
        const std::string type = typeOf(n);
        if (type == "Sequence") {
            const Json* list = member(n, "normalizers");
            if (list && list->is_array())
                for (const Json& child : *list)
                    addNormalizer(child);
        } else if (type == "NFC") {
            m_normalizers.push_back(NormalForm::NFC);
        } else if (type == "NFD") {
            m_normalizers.push_back(NormalForm::NFD);
        } else if (type == "NFKC") {
            m_normalizers.push_back(NormalForm::NFKC);
        } else if (type == "NFKD") {
            m_normalizers.push_back(NormalForm::NFKD);
        } else {
            fail(m_path, ": normalizer '", type.empty() ? n.dump() : type,
                 "' is not supported (byte-level BPE supports none, NFC, NFD, NFKC, NFKD)");
        }
    }

    void loadPreTokenizer(const Json& root)
    {
        const Json* p = member(root, "pre_tokenizer");
        if (!p)
            fail(m_path, ": pre_tokenizer is null; only byte-level BPE (a ByteLevel ",
                 "pre-tokenizer) is supported");
        addPreTokenizer(*p);
        if (!m_hasByteLevel)
            fail(m_path, ": pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
    }

    void addPreTokenizer(const Json& p)
    {
        const std::string type = typeOf(p);
        if (m_hasByteLevel)
            fail(m_path, ": pre_tokenizer '", type, "' after ByteLevel is not supported");
        if (type == "Sequence") {
            const Json* list = member(p, "pretokenizers");
            if (!list || !list->is_array())
                fail(m_path, ": pre_tokenizer Sequence without a 'pretokenizers' array");
            for (const Json& child : *list)
                addPreTokenizer(child);
        } else if (type == "ByteLevel") {
            m_hasByteLevel = true;
            SplitStep step;
            step.addPrefixSpace = flag(p, "add_prefix_space", true);
            if (flag(p, "use_regex", true))
                step.regex = compileRegex(kGpt2Pattern, false, m_path);
            m_steps.push_back(std::move(step));
        } else if (type == "Split") {
            SplitStep step;
            const Json* pattern = member(p, "pattern");
            const Json* regex = pattern ? member(*pattern, "Regex") : nullptr;
            const Json* literal = pattern ? member(*pattern, "String") : nullptr;
            if (regex && regex->is_string())
                step.regex = compileRegex(regex->get<std::string>(), false, m_path);
            else if (literal && literal->is_string())
                step.regex = compileRegex(literal->get<std::string>(), true, m_path);
            else
                fail(m_path,
                     ": pre_tokenizer Split needs pattern {\"Regex\": ...} or {\"String\": ...}");
            const Json* behavior = member(p, "behavior");
            const std::string name =
                behavior && behavior->is_string() ? behavior->get<std::string>() : "";
            static const std::unordered_map<std::string, SplitBehavior> behaviors = {
                {"Removed", SplitBehavior::Removed},
                {"Isolated", SplitBehavior::Isolated},
                {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
                {"MergedWithNext", SplitBehavior::MergedWithNext},
                {"Contiguous", SplitBehavior::Contiguous}};
            auto it = behaviors.find(name);
            if (it == behaviors.end())
                fail(m_path, ": pre_tokenizer Split behavior '", name, "' is not known");
            step.behavior = it->second;
            step.invert = flag(p, "invert", false);
            m_steps.push_back(std::move(step));
        } else if (type == "Digits") {
            SplitStep step;  // Rust's char::is_numeric: Nd, Nl, No
            step.regex = compileRegex(flag(p, "individual_digits", false) ? "\\p{N}" : "\\p{N}+",
                                      false, m_path);
            m_steps.push_back(std::move(step));
        } else {
            fail(m_path, ": pre_tokenizer type '", type.empty() ? p.dump() : type,
                 "' is not supported: only byte-level BPE is (ByteLevel, optionally after Split ",
                 "or Digits), not Metaspace/SentencePiece-style tokenizers");
        }
    }

    // Special ids a post-processor puts around the sequence ("single" template only).
    void addPostProcessor(const Json& p)
    {
        const std::string type = typeOf(p);
        std::vector<int32_t> prefix, suffix;
        if (type == "Sequence") {
            const Json* list = member(p, "processors");
            if (list && list->is_array())
                for (const Json& child : *list)
                    addPostProcessor(child);
            return;
        } else if (type == "ByteLevel") {
            return;  // offsets only
        } else if (type == "TemplateProcessing") {
            const Json* single = member(p, "single");
            const Json* specials = member(p, "special_tokens");
            if (!single || !single->is_array())
                fail(m_path, ": post_processor TemplateProcessing without a 'single' template");
            bool seenSequence = false;
            for (const Json& item : *single) {
                if (member(item, "Sequence")) {
                    seenSequence = true;
                    continue;
                }
                const Json* special = member(item, "SpecialToken");
                const Json* name = special ? member(*special, "id") : nullptr;
                if (!name || !name->is_string())
                    fail(m_path, ": post_processor template item ", item.dump(),
                         " is not understood");
                const Json* entry =
                    specials ? member(*specials, name->get<std::string>().c_str()) : nullptr;
                const Json* ids = entry ? member(*entry, "ids") : nullptr;
                if (!ids || !ids->is_array())
                    fail(m_path, ": post_processor.special_tokens has no ids for '",
                         name->get<std::string>(), "'");
                for (const Json& id : *ids)
                    (seenSequence ? suffix : prefix).push_back(id.get<int32_t>());
            }
        } else if (type == "RobertaProcessing" || type == "BertProcessing") {
            const Json* cls = member(p, "cls");
            const Json* sep = member(p, "sep");
            if (!cls || !sep || !cls->is_array() || !sep->is_array() || cls->size() != 2 ||
                sep->size() != 2)
                fail(m_path, ": post_processor ", type, " needs 'cls' and 'sep' as [token, id]");
            prefix.push_back((*cls)[1].get<int32_t>());
            suffix.push_back((*sep)[1].get<int32_t>());
        } else {
            fail(m_path, ": post_processor type '", type, "' is not supported");
        }
        // A later processor wraps what the earlier ones produced.
        m_templatePrefix.insert(m_templatePrefix.begin(), prefix.begin(), prefix.end());
        m_templateSuffix.insert(m_templateSuffix.end(), suffix.begin(), suffix.end());
    }

    void loadPostProcessor(const Json& root)
    {
        if (const Json* p = member(root, "post_processor"))
            addPostProcessor(*p);
        for (int32_t id : m_templatePrefix)
            if (id < 0 || id >= vocabSize())
                fail(m_path, ": post_processor adds id ", id, " outside the vocabulary");
        for (int32_t id : m_templateSuffix)
            if (id < 0 || id >= vocabSize())
                fail(m_path, ": post_processor adds id ", id, " outside the vocabulary");
    }

    void checkDecoder(const Json& root)
    {
        const Json* d = member(root, "decoder");
        if (d && typeOf(*d) != "ByteLevel")
            fail(m_path, ": decoder type '", typeOf(*d),
                 "' is not supported (byte-level BPE decodes with ByteLevel)");
    }

    // BOS/EOS: tokenizer_config.json next to the file decides; without it, the post-processor's
    // first special token, then well-known names.
    void loadSpecialIds()
    {
        bool bosSet = false, eosSet = false;
        const std::filesystem::path configPath =
            std::filesystem::path(m_path).parent_path() / "tokenizer_config.json";
        if (fileExists(configPath.string())) {
            const std::string text = readFile(configPath.string());
            checkJsonDepth(text, configPath.string());
            Json config;
            try {
                config = Json::parse(text);
            } catch (const Json::exception& e) {
                fail(configPath.string(), ": not valid JSON (", e.what(), ")");
            }
            auto read = [&](const char* key, std::optional<int32_t>& out) {
                auto it = config.find(key);
                if (it == config.end())
                    return false;
                const Json* content = it->is_object() ? member(*it, "content") : &*it;
                if (content && content->is_string()) {
                    out = pieceToId(content->get<std::string>());
                    if (!out)
                        fail(configPath.string(), ": ", key, " '", content->get<std::string>(),
                             "' is not a token of ", m_path);
                }
                return true;
            };
            bosSet = read("bos_token", m_bosId);
            eosSet = read("eos_token", m_eosId);
        }
        auto firstKnown = [&](std::initializer_list<const char*> names) -> std::optional<int32_t> {
            for (const char* name : names)
                if (auto id = pieceToId(name))
                    return id;
            return std::nullopt;
        };
        if (!bosSet)
            m_bosId = !m_templatePrefix.empty()
                          ? std::optional<int32_t>(m_templatePrefix.front())
                          : firstKnown({"<|begin_of_text|>", "<s>", "<|endoftext|>"});
        if (!eosSet)
            m_eosId = firstKnown(
                {"<|end_of_text|>", "<|endoftext|>", "<|im_end|>", "</s>", "<|eot_id|>"});
    }

    // Text split around added tokens, HF's AddedVocabulary::find_matches.
    std::vector<Segment> splitAdded(std::string_view text, const TokenTrie& trie) const
    {
        std::vector<Segment> out;
        if (trie.empty()) {
            if (!text.empty())
                out.push_back({text});
            return out;
        }
        size_t done = 0;  // text before this is in out
        size_t at = 0;
        while (at < text.size()) {
            const auto [token, length] = trie.longestAt(text, at);
            if (token < 0) {
                ++at;
                continue;
            }
            const AddedToken& added = m_added[token];
            size_t start = at, stop = at + length;
            at = stop;
            if (start < done)
                continue;  // inside whitespace an rstrip token already took
            if (added.singleWord) {
                size_t len = 0;
                const bool wordBefore =
                    start > 0 && isWordChar(decodeUtf8(text, previousCharStart(text, start), len));
                const bool wordAfter =
                    stop < text.size() && isWordChar(decodeUtf8(text, stop, len));
                if (wordBefore || wordAfter)
                    continue;
            }
            if (added.lstrip) {
                size_t len = 0;
                while (start > done &&
                       isWhiteSpace(decodeUtf8(text, previousCharStart(text, start), len)))
                    start = previousCharStart(text, start);
            }
            if (added.rstrip) {
                size_t len = 0;
                while (stop < text.size() && isWhiteSpace(decodeUtf8(text, stop, len)))
                    stop += len;
                at = stop;
            }
            if (done < start)
                out.push_back({text.substr(done, start - done)});
            out.push_back({text.substr(start, stop - start), token});
            done = stop;
        }
        if (done < text.size())
            out.push_back({text.substr(done)});
        return out;
    }

    // Text without added tokens -> pre-tokens -> BPE ids.
    void encodeOrdinary(std::string_view text, std::vector<int32_t>& ids) const
    {
        std::vector<std::string> pieces{std::string(text)}, next;
        for (const SplitStep& step : m_steps) {
            next.clear();
            for (const std::string& piece : pieces)
                splitPiece(step, piece, next);
            pieces.swap(next);
        }
        for (const std::string& piece : pieces)
            encodeWord(piece, ids);
    }

    // BPE of one pre-token (raw bytes; the vocabulary holds their ByteLevel characters).
    void encodeWord(const std::string& word, std::vector<int32_t>& ids) const
    {
        if (m_ignoreMerges) {  // Llama-3: a pre-token that is itself a token is not merged
            if (auto it = m_vocab.find(byteLevelEncode(word)); it != m_vocab.end()) {
                ids.push_back(it->second);
                return;
            }
        }
        constexpr size_t kCacheableLength = 256;  // bytes
        if (word.size() < kCacheableLength) {
            std::lock_guard lock(m_cacheMutex);
            if (auto it = m_cache.find(word); it != m_cache.end()) {
                ids.insert(ids.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        const std::vector<int32_t> merged = mergeWord(word);
        ids.insert(ids.end(), merged.begin(), merged.end());
        if (word.size() < kCacheableLength) {
            std::lock_guard lock(m_cacheMutex);
            if (m_cache.size() >= 65536)
                m_cache.clear();
            m_cache.emplace(word, merged);
        }
    }

    // Rank-ordered merging over a linked list of symbols with a priority queue (lowest rank first,
    // then leftmost), as tokenizers' Word::merge_all does.
    std::vector<int32_t> mergeWord(const std::string& word) const
    {
        struct Symbol {
            int32_t id;
            int32_t prev, next;
            bool alive;
        };
        std::vector<Symbol> symbols;
        symbols.reserve(word.size());
        bool pendingUnk = false;
        auto pushSymbol = [&](int32_t id) {
            const auto n = static_cast<int32_t>(symbols.size());
            symbols.push_back({id, n - 1, -1, true});
            if (n > 0)
                symbols[n - 1].next = n;
        };
        for (unsigned char b : word) {
            const int32_t id = m_byteIds[b];
            if (id >= 0) {
                pendingUnk = false;
                pushSymbol(id);
            } else if (m_unkId) {  // a byte the vocabulary lacks; without unk_token it is dropped
                if (!(pendingUnk && m_fuseUnk))
                    pushSymbol(*m_unkId);
                pendingUnk = true;
            }
        }
        struct Candidate {
            int32_t rank, pos, id;
            bool operator<(const Candidate& o) const  // priority_queue pops the largest
            {
                return rank != o.rank ? rank > o.rank : pos > o.pos;
            }
        };
        std::priority_queue<Candidate> queue;
        for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
            if (const Merge* m = findMerge(symbols[i].id, symbols[i + 1].id))
                queue.push({m->rank, i, m->id});
        while (!queue.empty()) {
            const Candidate top = queue.top();
            queue.pop();
            Symbol& left = symbols[top.pos];
            if (!left.alive || left.next < 0)
                continue;
            Symbol& right = symbols[left.next];
            const Merge* m = findMerge(left.id, right.id);
            if (!m || m->id != top.id)
                continue;  // stale: one side has merged since
            left.id = top.id;
            right.alive = false;
            left.next = right.next;
            if (left.next >= 0)
                symbols[left.next].prev = top.pos;
            if (left.prev >= 0)
                if (const Merge* p = findMerge(symbols[left.prev].id, left.id))
                    queue.push({p->rank, left.prev, p->id});
            if (left.next >= 0)
                if (const Merge* n = findMerge(left.id, symbols[left.next].id))
                    queue.push({n->rank, top.pos, n->id});
        }
        std::vector<int32_t> out;
        for (const Symbol& s : symbols)
            if (s.alive)
                out.push_back(s.id);
        return out;
    }

    std::string m_path;
    std::unordered_map<std::string, int32_t> m_vocab;
    std::vector<std::string> m_idToToken;  // model vocabulary by id (added tokens: m_added)
    std::vector<bool> m_hasToken;
    std::unordered_map<uint64_t, Merge> m_merges;  // (left id, right id) -> rank, merged id
    std::array<int32_t, 256> m_byteIds{};  // id of each byte's ByteLevel character, -1 if none
    std::optional<int32_t> m_unkId;
    bool m_fuseUnk = false;
    bool m_ignoreMerges = false;

    std::vector<AddedToken> m_added;
    std::unordered_map<int32_t, size_t> m_addedById;
    std::unordered_map<std::string, size_t> m_addedByContent;
    std::unordered_set<std::string> m_specialContents;
    TokenTrie m_trieRaw;         // added tokens with normalized=false
    TokenTrie m_trieNormalized;  // added tokens with normalized=true, in normalized form

    std::vector<NormalForm> m_normalizers;
    std::vector<SplitStep> m_steps;
    bool m_hasByteLevel = false;
    std::vector<int32_t> m_templatePrefix, m_templateSuffix;

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<int32_t>> m_cache;  // pre-token -> ids
};

}  // namespace

std::unique_ptr<Tokenizer> loadBpeTokenizer(const std::string& tokenizerJson)
{
    if (!fileExists(tokenizerJson))
        fail(tokenizerJson, ": not found");
    return std::make_unique<BpeTokenizer>(tokenizerJson);
}

}  // namespace tb
