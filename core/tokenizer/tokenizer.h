// The tokenizer interface every model uses, and the loader that picks the implementation for a
// model folder.
#pragma once

#include "tokenizer/sentencepiece_writer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Text -> ids. addSpecial: prepend BOS (and whatever the tokenizer's post-processor adds) when
    // the tokenizer is configured to, as Hugging Face's encode(add_special_tokens=True) does.
    virtual std::vector<int32_t> encode(const std::string& text, bool addSpecial = true) const = 0;
    // ids -> text; skipSpecial drops control tokens such as <s> and <|endoftext|>.
    virtual std::string decode(const std::vector<int32_t>& ids, bool skipSpecial = true) const = 0;

    virtual int32_t vocabSize() const = 0;
    virtual std::string idToPiece(int32_t id) const = 0;
    // Id of a piece or special token, if it exists.
    virtual std::optional<int32_t> pieceToId(const std::string& piece) const = 0;
    virtual bool isSpecial(int32_t id) const = 0;

    std::optional<int32_t> bosId() const { return m_bosId; }
    std::optional<int32_t> eosId() const { return m_eosId; }
    // "sentencepiece" or "bpe"
    virtual std::string kind() const = 0;

protected:
    std::optional<int32_t> m_bosId;
    std::optional<int32_t> m_eosId;
};

// Loads the tokenizer of a model folder: tokenizer.model (sentencepiece) or tokenizer.json
// (byte-level BPE). tokenizer_config.json, when present, decides add_bos_token and the BOS/EOS
// tokens. Throws tb::Error naming the file when neither exists or the format is not supported.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& modelDir);

// Individual loaders (for tests and tools).
// Fastest: Tunebench's own BPE encoder (tokenizer/sentencepiece_bpe.h) where it reproduces
// libsentencepiece's ids for the model, libsentencepiece otherwise; Library: always
// libsentencepiece (the reference the tests compare against).
enum class SentencePieceEncoder { Fastest, Library };
std::unique_ptr<Tokenizer>
loadSentencePieceTokenizer(const std::string& modelFile, bool addBos = true,
                           SentencePieceEncoder encoder = SentencePieceEncoder::Fastest);
std::unique_ptr<Tokenizer> loadBpeTokenizer(const std::string& tokenizerJson);

// Every piece of a sentencepiece .model file in id order, with its score and type (normal, unknown,
// control, user-defined, unused, byte), read through libsentencepiece; the special ids go to *ids
// when given (-1 where the model has none). Throws tb::Error naming the file when it is not a valid
// model.
std::vector<SentencePieceEntry> readSentencePieceVocab(const std::string& modelFile,
                                                       SentencePieceSpec* ids = nullptr);

}  // namespace tb
