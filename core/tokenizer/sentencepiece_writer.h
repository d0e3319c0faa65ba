// Writes a sentencepiece ModelProto (.model) from pieces and scores, without depending on protobuf.
#pragma once

#include <string>
#include <vector>

namespace tb {

struct SentencePieceEntry {
    enum class Type { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
    std::string piece;  // with U+2581 for spaces
    float score = 0;
    Type type = Type::Normal;
};

struct SentencePieceSpec {
    bool bpe = true;  // BPE (else unigram)
    bool byteFallback = true;
    bool addDummyPrefix = true;
    bool removeExtraWhitespaces = false;
    bool splitDigits = true;
    bool allowWhitespaceOnlyPieces = true;
    int unkId = 0, bosId = 1, eosId = 2, padId = -1;
};

// Serialises the ModelProto (pieces = 1, trainer_spec = 2, normalizer_spec = 3 with the identity
// rule).
std::string serializeSentencePieceModel(const std::vector<SentencePieceEntry>& pieces,
                                        const SentencePieceSpec& spec);

}  // namespace tb
