// Tunebench's own sentencepiece BPE encoder against libsentencepiece, the reference: the same ids,
// exactly, on the real models (Llama 2's 32,000 pieces and stories260k's 512, both with byte
// fallback), on one written without byte fallback (runs of unknown characters become one <unk>),
// on edge cases (empty text, spaces only, malformed UTF-8, a literal U+2581, long runs without
// spaces) and on random texts; and the models it must leave to libsentencepiece.
#include "tokenizer/sentencepiece_bpe.h"
#include "tokenizer/tokenizer.h"

#include <QtTest>

#include <fstream>
#include <random>
#include <sstream>

namespace {

const std::string kLlama2 = TB_SOURCE_DIR "/tests/data/tokenizers/llama2/tokenizer.model";
const std::string kStories = TB_SOURCE_DIR "/datasets/models/stories260k/tokenizer.model";

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string show(const std::string& text)
{
    std::string s;
    for (const unsigned char c : text.substr(0, 80))
        s += c >= 0x20 && c < 0x7f
                 ? std::string(1, static_cast<char>(c))
                 : "\\x" + QByteArray(1, static_cast<char>(c)).toHex().toStdString();
    return s;
}

std::vector<std::string> corpus()
{
    std::vector<std::string> texts = {
        "",
        " ",
        "   ",
        "Hello world",
        " Hello world",
        "  leading spaces and trailing   ",
        "The quick brown fox jumps over the lazy dog. The quick brown fox again.",
        "I'm sure you'll see they've done it; DON'T SHOUT, I'LL, WE'VE",
        "def main():\n    return [x**2 for x in range(10)]  # squares\n",
        "\tTabbed\tline\twith\t\ttabs",
        "multiple\n\nnewlines\r\nand CRLF\r\n",
        "   \n\t  \n",
        "emoji: \xF0\x9F\x98\x80\xF0\x9F\x8E\x89\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD family",
        "\xE4\xB8\xAD\xE6\x96\x87\xE5\x88\x86\xE8\xAF\x8D\xE6\xB5\x8B\xE8\xAF\x95",
        "Accents: caf\xC3\xA9, na\xC3\xAFve, \xC3\x85ngstr\xC3\xB6m, Stra\xC3\x9F"
        "e, "
        "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA\xCE\xAC",
        "Decomposed: cafe\xCC\x81 nai\xCC\x88ve",
        "Numbers 1234567 and 3.14159 and 1,000,000",
        "<s> </s> <unk> <0x41> text that looks like special pieces",
        "literal \xE2\x96\x81 space symbol \xE2\x96\x81\xE2\x96\x81x",
        "malformed \xFF bytes \xC3 and \xE2\x96 cut, overlong \xC0\xAF, surrogate \xED\xA0\x80",
        "replacement \xEF\xBF\xBD character",
        std::string("nul\0inside", 10),
        "nbsp\xC2\xA0here and\xE2\x80\x83"
        "em space",
        std::string(300, 'a'),
        std::string(200, ' ') + "x",
        "averyveryverylongwordwithoutanyspacesthatgoesonandonandonforwellovertheword"
        "memorylimitofsixtyfourbytes and then short ones",
    };
    std::string cjk;
    for (int i = 0; i < 400; ++i)
        cjk += "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E";
    texts.push_back(cjk);
    // Random texts over words, spaces, newlines, non-ASCII and stray bytes (fixed seed).
    std::mt19937 rng(20);
    const std::vector<std::string> parts = {"the",
                                            "a",
                                            "and",
                                            "Stra\xC3\x9F"
                                            "e",
                                            "\xC3\x85ngstr\xC3\xB6m",
                                            " ",
                                            "  ",
                                            "\n",
                                            "\t",
                                            ".",
                                            ",",
                                            "1",
                                            "42",
                                            "\xE2\x80\x94",
                                            "\xF0\x9F\x98\x80",
                                            "\xC2\xA0",
                                            "tion",
                                            "ing",
                                            "un",
                                            "Q",
                                            "zz",
                                            "\xFF",
                                            "\xE6\x97\xA5",
                                            "\xE2\x96\x81"};
    for (int t = 0; t < 3000; ++t) {
        std::string text;
        const int n = static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i)
            text += parts[rng() % parts.size()];
        texts.push_back(text);
    }
    return texts;
}

// Fails the test at the first text whose ids differ, naming it.
void compareOn(const tb::Tokenizer& fast, const tb::Tokenizer& reference,
               const std::vector<std::string>& texts, const std::string& name)
{
    for (const std::string& text : texts)
        for (const bool special : {false, true}) {
            const auto want = reference.encode(text, special);
            const auto got = fast.encode(text, special);
            QVERIFY2(got == want,
                     (name + ": \"" + show(text) + "\": " + std::to_string(got.size()) +
                      " ids, libsentencepiece " + std::to_string(want.size()))
                         .c_str());
        }
}

std::unique_ptr<tb::SentencePieceBpe> encoderFor(const std::string& model, std::string* why)
{
    tb::SentencePieceSpec ids;
    const auto pieces = tb::readSentencePieceVocab(model, &ids);
    return tb::SentencePieceBpe::create(pieces, ids.unkId, readAll(model), why);
}

}  // namespace

class TestSentencePieceBpe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void realModelsEncodeAsLibsentencepiece();
    void withoutByteFallback();
    void pieceAcrossWords();
    void leavesOtherModelsToLibsentencepiece();
};

void TestSentencePieceBpe::realModelsEncodeAsLibsentencepiece()
{
    const auto texts = corpus();
    for (const std::string& model : {kLlama2, kStories}) {
        std::string why;
        const auto bpe = encoderFor(model, &why);
        QVERIFY2(bpe, (model + ": " + why).c_str());
        QVERIFY(bpe->splitsWords());
        const auto fast = tb::loadSentencePieceTokenizer(model, true);
        const auto reference =
            tb::loadSentencePieceTokenizer(model, true, tb::SentencePieceEncoder::Library);
        compareOn(*fast, *reference, texts, model);
        // Twice: the second pass reads the words the first one remembered.
        compareOn(*fast, *reference, texts, model);
    }
}

void TestSentencePieceBpe::withoutByteFallback()
{
    // Llama 2's pieces without the byte pieces and without byte fallback: characters outside the
    // vocabulary are <unk>, a run of them one <unk>, also across words.
    tb::SentencePieceSpec spec;
    auto pieces = tb::readSentencePieceVocab(kLlama2, &spec);
    std::erase_if(pieces,
                  [](const auto& e) { return e.type == tb::SentencePieceEntry::Type::Byte; });
    spec.byteFallback = false;
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("tokenizer.model")).toStdString();
    {
        std::ofstream out(path, std::ios::binary);
        out << tb::serializeSentencePieceModel(pieces, spec);
    }
    const auto fast = tb::loadSentencePieceTokenizer(path, true);
    const auto reference =
        tb::loadSentencePieceTokenizer(path, true, tb::SentencePieceEncoder::Library);
    std::string why;
    QVERIFY2(encoderFor(path, &why), why.c_str());
    auto texts = corpus();
    texts.push_back("\xF0\x9F\x98\x80 \xF0\x9F\x98\x80\xF0\x9F\x98\x80 x\xF0\x9F\x98\x80");
    compareOn(*fast, *reference, texts, "llama2 without byte fallback");
}

void TestSentencePieceBpe::pieceAcrossWords()
{
    // A piece with "▁" after a letter ("e▁", the best-scoring merge): words are no longer
    // encoded apart, and the ids still match.
    tb::SentencePieceSpec spec;
    auto pieces = tb::readSentencePieceVocab(kStories, &spec);
    pieces.push_back({"e\xE2\x96\x81", 0.0f, tb::SentencePieceEntry::Type::Normal});
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("tokenizer.model")).toStdString();
    {
        std::ofstream out(path, std::ios::binary);
        out << tb::serializeSentencePieceModel(pieces, spec);
    }
    std::string why;
    const auto bpe = encoderFor(path, &why);
    QVERIFY2(bpe, why.c_str());
    QVERIFY(!bpe->splitsWords());
    const auto fast = tb::loadSentencePieceTokenizer(path, true);
    const auto reference =
        tb::loadSentencePieceTokenizer(path, true, tb::SentencePieceEncoder::Library);
    compareOn(*fast, *reference, corpus(), "stories260k with a piece across words");
}

void TestSentencePieceBpe::leavesOtherModelsToLibsentencepiece()
{
    auto pieces = tb::readSentencePieceVocab(kStories);
    tb::SentencePieceSpec spec;
    spec.removeExtraWhitespaces = true;
    std::string why;
    QVERIFY(!tb::SentencePieceBpe::create(pieces, 0, tb::serializeSentencePieceModel(pieces, spec),
                                          &why));
    QCOMPARE(why, std::string("remove_extra_whitespaces"));
    spec = {};
    spec.bpe = false;
    QVERIFY(!tb::SentencePieceBpe::create(pieces, 0, tb::serializeSentencePieceModel(pieces, spec),
                                          &why));
    QCOMPARE(why, std::string("not a BPE model"));
    spec = {};
    pieces[10].type = tb::SentencePieceEntry::Type::UserDefined;
    QVERIFY(!tb::SentencePieceBpe::create(pieces, 0, tb::serializeSentencePieceModel(pieces, spec),
                                          &why));
    QCOMPARE(why, std::string("user-defined or unused pieces"));
}

QTEST_GUILESS_MAIN(TestSentencePieceBpe)
#include "test_sentencepiece_bpe.moc"
