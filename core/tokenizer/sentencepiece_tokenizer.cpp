// Tokenizer over a sentencepiece .model file (libsentencepiece), as Hugging Face's slow Llama
// tokenizer uses it.
#include "tokenizer/tokenizer.h"

#include "util/error.h"
#include "util/file_util.h"

#include <sentencepiece_processor.h>

namespace tb {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
public:
    SentencePieceTokenizer(const std::string& path, bool addBos) : m_addBos(addBos)
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
    }

    std::vector<int32_t> encode(const std::string& text, bool addSpecial) const override
    {
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
    bool m_addBos = true;
};

// Piece types as the ModelProto stores them (pieces = field 1, each a SentencePiece with type =
// field 3), read from the serialized proto because libsentencepiece has no IsUserDefined(). Empty
// when the bytes do not parse; the caller then falls back to the processor's Is*() queries.
std::vector<int> pieceTypesFromProto(const std::string& proto)
{
    std::vector<int> types;
    size_t pos = 0;
    auto varint = [](const std::string& b, size_t& p, uint64_t& v) {
        v = 0;
        for (int shift = 0; p < b.size() && shift < 64; shift += 7) {
            const auto byte = static_cast<uint8_t>(b[p++]);
            v |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80))
                return true;
        }
        return false;
    };
    // Skips one field of wire type `wire`; false when it runs past the end.
    auto skip = [&](const std::string& b, size_t& p, uint64_t wire) {
        uint64_t v = 0;
        switch (wire) {
        case 0:
            return varint(b, p, v);
        case 1:
            p += 8;
            return p <= b.size();
        case 2:
            if (!varint(b, p, v) || v > b.size() - p)
                return false;
            p += v;
            return true;
        case 5:
            p += 4;
            return p <= b.size();
        default:
            return false;
        }
    };
    while (pos < proto.size()) {
        uint64_t key = 0;
        if (!varint(proto, pos, key))
            return {};
        if (key >> 3 != 1 || (key & 7) != 2) {
            if (!skip(proto, pos, key & 7))
                return {};
            continue;
        }
        uint64_t len = 0;
        if (!varint(proto, pos, len) || len > proto.size() - pos)
            return {};
        const std::string piece = proto.substr(pos, len);
        pos += len;
        int type = 1;  // proto default: NORMAL
        size_t p = 0;
        while (p < piece.size()) {
            uint64_t k = 0, v = 0;
            if (!varint(piece, p, k))
                return {};
            if (k >> 3 == 3 && (k & 7) == 0) {
                if (!varint(piece, p, v))
                    return {};
                type = static_cast<int>(v);
            } else if (!skip(piece, p, k & 7)) {
                return {};
            }
        }
        types.push_back(type);
    }
    return types;
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
    if (ids) {
        ids->unkId = sp.unk_id();
        ids->bosId = sp.bos_id();
        ids->eosId = sp.eos_id();
        ids->padId = sp.pad_id();
    }
    return pieces;
}

std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const std::string& modelFile, bool addBos)
{
    return std::make_unique<SentencePieceTokenizer>(modelFile, addBos);
}

}  // namespace tb
