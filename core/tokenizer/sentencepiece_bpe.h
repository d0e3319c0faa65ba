// A sentencepiece BPE encoder of our own, giving libsentencepiece's ids (0.1.97, the version
// Tunebench links) for the models it takes: identity normalization and byte fallback or <unk>, as
// Llama's tokenizer.model and the ones Tunebench writes. It encodes words (a run of "▁"s and what
// follows up to the next "▁") separately when no piece spans such a boundary, and remembers the ids
// of the words each thread has seen, so repeated words cost one lookup.
#pragma once

#include "tokenizer/sentencepiece_writer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tb {

class SentencePieceBpe {
public:
    // The encoder for a model, or nullptr with the reason in *why when the model uses something
    // this encoder does not reproduce exactly (not BPE, a normalization rule or charsmap,
    // extra-whitespace removal, whitespace as a suffix, unescaped spaces, user-defined or unused
    // pieces): the caller then keeps libsentencepiece. `pieces` in id order as
    // readSentencePieceVocab gives them; `serializedProto` the .model file's bytes.
    static std::unique_ptr<SentencePieceBpe> create(const std::vector<SentencePieceEntry>& pieces,
                                                    int32_t unkId, std::string_view serializedProto,
                                                    std::string* why = nullptr);

    // Appends the ids of `text` (no BOS or EOS) to `out`, as SentencePieceProcessor::Encode.
    // Thread-safe: each thread has its own memory of words.
    void encode(std::string_view text, std::vector<int32_t>& out) const;

    // Whether words are encoded one at a time (no piece spans a word boundary).
    bool splitsWords() const { return m_splitWords; }

    struct Scratch;

private:
    SentencePieceBpe() = default;
    // Ids of one segment of normalized text, by sentencepiece's merge order: the highest-scoring
    // adjacent pair that is a piece first, the leftmost among equal scores.
    void encodeSegment(std::string_view segment, std::vector<int32_t>& out, Scratch& s) const;
    int32_t find(std::string_view piece) const;
    // Byte pieces for an unknown symbol, or one <unk> for a run of them after out[start].
    void appendUnknown(std::string_view symbol, std::vector<int32_t>& out, size_t start) const;

    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const noexcept;
    };
    std::string m_arena;  // every normal piece's bytes; m_pieces views into it
    std::unordered_map<std::string_view, int32_t, Hash> m_pieces;
    std::vector<float> m_scores;  // by id
    int32_t m_unkId = 0;
    bool m_byteFallback = false;
    int32_t m_byteIds[256] = {};
    bool m_addDummyPrefix = true;
    bool m_splitWords = false;
    uint64_t m_serial = 0;  // tells apart the encoders a thread's word memory belongs to
};

}  // namespace tb
