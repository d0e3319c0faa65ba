// Resolving trainable_tokens for a model: the stop tokens its files name, token texts looked up in
// its vocabulary, and the folder's tokenizer and template end-of-turn tokens kept between calls.
#include "peft/trainable_tokens.h"

#include "tokenizer/model_template.h"

#include "peft/trainable_count.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <mutex>

namespace tb {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

// eos_token_id of one JSON file (a number or a list of numbers); none when absent or unreadable
// (loadModelConfig reports broken config files).
void addEosIds(const std::string& path, std::vector<int64_t>& out)
{
    if (!fileExists(path))
        return;
    const auto j = nlohmann::json::parse(readFile(path), nullptr, false);
    if (!j.is_object() || !j.contains("eos_token_id"))
        return;
    const auto& v = j.at("eos_token_id");
    for (const auto& id : v.is_array() ? v : nlohmann::json::array({v}))
        if (id.is_number_integer() && id.get<int64_t>() >= 0)
            out.push_back(id.get<int64_t>());
}

void sortDistinct(std::vector<int64_t>& ids)
{
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// The folder of a model's config.json; "" for a bare config file or a config without a file.
std::string modelFolder(const ModelConfig& model)
{
    const std::filesystem::path source(model.sourcePath);
    if (source.filename() != "config.json" || !fileExists(model.sourcePath))
        return "";
    return source.parent_path().string();
}

// A key of a folder (written the same however it was spelled) and its files' modification times: a
// cache entry stays valid until one of them changes.
std::string folderKey(const std::string& dir, std::initializer_list<const char*> files)
{
    std::string key = std::filesystem::path(dir).lexically_normal().string();
    while (key.size() > 1 && key.back() == '/')
        key.pop_back();
    for (const char* f : files) {
        std::error_code ec;
        const auto time = std::filesystem::last_write_time(joinPath(dir, f), ec);
        key += '|';
        key += ec ? std::string("-") : std::to_string(time.time_since_epoch().count());
    }
    return key;
}

bool needsTokenizer(const TrainableTokensOptions& o)
{
    if (o.automatic)
        return true;
    return std::any_of(o.tokens.begin(), o.tokens.end(),
                       [](const TokenRef& t) { return t.id < 0; });
}

}  // namespace

namespace {

// What the last few folders asked for (the studio's model, a run's base being exported, a model
// opened on a worker) gave, each loaded once, outside the lock: a thread asking for one folder
// never waits for another folder's load, and a worker's folder does not evict the model the GUI
// thread's estimates keep asking about. A load that fails fails again, unread, until the key (the
// folder's files and their times) changes.
template <typename T> class FolderCache {
public:
    T get(const std::string& key, const std::function<T()>& load)
    {
        std::shared_future<T> loaded;
        std::promise<T> promise;
        bool loading = false;
        {
            std::lock_guard lock(m_mutex);
            const auto it = std::find_if(m_cache.begin(), m_cache.end(),
                                         [&](const auto& entry) { return entry.first == key; });
            if (it != m_cache.end()) {
                loaded = it->second;
                m_cache.erase(it);
            } else {
                loaded = promise.get_future().share();
                loading = true;
            }
            m_cache.emplace_front(key, loaded);  // most recent first
            if (m_cache.size() > kFolders)
                m_cache.pop_back();
        }
        if (loading) {
            try {
                promise.set_value(load());
            } catch (...) {
                promise.set_exception(std::current_exception());
            }
        }
        return loaded.get();  // waits for a load in progress on another thread; rethrows its error
    }

private:
    static constexpr size_t kFolders = 4;
    std::mutex m_mutex;
    std::deque<std::pair<std::string, std::shared_future<T>>> m_cache;
};

}  // namespace

std::shared_ptr<const Tokenizer> folderTokenizer(const std::string& dir)
{
    static FolderCache<std::shared_ptr<const Tokenizer>> cache;
    return cache.get(folderKey(dir, {"tokenizer.model", "tokenizer.json", "tokenizer_config.json"}),
                     [&]() -> std::shared_ptr<const Tokenizer> {
                         if (!fileExists(joinPath(dir, "tokenizer.model")) &&
                             !fileExists(joinPath(dir, "tokenizer.json")))
                             return nullptr;
                         return loadTokenizer(dir);
                     });
}

std::vector<std::string> folderEndOfTurnTokens(const std::string& dir)
{
    static FolderCache<std::vector<std::string>> cache;
    return cache.get(folderKey(dir, {"tokenizer_config.json", "tokenizer.json",
                                     "chat_template.jinja", "chat_template.json"}),
                     [&] {
                         std::vector<std::string> tokens;
                         try {
                             if (const auto own = ChatTemplate::fromModel(dir))
                                 tokens = own->endOfTurnTokens();
                         } catch (const Error&) {
                         }
                         return tokens;
                     });
}

bool trainableTokensApply(const ModelConfig& model, const MethodOptions& run)
{
    switch (run.method) {
    case Method::Full:
        return false;
    case Method::Partial:
        return !contains(run.partial.modules, "embeddings") &&
               !contains(run.partial.modules, "lm_head");
    case Method::Lora:
        return !contains(resolvedLoraTargets(model, run.lora), "lm_head");
    case Method::Adapter:
    case Method::Prompt:
        return true;
    }
    return false;
}

std::vector<std::string> chatEndOfTurnTokens()
{
    return {"<|im_end|>", "<|eot_id|>"};
}

std::vector<int64_t> stopTokenIds(const ModelConfig& model, const Tokenizer* tokenizer,
                                  const std::string& modelDir)
{
    std::vector<int64_t> ids = model.eosTokenIds;
    if (!modelDir.empty()) {
        addEosIds(joinPath(modelDir, "config.json"), ids);
        addEosIds(joinPath(modelDir, "generation_config.json"), ids);
    }
    if (tokenizer) {
        if (auto eos = tokenizer->eosId())
            ids.push_back(*eos);
        std::vector<std::string> pieces = chatEndOfTurnTokens();
        if (!modelDir.empty())
            for (std::string& t : folderEndOfTurnTokens(modelDir))
                pieces.push_back(std::move(t));
        for (const auto& piece : pieces)
            if (auto id = tokenizer->pieceToId(piece))
                ids.push_back(*id);
    }
    // Ids past the embedding rows (a config naming a token the checkpoint lacks) cannot train.
    std::erase_if(ids, [&](int64_t id) { return id >= model.vocabSize; });
    sortDistinct(ids);
    return ids;
}

std::vector<int64_t> trainableTokenIds(const ModelConfig& model, const MethodOptions& run,
                                       const Tokenizer* tokenizer)
{
    if (!trainableTokensApply(model, run))
        return {};
    const TrainableTokensOptions& o = run.trainableTokens;
    if (o.automatic)
        return stopTokenIds(model, tokenizer, modelFolder(model));
    std::vector<int64_t> ids;
    for (const TokenRef& t : o.tokens) {
        if (t.id >= 0) {
            if (t.id >= model.vocabSize)
                fail("key 'trainable_tokens' has id ", t.id, ", outside the model's vocabulary of ",
                     model.vocabSize, " ids");
            ids.push_back(t.id);
            continue;
        }
        if (!tokenizer)
            fail("key 'trainable_tokens' has '", t.text,
                 "', but the model has no tokenizer to look it up in (give its id)");
        const auto id = tokenizer->pieceToId(t.text);
        if (!id || *id >= model.vocabSize)
            fail("key 'trainable_tokens' has '", t.text,
                 "', which is not one token of the model's vocabulary (give a token as the "
                 "vocabulary spells it, such as '",
                 tokenizer->eosId() ? tokenizer->idToPiece(*tokenizer->eosId()) : "</s>",
                 "', or an id)");
        ids.push_back(*id);
    }
    sortDistinct(ids);
    return ids;
}

std::vector<int64_t> trainableTokenIds(const ModelConfig& model, const MethodOptions& run)
{
    if (!trainableTokensApply(model, run))
        return {};
    const std::string dir = modelFolder(model);
    std::shared_ptr<const Tokenizer> tokenizer;
    if (!dir.empty() && needsTokenizer(run.trainableTokens))
        tokenizer = folderTokenizer(dir);
    return trainableTokenIds(model, run, tokenizer.get());
}

int64_t trainableTokenParameters(const ModelConfig& model, int64_t tokens)
{
    return tokens * model.hiddenSize * (model.tieWordEmbeddings ? 1 : 2);
}

}  // namespace tb
