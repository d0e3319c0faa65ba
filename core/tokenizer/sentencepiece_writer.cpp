// Protobuf wire-format encoding of sentencepiece's ModelProto (field numbers from
// sentencepiece_model.proto).
#include "tokenizer/sentencepiece_writer.h"

#include <cstdint>
#include <cstring>

namespace tb {
namespace {

enum Wire : uint32_t { kVarint = 0, kLengthDelimited = 2, kFixed32 = 5 };

void putVarint(std::string& out, uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

void putKey(std::string& out, uint32_t field, Wire wire)
{
    putVarint(out, (static_cast<uint64_t>(field) << 3) | wire);
}

void putInt(std::string& out, uint32_t field, int64_t v)
{
    putKey(out, field, kVarint);
    putVarint(out,
              static_cast<uint64_t>(v));  // negative int32 values are sign-extended to 10 bytes
}

void putBytes(std::string& out, uint32_t field, const std::string& bytes)
{
    putKey(out, field, kLengthDelimited);
    putVarint(out, bytes.size());
    out += bytes;
}

void putFloat(std::string& out, uint32_t field, float v)
{
    putKey(out, field, kFixed32);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

}  // namespace

std::string serializeSentencePieceModel(const std::vector<SentencePieceEntry>& pieces,
                                        const SentencePieceSpec& spec)
{
    std::string model;
    for (const auto& p : pieces) {
        std::string msg;
        putBytes(msg, 1, p.piece);
        putFloat(msg, 2, p.score);
        putInt(msg, 3, static_cast<int>(p.type));
        putBytes(model, 1, msg);  // ModelProto.pieces
    }

    std::string trainer;
    putInt(trainer, 3, spec.bpe ? 2 : 1);                     // model_type: UNIGRAM = 1, BPE = 2
    putInt(trainer, 4, static_cast<int64_t>(pieces.size()));  // vocab_size
    putInt(trainer, 25, spec.splitDigits ? 1 : 0);
    putInt(trainer, 26, spec.allowWhitespaceOnlyPieces ? 1 : 0);
    putInt(trainer, 35, spec.byteFallback ? 1 : 0);
    putInt(trainer, 40, spec.unkId);
    putInt(trainer, 41, spec.bosId);
    putInt(trainer, 42, spec.eosId);
    putInt(trainer, 43, spec.padId);
    putBytes(model, 2, trainer);  // ModelProto.trainer_spec

    std::string normalizer;
    putBytes(normalizer, 1, "identity");  // name; no precompiled_charsmap: text passes unchanged
    putInt(normalizer, 3, spec.addDummyPrefix ? 1 : 0);
    putInt(normalizer, 4, spec.removeExtraWhitespaces ? 1 : 0);
    putInt(normalizer, 5, 1);        // escape_whitespaces: spaces become U+2581
    putBytes(model, 3, normalizer);  // ModelProto.normalizer_spec
    return model;
}

}  // namespace tb
