// Tokenizer over a sentencepiece .model file (libsentencepiece), as Hugging Face's slow Llama tokenizer uses it.
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

} // namespace

std::unique_ptr<Tokenizer> loadSentencePieceTokenizer(const std::string& modelFile, bool addBos)
{
    return std::make_unique<SentencePieceTokenizer>(modelFile, addBos);
}

} // namespace tb
