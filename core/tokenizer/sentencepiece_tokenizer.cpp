// Tokenizer over a sentencepiece .model file (libsentencepiece), as Hugging Face's slow Llama
// tokenizer uses it.
#include "tokenizer/tokenizer.h"

#include "tokenizer/proto_wire.h"
#include "tokenizer/sentencepiece_bpe.h"

#include "util/error.h"
#include "util/file_util.h"

#include <sentencepiece_processor.h>

namespace tb {
namespace {

std::vector<SentencePieceEntry> vocabOf(const sentencepiece::SentencePieceProcessor& sp);

class SentencePieceTokenizer final : public Tokenizer {
public:
    SentencePieceTokenizer(const std::string& path, bool addBos, SentencePieceEncoder encoder)
        : m_addBos(addBos)
    {
        if (!fileExists(path))
            fail(path, ": not found");
        auto status = m_sp.Load(path);
        if (!status.ok())
            fail(path, ": not a valid sentencepiece model (", status.ToString(), ")");
        if (m_sp.bos_id() >= 0)
            m_bosId = m_sp.bos_id();
        if (m_sp.eos_id() >= 0)
            m_eosId = m_sp.eos_id();
        if (encoder == SentencePieceEncoder::Fastest)
            m_fast = SentencePieceBpe::create(vocabOf(m_sp), m_sp.unk_id(),
                                              m_sp.serialized_model_proto());
    }

    std::vector<int32_t> encode(const std::string& text, bool addSpecial) const override
    {
        if (m_fast) {
            std::vector<int32_t> out;
            out.reserve(text.size() / 3 + 2);
            if (addSpecial && m_addBos && m_bosId)
                out.push_back(*m_bosId);
            m_fast->encode(text, out);
            return out;
        }
        std::vector<int> ids;
        auto status = m_sp.Encode(text, &ids);
        if (!status.ok())
            fail("sentencepiece encode failed: ", status.ToString());
        std::vector<int32_t> out;
        out.reserve(ids.size() + 1);
        if (addSpecial && m_addBos && m_bosId)
            out.push_back(*m_bosId);
        out.insert(out.end(), ids.begin(), ids.end());
        return out;
    }

    std::string decode(const std::vector<int32_t>& ids, bool skipSpecial) const override
    {
        std::vector<int> keep;
        keep.reserve(ids.size());
        for (int32_t id : ids) {
            if (id < 0 || id >= m_sp.GetPieceSize())
                fail("token id ", id, " is outside the vocabulary (", m_sp.GetPieceSize(), ")");
            if (skipSpecial && m_sp.IsControl(id))
                continue;
            keep.push_back(id);
        }
        std::string text;
        auto status = m_sp.Decode(keep, &text);
        if (!status.ok())
            fail("sentencepiece decode failed: ", status.ToString());
        return text;
    }

    int32_t vocabSize() const override { return m_sp.GetPieceSize(); }
    std::string idToPiece(int32_t id) const override
    {
        if (id < 0 || id >= m_sp.GetPieceSize())
            fail("token id ", id, " is outside the vocabulary (", m_sp.GetPieceSize(), ")");
        return m_sp.IdToPiece(id);
    }
    std::optional<int32_t> pieceToId(const std::string& piece) const override
    {
        int id = m_sp.PieceToId(piece);
        if (id == m_sp.unk_id() && piece != m_sp.IdToPiece(m_sp.unk_id()))
            return std::nullopt;
        return id;
    }
    bool isSpecial(int32_t id) const override { return m_sp.IsControl(id) || m_sp.IsUnknown(id); }
    std::string kind() const override { return "sentencepiece"; }

private:
    sentencepiece::SentencePieceProcessor m_sp;
    std::unique_ptr<SentencePieceBpe> m_fast;  // null: libsentencepiece encodes
    bool m_addBos = true;
};

// Piece types as the ModelProto stores them (pieces = field 1, each a SentencePiece with type =
// field 3), read from the serialized proto because libsentencepiece has no IsUserDefined(). Empty
// when the bytes do not parse; the caller then falls back to the processor's Is*() queries.
std::vector<int> pieceTypesFromProto(const std::string& proto)
{
    std::vector<int> types;
    bool ok = true;
    const bool parsed = protowire::forEachField(proto, [&](const protowire::Field& f) {
        if (f.number != 1 || f.wire != 2)
            return;
        int type = 1;  // proto default: NORMAL
        ok = ok && protowire::forEachField(f.bytes, [&](const protowire::Field& g) {
                 if (g.number == 3 && g.wire == 0)
                     type = static_cast<int>(g.value);
             });
        types.push_back(type);
    });
    if (!parsed || !ok)
        return {};
    return types;
}

// Every piece in id order with its score and type.
std::vector<SentencePieceEntry> vocabOf(const sentencepiece::SentencePieceProcessor& sp)
{
    const int n = sp.GetPieceSize();
    const std::vector<int> protoTypes = pieceTypesFromProto(sp.serialized_model_proto());
    const bool haveProtoTypes = static_cast<int>(protoTypes.size()) == n;
    std::vector<SentencePieceEntry> pieces(static_cast<size_t>(n));
    for (int id = 0; id < n; ++id) {
        auto& e = pieces[static_cast<size_t>(id)];
        e.piece = sp.IdToPiece(id);
        e.score = sp.GetScore(id);
        using Type = SentencePieceEntry::Type;
        if (haveProtoTypes && protoTypes[static_cast<size_t>(id)] >= 1 &&
            protoTypes[static_cast<size_t>(id)] <= 6)
            e.type = static_cast<Type>(protoTypes[static_cast<size_t>(id)]);
        else if (sp.IsUnknown(id))
            e.type = Type::Unknown;
        else if (sp.IsControl(id))
            e.type = Type::Control;
        else if (sp.IsUnused(id))
            e.type = Type::Unused;
        else if (sp.IsByte(id))
            e.type = Type::Byte;
        else
            e.type = Type::Normal;
    }
    return pieces;
}

}  // namespace

std::vector<SentencePieceEntry> readSentencePieceVocab(const std::string& modelFile,
                                                       SentencePieceSpec* ids)
{
    if (!fileExists(modelFile))
        fail(modelFile, ": not found");
    sentencepiece::SentencePieceProcessor sp;
    auto status = sp.Load(modelFile);
    if (!status.ok())
        fail(modelFile, ": not a valid sentencepiece model (", status.ToString(), ")");
    std::vector<SentencePieceEntry> pieces = vocabOf(sp);
    if (ids) {
        ids->unkId = sp.unk_id();
        ids->bosId = sp.bos_id();
        ids->eosId = sp.eos_id();
        ids->padId = sp.pad_id();
        // And whether text gets a leading "▁" (normalizer_spec.add_dummy_prefix, field 3 of field
        // 3; true unless set): Gemma's models, for one, set it false.
        ids->addDummyPrefix = true;
        const std::string proto = sp.serialized_model_proto();
        protowire::forEachField(proto, [&](const protowire::Field& f) {
            if (f.number == 3 && f.wire == 2)
                protowire::forEachField(f.bytes, [&](const protowire::Field& g) {
                    if (g.number == 3 && g.wire == 0)
                        ids->addDummyPrefix = g.value != 0;
                });
        });
    }
    return pieces;
}

std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const std::string& modelFile, bool addBos,
                                                      SentencePieceEncoder encoder)
{
    return std::make_unique<SentencePieceTokenizer>(modelFile, addBos, encoder);
}

}  // namespace tb
