// Trainable tokens (PEFT's trainable_token_indices): which rows of the token embedding and the head
// train for a model and a method, starting from the model's stop tokens. Torch-free.
#pragma once

#include "model/config.h"
#include "peft/method.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class Tokenizer;

// Whether trainable_tokens applies: the method keeps the token embedding and the head frozen (lora
// without an lm_head target, adapter, prompt, partial without embeddings and lm_head). Full
// training, and methods that train the embedding or the head, ignore it.
bool trainableTokensApply(const ModelConfig& model, const MethodOptions& run);

// End-of-turn tokens of the chat templates Tunebench knows, tried as single tokens of a vocabulary:
// ChatML's <|im_end|>, Llama 3's <|eot_id|>.
std::vector<std::string> chatEndOfTurnTokens();

// The tokens that end a model's answer, sorted and distinct: the tokenizer's EOS, every
// eos_token_id of config.json and generation_config.json in modelDir (and model.eosTokenIds), and
// each chatEndOfTurnTokens() entry and each end-of-turn token of the folder's own chat template
// that is one token of the vocabulary. tokenizer may be null
// (only the config files are read); modelDir may be "" (no files read).
std::vector<int64_t> stopTokenIds(const ModelConfig& model, const Tokenizer* tokenizer,
                                  const std::string& modelDir);

// The rows run.trainableTokens names for this model, sorted and distinct; empty when trainable
// tokens do not apply to the method. "auto" is stopTokenIds with the files of the model's folder
// (model.sourcePath = <folder>/config.json; a bare config file gives its own EOS ids). tokenizer:
// for token texts and "auto" (null: none known). Throws tb::Error naming the key
// 'trainable_tokens' and the entry when an id is outside the vocabulary or a text is not one token
// of it.
std::vector<int64_t> trainableTokenIds(const ModelConfig& model, const MethodOptions& run,
                                       const Tokenizer* tokenizer);
// The same with the tokenizer of the model's folder, read only when the options need it and kept
// for the next call on the same folder (counts are asked for on every edit of the options).
std::vector<int64_t> trainableTokenIds(const ModelConfig& model, const MethodOptions& run);

// The tokenizer of a model folder (null when it has none; throws when it does not load) and the
// end-of-turn tokens of the folder's own chat template (none when it has none or it does not
// parse), each read once per folder and its files' modification times and kept for the next call:
// the method and memory pages ask for counts on every edit, and reading a 128k vocabulary takes
// seconds, so the studio's worker that opens a model reads them first. The tokenizers of the last
// four folders are kept, each loaded once outside the cache's lock. Thread-safe.
std::shared_ptr<const Tokenizer> folderTokenizer(const std::string& dir);
std::vector<std::string> folderEndOfTurnTokens(const std::string& dir);

// Trainable parameters of `tokens` rows: tokens x hidden, twice when the head is untied (its own
// delta).
int64_t trainableTokenParameters(const ModelConfig& model, int64_t tokens);

}  // namespace tb
