// Interop: our token ids and decodes against Hugging Face tokenizers (GPT-2, trained Llama-3-style
// and Qwen2-style byte-level BPE) and Python sentencepiece (Llama 2, stories260k) on one mixed
// corpus.
#include "tokenizer/tokenizer.h"

#include <QtTest>

#include <nlohmann/json.hpp>

class TestTokenizerInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void idsMatchReference_data();
    void idsMatchReference();

private:
    QTemporaryDir m_dir;
    nlohmann::json m_oracle;
};

namespace {

std::string describe(const std::string& text)
{
    return nlohmann::json(text).dump();  // escaped, one line
}

std::string describe(const std::vector<int32_t>& ids)
{
    return nlohmann::json(ids).dump();
}

}  // namespace

void TestTokenizerInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    QVERIFY(m_dir.isValid());
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(QStringLiteral(TB_PYTHON),
            {QStringLiteral(TB_SOURCE_DIR "/tests/interop/tokenizer_oracle.py"),
             QStringLiteral(TB_SOURCE_DIR), m_dir.path()});
    QVERIFY(p.waitForFinished(300000));
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, err.constData());
    m_oracle = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QVERIFY(m_oracle.at("corpus").size() >= 30);
    QCOMPARE(m_oracle.at("tokenizers").size(), size_t(5));
}

void TestTokenizerInterop::idsMatchReference_data()
{
    QTest::addColumn<QString>("name");
    for (const char* name : {"gpt2", "llama2", "stories260k", "llama3", "qwen2"})
        QTest::newRow(name) << QString::fromLatin1(name);
}

void TestTokenizerInterop::idsMatchReference()
{
    QFETCH(QString, name);
    const auto& ref = m_oracle.at("tokenizers").at(name.toStdString());
    const auto& corpus = m_oracle.at("corpus");
    const bool bpe = ref.at("kind") == "bpe";
    const std::string path = ref.at("path").get<std::string>();
    const auto tok = bpe ? tb::loadBpeTokenizer(path) : tb::loadSentencePieceTokenizer(path, true);

    QCOMPARE(tok->kind(), bpe ? std::string("bpe") : std::string("sentencepiece"));
    QCOMPARE(tok->vocabSize(), ref.at("vocabSize").get<int32_t>());
    QCOMPARE(tok->bosId(), ref.at("bos").is_null() ? std::optional<int32_t>()
                                                   : std::optional(ref.at("bos").get<int32_t>()));
    QCOMPARE(tok->eosId(), ref.at("eos").is_null() ? std::optional<int32_t>()
                                                   : std::optional(ref.at("eos").get<int32_t>()));

    // Every line is checked; the first few differences are reported in full.
    std::vector<std::string> failures;
    auto check = [&](bool ok, size_t line, const std::string& what, const std::string& ours,
                     const std::string& theirs) {
        if (!ok)
            failures.push_back("line " + std::to_string(line) + " " +
                               describe(corpus[line].get<std::string>()) + ": " + what +
                               "\n  ours:      " + ours + "\n  reference: " + theirs);
    };
    size_t exactRoundTrips = 0, tokens = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string text = corpus[i].get<std::string>();
        const auto expected = ref.at("ids")[i].get<std::vector<int32_t>>();
        tokens += expected.size();
        if (bpe) {
            // HF encode(text) with add_special_tokens=True; then decode both ways.
            const auto ids = tok->encode(text, true);
            check(ids == expected, i, "ids", describe(ids), describe(expected));
            const std::string decoded = tok->decode(expected, true);
            const std::string reference = ref.at("decoded")[i].get<std::string>();
            check(decoded == reference, i, "decode(skip special)", describe(decoded),
                  describe(reference));
            const std::string kept = tok->decode(expected, false);
            const std::string keptRef = ref.at("decodedKeepSpecial")[i].get<std::string>();
            check(kept == keptRef, i, "decode(keep special)", describe(kept), describe(keptRef));
            // decode(encode(x)) == x (NFC'd where the tokenizer normalizes), except where HF itself
            // does not give the text back; then we must give what HF gives.
            const std::string roundTrip = tok->decode(tok->encode(text, false), false);
            const std::string roundTripRef = ref.at("roundTrip")[i].get<std::string>();
            const std::string normalized = ref.at("text")[i].get<std::string>();
            check(roundTrip == roundTripRef, i, "decode(encode(x))", describe(roundTrip),
                  describe(roundTripRef));
            if (roundTripRef == normalized) {
                ++exactRoundTrips;
                check(roundTrip == normalized, i, "round trip", describe(roundTrip),
                      describe(normalized));
            }
        } else {
            // Python sentencepiece encode() adds no BOS; ours adds it with addSpecial.
            const auto ids = tok->encode(text, false);
            check(ids == expected, i, "ids", describe(ids), describe(expected));
            auto withBos = expected;
            withBos.insert(withBos.begin(), *tok->bosId());
            const auto idsBos = tok->encode(text, true);
            check(idsBos == withBos, i, "ids with BOS", describe(idsBos), describe(withBos));
            const std::string decoded = tok->decode(idsBos, true);
            const std::string reference = ref.at("decoded")[i].get<std::string>();
            check(decoded == reference, i, "decode", describe(decoded), describe(reference));
        }
    }
    std::string report;
    for (size_t i = 0; i < failures.size() && i < 8; ++i)
        report += failures[i] + "\n";
    QVERIFY2(failures.empty(),
             (std::to_string(failures.size()) + " differences:\n" + report).c_str());
    // The comparison is not vacuous: there were tokens, and most lines round-trip exactly.
    QVERIFY(tokens > 500);
    if (bpe)
        QVERIFY2(exactRoundTrips + 5 >= corpus.size(), std::to_string(exactRoundTrips).c_str());
}

QTEST_GUILESS_MAIN(TestTokenizerInterop)
#include "test_tokenizer_interop.moc"
