// The tokenizer a GGUF file carries, read from a model folder: a sentencepiece tokenizer.model
// (tokenizer.ggml.model "llama") or a byte-level BPE tokenizer.json ("gpt2" with merges and the
// llama.cpp name of its pre-tokenizer). Torch-free, internal to core's export.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct ModelConfig;

struct GgufVocab {
    std::string model;  // tokenizer.ggml.model: "llama" | "gpt2"
    std::string pre;    // tokenizer.ggml.pre ("gpt2" only): "llama-bpe", "qwen2", "gpt-2"
    std::vector<std::string> tokens;  // id order, padded with "[PAD<id>]" to the embedding rows
    std::vector<float> scores;        // "llama" only
    std::vector<int32_t> types;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
    std::vector<std::string> merges;                 // "gpt2" only: "left right", rank order
    int64_t bos = -1, eos = -1, unk = -1, pad = -1;  // -1: none
    bool addBos = false, addEos = false;
    bool addSpacePrefix = true;  // "llama" only: sentencepiece's add_dummy_prefix
    std::string chatTemplate;    // "" when the folder has none
};

// The llama.cpp pre-tokenizer name (tokenizer.ggml.pre) of a tokenizer.json, from its
// pre_tokenizer: ByteLevel with GPT-2's regex -> "gpt-2"; Split with Llama-3's regex then ByteLevel
// without one -> "llama-bpe"; the same with Qwen2's regex -> "qwen2". Throws tb::Error naming the
// file for any other pre-tokenizer, a non-BPE model, byte fallback or a normalizer other than NFC
// (Qwen2's).
std::string ggufPreTokenizerName(const std::string& tokenizerJson);

// Throws tb::Error unless modelDir has a tokenizer GGUF export can write (tokenizer.model, or a
// tokenizer.json accepted by ggufPreTokenizerName). Reads the files' headers and options only.
void checkGgufTokenizer(const std::string& modelDir);

// The full vocabulary of modelDir for a model of config c (its vocab_size rows; config.json's
// BOS/EOS ids win over the tokenizer's, as transformers reads them). Throws tb::Error naming the
// file when the tokenizer has more tokens than the model has rows.
GgufVocab readGgufVocab(const std::string& modelDir, const ModelConfig& c);

}  // namespace tb
