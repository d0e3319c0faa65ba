// loadTokenizer: picks sentencepiece or tokenizer.json for a model folder and applies
// tokenizer_config.json.
#include "tokenizer/tokenizer.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <nlohmann/json.hpp>

namespace tb {

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& modelDir)
{
    if (!fileExists(modelDir))
        fail(modelDir, ": not found");
    const std::string spPath = joinPath(modelDir, "tokenizer.model");
    const std::string jsonPath = joinPath(modelDir, "tokenizer.json");
    const std::string configPath = joinPath(modelDir, "tokenizer_config.json");

    bool addBos = true;
    if (fileExists(configPath)) {
        const std::string text = readFile(configPath);
        checkJsonDepth(text, configPath);
        nlohmann::json cfg;
        try {
            cfg = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
            fail(configPath, ": not valid JSON (", e.what(), ")");
        }
        if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean())
            addBos = cfg["add_bos_token"].get<bool>();
    }
    // A sentencepiece model is the source its tokenizer.json (if any) was converted from: prefer
    // it.
    if (fileExists(spPath))
        return loadSentencePieceTokenizer(spPath, addBos);
    if (fileExists(jsonPath))
        return loadBpeTokenizer(jsonPath);
    fail(modelDir, ": no tokenizer.json or tokenizer.model");
}

}  // namespace tb
