// Interop: BLEU, chrF, chrF++ and TER of core/eval against sacrebleu 2.6.0 itself
// (tests/interop/sacrebleu_oracle.py) on a seeded corpus of 600 hypotheses with 1-3 references:
// hand-written hard cases (13a's punctuation rules, entities, Unicode scripts, casing, empty and
// identical strings, TER's beam and shift limits) and generated ones. Corpus scores, BLEU's
// precisions and brevity penalty, every sentence score and every 13a tokenization agree within
// 1e-9; str.lower() and its Final_Sigma classes (TER lowercases) agree on the cased blocks. A
// first section checks hand-computed values without the oracle.
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/ter.h"
#include "eval/unicode_text.h"

#include "interop/oracle_util.h"
#include "interop/sacrebleu_corpus.h"
#include "test_util.h"
#include "util/utf8.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>

using tb::eval::MetricInput;
using tbtest::Example;

namespace {

constexpr double kTolerance = 1e-9;

MetricInput inputOf(const std::string& hyp, const std::vector<std::string>& refs)
{
    MetricInput input;
    input.prediction = hyp;
    input.references = refs;
    return input;
}

// The blocks with case (Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, letterlike and
// enclosed forms, Glagolitic, Coptic, full-width, Deseret, Osage, Old Hungarian, Warang Citi,
// Medefaidrin, Adlam, squared letters) and the case-ignorable punctuation and marks among them.
std::vector<uint32_t> casedBlocks()
{
    const std::pair<uint32_t, uint32_t> ranges[] = {
        {0x0, 0x800},       {0x1000, 0x1100},   {0x13A0, 0x1400},   {0x1C80, 0x1CC0},
        {0x1D00, 0x2200},   {0x2460, 0x2500},   {0x2C00, 0x2E80},   {0x3000, 0x3040},
        {0xA640, 0xA800},   {0xAB30, 0xABC0},   {0xFB00, 0xFB50},   {0xFE10, 0xFE70},
        {0xFF00, 0xFF70},   {0x10400, 0x10600}, {0x10C80, 0x10D00}, {0x118A0, 0x11900},
        {0x16E40, 0x16EA0}, {0x1E900, 0x1E960}, {0x1F130, 0x1F190}};
    std::vector<uint32_t> out;
    for (const auto& [begin, end] : ranges)
        for (uint32_t c = begin; c < end; ++c)
            out.push_back(c);
    return out;
}

std::string shortText(const std::string& s)
{
    return nlohmann::json(s.size() > 80 ? s.substr(0, tb::utf8Floor(s, 80)) + "..." : s).dump();
}

}  // namespace

class TestSacrebleuInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void handValues();
    void metricObjects();
    void initTestCaseOracle();
    void lowercaseMatchesPython();
    void tokenizationMatches();
    void corpusScoresMatch();
    void sentenceScoresMatch();

private:
    bool haveOracle() const { return !m_oracle.is_null(); }
    // Records "metric, example, ours vs sacrebleu" when the two differ by more than kTolerance.
    void compare(const std::string& metric, long index, double ours, double theirs);
    // The first mismatches, one a line.
    std::string mismatchReport() const;

    std::vector<Example> m_corpus;
    std::vector<uint32_t> m_codePoints;  // whose str.lower() the oracle reports
    nlohmann::json m_oracle;
    std::vector<std::string> m_mismatches;
};

void TestSacrebleuInterop::handValues()
{
    using namespace tb::eval;
    const std::vector<std::string> same = {"The cat sat on the mat."};
    QCOMPARE(sentenceBleu(same[0], same), 100.0);
    QCOMPARE(sentenceChrf(same[0], same), 100.0);
    QCOMPARE(sentenceChrf(same[0], same, 2), 100.0);
    QCOMPARE(sentenceTer(same[0], same), 0.0);
    QCOMPARE(sentenceBleu("", same), 0.0);
    QCOMPARE(sentenceChrf("a\xFF", {"a\xEF\xBF\xBD"}), 100.0);  // ill-formed UTF-8 reads as U+FFFD
    QCOMPARE(sentenceChrf("", same), 0.0);
    QCOMPARE(sentenceTer("", {"a b c d"}), 100.0);  // 4 deletions over 4 words
    QCOMPARE(sentenceTer("a b", {""}), 100.0);      // edits against no reference words
    QCOMPARE(sentenceTer("", {""}), 0.0);
    QCOMPARE(sentenceTer("A C B", {"a b c"}), 100.0 / 3);  // one shift, case ignored
    // "the cat" against "the cat sat": p1 = p2 = 100, no 3- or 4-grams, BP = exp(1 - 3/2); the
    // corpus score counts the missing orders as log 0, sentence BLEU drops them (effective order)
    QVERIFY(std::abs(sentenceBleu("the cat", {"the cat sat"}) - 100 * std::exp(-0.5)) < 1e-12);
    QCOMPARE(corpusBleu({"the cat"}, {{"the cat sat"}}), 0.0);
    const BleuScore s = corpusBleuScore({"a b c d e"}, {{"a b c x e f"}});
    QCOMPARE(s.precisions[0], 80.0);             // 4 of 5 unigrams
    QCOMPARE(s.precisions[1], 50.0);             // "a b", "b c" of 4 bigrams
    QCOMPARE(s.precisions[2], 100.0 / 3);        // "a b c" of 3 trigrams
    QCOMPARE(s.precisions[3], 100.0 / (2 * 2));  // no 4-gram matches: 1 / (2 * total)
    QCOMPARE(s.brevityPenalty, std::exp(1 - 6.0 / 5));
    const std::vector<std::string> tokens = {"It", "costs", "$",  "3.50", ",",  "or", "10",
                                             "-",  "20",    "\"", "km",   "\"", "."};
    QCOMPARE(tokenize13a("It costs $3.50, or 10-20 &quot;km&quot;.  \n"), tokens);
    QCOMPARE(tbtest::errorOf([] { sentenceBleu("x", {}); }),
             std::string("BLEU needs at least one reference for the hypothesis \"x\""));
    QVERIFY(tbtest::contains(tbtest::errorOf([] { corpusTer({"a"}, {}); }), "1 hypotheses"));
}

void TestSacrebleuInterop::metricObjects()
{
    using namespace tb::eval;
    const auto bleu = makeBleuMetric();
    const auto chrf = makeChrfMetric(0);
    const auto chrfpp = makeChrfMetric(2);
    const auto ter = makeTerMetric();
    QCOMPARE(bleu->name(), std::string("bleu"));
    QCOMPARE(chrf->name(), std::string("chrf"));
    QCOMPARE(chrfpp->name(), std::string("chrf++"));
    QCOMPARE(ter->name(), std::string("ter"));
    QVERIFY(bleu->higherIsBetter() && chrf->higherIsBetter() && !ter->higherIsBetter());
    QCOMPARE(bleu->stats(inputOf("a b", {"a b c"})).size(), size_t(10));
    QCOMPARE(chrf->stats(inputOf("a b", {"a b c"})).size(), size_t(18));
    QCOMPARE(chrfpp->stats(inputOf("a b", {"a b c"})).size(), size_t(24));
    QCOMPARE(ter->stats(inputOf("a b", {"a b c", "a"})), (std::vector<double>{1, 2}));
    QCOMPARE(bleu->exampleScore(inputOf("the cat", {"the cat sat"})),
             sentenceBleu("the cat", {"the cat sat"}));
}

void TestSacrebleuInterop::initTestCaseOracle()
{
    m_corpus = tbtest::corpus();
    QVERIFY(m_corpus.size() >= 500);
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    nlohmann::json examples = nlohmann::json::array();
    for (const Example& e : m_corpus)
        examples.push_back({{"hyp", e.hyp}, {"refs", e.refs}});
    m_codePoints = casedBlocks();
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string input = tbtest::writeText(
        dir, "corpus.json",
        nlohmann::json{{"examples", examples}, {"codepoints", m_codePoints}}.dump());
    QString error;
    const QByteArray out = tbtest::runOracleScript(QStringLiteral("sacrebleu_oracle.py"),
                                                   {QString::fromStdString(input)}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_oracle = nlohmann::json::parse(out.toStdString());
    QCOMPARE(m_oracle["version"].get<std::string>(), std::string("2.6.0"));
    for (const char* metric : {"bleu", "chrf", "chrf++", "ter"})
        QCOMPARE(m_oracle["sentence"][metric].size(), m_corpus.size());
}

void TestSacrebleuInterop::compare(const std::string& metric, long index, double ours,
                                   double theirs)
{
    if (std::abs(ours - theirs) <= kTolerance)
        return;
    std::string where = index < 0 ? "corpus" : "example " + std::to_string(index);
    if (index >= 0) {
        const Example& e = m_corpus[size_t(index)];
        where += " (hyp " + shortText(e.hyp) + ", ref " + shortText(e.refs[0]) + ", " +
                 std::to_string(e.refs.size()) + " refs)";
    }
    m_mismatches.push_back(tb::cat(metric, ", ", where, ": ours ", std::setprecision(17), ours,
                                   " sacrebleu ", theirs));
}

std::string TestSacrebleuInterop::mismatchReport() const
{
    std::string report = tb::cat(m_mismatches.size(), " scores differ from sacrebleu's:");
    for (size_t k = 0; k < m_mismatches.size() && k < 12; ++k)
        report += "\n  " + m_mismatches[k];
    return report;
}

void TestSacrebleuInterop::lowercaseMatchesPython()
{
    if (!haveOracle())
        QSKIP("no oracle");
    using namespace tb::eval;
    for (size_t i = 0; i < m_codePoints.size(); ++i) {
        const char32_t c = m_codePoints[i];
        const std::string lower = encodeUtf8(pythonLower(std::u32string(1, c)));
        const int sigma = isCaseIgnorable(c) ? 0 : isCased(c) ? 1 : 2;
        QVERIFY2(lower == m_oracle["lower"][i].get<std::string>() &&
                     sigma == m_oracle["sigma"][i].get<int>(),
                 qPrintable(QStringLiteral("U+%1: ours lower %2 class %3, Python lower %4 class %5")
                                .arg(uint(c), 4, 16, QChar('0'))
                                .arg(QString::fromStdString(nlohmann::json(lower).dump()))
                                .arg(sigma)
                                .arg(QString::fromStdString(m_oracle["lower"][i].dump()))
                                .arg(m_oracle["sigma"][i].get<int>())));
    }
}

void TestSacrebleuInterop::tokenizationMatches()
{
    if (!haveOracle())
        QSKIP("no oracle");
    for (size_t i = 0; i < m_corpus.size(); ++i) {
        const Example& e = m_corpus[i];
        for (size_t k = 0; k <= e.refs.size(); ++k) {
            const std::string& text = k == 0 ? e.hyp : e.refs[k - 1];
            const auto expected = m_oracle["tok13a"][i][k].get<std::vector<std::string>>();
            QVERIFY2(tb::eval::tokenize13a(text) == expected,
                     qPrintable(QString::fromStdString(
                         tb::cat("13a tokens of example ", i, " text ", k, " ", shortText(text),
                                 ": sacrebleu ", nlohmann::json(expected).dump(), ", ours ",
                                 nlohmann::json(tb::eval::tokenize13a(text)).dump()))));
        }
    }
}

void TestSacrebleuInterop::corpusScoresMatch()
{
    if (!haveOracle())
        QSKIP("no oracle");
    using namespace tb::eval;
    std::vector<std::string> hyps;
    std::vector<std::vector<std::string>> refs;
    for (const Example& e : m_corpus) {
        hyps.push_back(e.hyp);
        refs.push_back(e.refs);
    }
    m_mismatches.clear();
    const nlohmann::json& b = m_oracle["bleu"];
    const BleuScore bleu = corpusBleuScore(hyps, refs);
    compare("corpus BLEU", -1, bleu.score, b["score"].get<double>());
    compare("corpus BLEU", -1, corpusBleu(hyps, refs), b["score"].get<double>());
    for (size_t n = 0; n < kBleuMaxOrder; ++n)
        compare(tb::cat("BLEU precision ", n + 1), -1, bleu.precisions[n],
                b["precisions"][n].get<double>());
    compare("BLEU brevity penalty", -1, bleu.brevityPenalty, b["bp"].get<double>());
    compare("BLEU hypothesis length", -1, bleu.hypLength, b["sys_len"].get<double>());
    compare("BLEU reference length", -1, bleu.refLength, b["ref_len"].get<double>());
    compare("corpus chrF", -1, corpusChrf(hyps, refs), m_oracle["chrf"].get<double>());
    compare("corpus chrF++", -1, corpusChrf(hyps, refs, 2), m_oracle["chrf++"].get<double>());
    compare("corpus TER", -1, corpusTer(hyps, refs), m_oracle["ter"].get<double>());
    // the Metric interface: the score of the summed per-example statistics
    const std::pair<std::unique_ptr<Metric>, const char*> metrics[] = {
        {makeBleuMetric(), "bleu"},
        {makeChrfMetric(0), "chrf"},
        {makeChrfMetric(2), "chrf++"},
        {makeTerMetric(), "ter"}};
    for (const auto& [metric, key] : metrics) {
        std::vector<double> summed;
        for (const Example& e : m_corpus) {
            const std::vector<double> one = metric->stats(inputOf(e.hyp, e.refs));
            summed.resize(one.size(), 0.0);
            for (size_t k = 0; k < one.size(); ++k)
                summed[k] += one[k];
        }
        const nlohmann::json& theirs = std::string(key) == "bleu" ? b["score"] : m_oracle[key];
        compare(metric->name() + " metric from summed statistics", -1, metric->score(summed),
                theirs.get<double>());
    }
    QVERIFY2(m_mismatches.empty(), qPrintable(QString::fromStdString(mismatchReport())));
    qInfo("corpus BLEU %.4f, chrF %.4f, chrF++ %.4f, TER %.4f over %zu examples", bleu.score,
          m_oracle["chrf"].get<double>(), m_oracle["chrf++"].get<double>(),
          m_oracle["ter"].get<double>(), m_corpus.size());
}

void TestSacrebleuInterop::sentenceScoresMatch()
{
    if (!haveOracle())
        QSKIP("no oracle");
    using namespace tb::eval;
    m_mismatches.clear();
    const nlohmann::json& s = m_oracle["sentence"];
    const auto bleu = makeBleuMetric();
    const auto chrf = makeChrfMetric(0);
    const auto chrfpp = makeChrfMetric(2);
    const auto ter = makeTerMetric();
    for (size_t i = 0; i < m_corpus.size(); ++i) {
        const Example& e = m_corpus[i];
        const MetricInput input = inputOf(e.hyp, e.refs);
        const long at = long(i);
        compare("sentence BLEU", at, sentenceBleu(e.hyp, e.refs), s["bleu"][i].get<double>());
        compare("sentence chrF", at, sentenceChrf(e.hyp, e.refs), s["chrf"][i].get<double>());
        compare("sentence chrF++", at, sentenceChrf(e.hyp, e.refs, 2),
                s["chrf++"][i].get<double>());
        compare("sentence TER", at, sentenceTer(e.hyp, e.refs), s["ter"][i].get<double>());
        compare("bleu exampleScore", at, bleu->exampleScore(input), s["bleu"][i].get<double>());
        compare("chrf exampleScore", at, chrf->exampleScore(input), s["chrf"][i].get<double>());
        compare("chrf++ exampleScore", at, chrfpp->exampleScore(input),
                s["chrf++"][i].get<double>());
        compare("ter exampleScore", at, ter->exampleScore(input), s["ter"][i].get<double>());
    }
    QVERIFY2(m_mismatches.empty(), qPrintable(QString::fromStdString(mismatchReport())));
}

QTEST_GUILESS_MAIN(TestSacrebleuInterop)
#include "test_sacrebleu_interop.moc"
