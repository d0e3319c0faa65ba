// The evaluation metrics without Python: label normalisation, the classification report (hand-
// checked, and against per-class counts derived here from the definitions), accuracy, match_f1,
// glossary files and terminology adherence, stop rate and length, SQuAD/ROUGE/Porter spot checks,
// and the bootstrap (determinism, coverage, width against the normal approximation, pairing).
#include "eval/answer_stats.h"
#include "eval/bootstrap.h"
#include "eval/classification.h"
#include "eval/porter_stemmer.h"
#include "eval/rouge.h"
#include "eval/squad.h"
#include "eval/terminology.h"

#include "test_util.h"

#include <QtTest>

#include <cmath>
#include <map>
#include <random>

using namespace tb::eval;

namespace {

MetricInput answer(std::string prediction, std::vector<std::string> references = {},
                   std::string source = {})
{
    MetricInput input;
    input.prediction = std::move(prediction);
    input.references = std::move(references);
    input.source = std::move(source);
    return input;
}

// The corpus score of `inputs`: metric.score of the summed statistics.
double corpusScore(const Metric& metric, const std::vector<MetricInput>& inputs)
{
    std::vector<double> sum;
    for (const auto& input : inputs) {
        const auto stats = metric.stats(input);
        sum.resize(stats.size(), 0.0);
        for (size_t k = 0; k < stats.size(); ++k)
            sum[k] += stats[k];
    }
    return metric.score(sum);
}

std::vector<std::vector<double>> statsOf(const Metric& metric, const std::vector<MetricInput>& in)
{
    std::vector<std::vector<double>> out;
    for (const auto& input : in)
        out.push_back(metric.stats(input));
    return out;
}

}  // namespace

class TestEvalMetrics : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void labelNormalisation();
    void classificationReportByHand();
    void classificationReportMatchesDefinitions();
    void classificationReportSizeMismatchThrows();
    void accuracyTakesAnyReference();
    void matchF1();
    void glossaryFiles();
    void glossaryErrorsNameFileAndLine();
    void terminologyAdherence();
    void stopRateAndLength();
    void squadAndRougeSpotChecks();
    void quantilesInterpolateLinearly();
    void bootstrapIsDeterministicAndCovers();
    void bootstrapWidthMatchesNormalApproximation();
    void pairedBootstrapOfTwoSystems();
    void bootstrapRejectsBadInput();
};

void TestEvalMetrics::labelNormalisation()
{
    QCOMPARE(normalizeLabel("  'Positive'. "), std::string("positive"));
    QCOMPARE(normalizeLabel("POSITIVE"), std::string("positive"));
    QCOMPARE(normalizeLabel("\"Not   a\tmatch!\""), std::string("not a match"));
    QCOMPARE(normalizeLabel("\xE2\x80\x9C"
                            "Yes\xE2\x80\x9D."),
             std::string("yes"));
    QCOMPARE(normalizeLabel("e.g. this"), std::string("e.g. this"));
    QCOMPARE(normalizeLabel("... ?"), std::string(""));
    QCOMPARE(normalizeLabel("\xC3\x89t\xC3\xA9"), std::string("\xC3\xA9t\xC3\xA9"));  // Été
}

// 8 examples worked on paper: labels mixed < negative < neutral < positive.
void TestEvalMetrics::classificationReportByHand()
{
    const std::vector<std::string> predictions = {"Positive", "negative", "neutral.", "'positive'",
                                                  "NEGATIVE", "positive", "mixed",    "negative"};
    const std::vector<std::string> references = {"positive", "negative", "negative", "positive",
                                                 "neutral",  "negative", "positive", "negative"};
    const ClassificationReport r = classificationReport(predictions, references);
    QCOMPARE(r.labels, (std::vector<std::string>{"mixed", "negative", "neutral", "positive"}));
    QCOMPARE(r.examples, int64_t(8));
    const std::vector<std::vector<int64_t>> confusion = {
        {0, 0, 0, 0}, {0, 2, 1, 1}, {0, 1, 0, 0}, {1, 0, 0, 2}};
    QCOMPARE(r.confusion, confusion);
    const double eps = 1e-12;
    // mixed: tp 0 fp 1 fn 0; negative: tp 2 fp 1 fn 2; neutral: tp 0 fp 1 fn 1;
    // positive: tp 2 fp 1 fn 1
    const double precision[] = {0.0, 2.0 / 3, 0.0, 2.0 / 3};
    const double recall[] = {0.0, 0.5, 0.0, 2.0 / 3};
    const double f1[] = {0.0, 4.0 / 7, 0.0, 2.0 / 3};
    const int64_t support[] = {0, 4, 1, 3};
    QCOMPARE(r.classes.size(), size_t(4));
    for (size_t k = 0; k < 4; ++k) {
        QCOMPARE(r.classes[k].label, r.labels[k]);
        QVERIFY(std::abs(r.classes[k].precision - precision[k]) < eps);
        QVERIFY(std::abs(r.classes[k].recall - recall[k]) < eps);
        QVERIFY(std::abs(r.classes[k].f1 - f1[k]) < eps);
        QCOMPARE(r.classes[k].support, support[k]);
    }
    QVERIFY(std::abs(r.accuracy - 0.5) < eps);
    QVERIFY(std::abs(r.microF1 - 0.5) < eps);
    QVERIFY(std::abs(r.macroF1 - (4.0 / 7 + 2.0 / 3) / 4) < eps);
    QVERIFY(std::abs(r.macroPrecision - (4.0 / 3) / 4) < eps);
    QVERIFY(std::abs(r.macroRecall - (0.5 + 2.0 / 3) / 4) < eps);

    const ClassificationReport empty = classificationReport({}, {});
    QVERIFY(empty.labels.empty());
    QCOMPARE(empty.accuracy, 0.0);
}

// Random labels in decorated spellings whose normal form is known by construction; per-class
// precision and recall counted pair by pair, F1 as 2PR/(P+R) (the report uses 2tp/(2tp+fp+fn)).
void TestEvalMetrics::classificationReportMatchesDefinitions()
{
    const std::vector<std::string> base = {"alpha", "beta", "gamma", "delta", "omega"};
    const auto decorate = [](const std::string& label, unsigned how) {
        switch (how % 5) {
        case 0:
            return label;
        case 1:
            return "  " + label + ". ";
        case 2:
            return "'" + label + "'";
        case 3: {
            std::string upper = label;
            for (char& c : upper)
                c = static_cast<char>(c - 'a' + 'A');
            return upper + "!";
        }
        default:
            return "\"" + label + "\"?";
        }
    };
    std::mt19937_64 rng(11);
    std::vector<std::string> predictions, references, truePred, trueRef;
    for (int i = 0; i < 400; ++i) {
        const std::string ref = base[rng() % 4];  // omega is only ever predicted
        const std::string pred = rng() % 3 == 0 ? base[rng() % 5] : ref;
        trueRef.push_back(ref);
        truePred.push_back(pred);
        references.push_back(decorate(ref, unsigned(rng())));
        predictions.push_back(decorate(pred, unsigned(rng())));
    }
    const ClassificationReport r = classificationReport(predictions, references);
    QCOMPARE(r.labels, (std::vector<std::string>{"alpha", "beta", "delta", "gamma", "omega"}));
    double macro = 0;
    int correct = 0;
    for (size_t k = 0; k < r.labels.size(); ++k) {
        const std::string& label = r.labels[k];
        int predicted = 0, actual = 0, both = 0;
        for (size_t i = 0; i < trueRef.size(); ++i) {
            predicted += truePred[i] == label;
            actual += trueRef[i] == label;
            both += truePred[i] == label && trueRef[i] == label;
        }
        correct += both;
        const double p = predicted ? double(both) / predicted : 0.0;
        const double rc = actual ? double(both) / actual : 0.0;
        const double f = p + rc > 0 ? 2 * p * rc / (p + rc) : 0.0;
        macro += f;
        QVERIFY(std::abs(r.classes[k].precision - p) < 1e-12);
        QVERIFY(std::abs(r.classes[k].recall - rc) < 1e-12);
        QVERIFY(std::abs(r.classes[k].f1 - f) < 1e-12);
        QCOMPARE(r.classes[k].support, int64_t(actual));
        for (size_t j = 0; j < r.labels.size(); ++j) {
            int64_t cell = 0;
            for (size_t i = 0; i < trueRef.size(); ++i)
                cell += trueRef[i] == label && truePred[i] == r.labels[j];
            QCOMPARE(r.confusion[k][j], cell);
        }
    }
    QCOMPARE(r.classes[4].support, int64_t(0));
    QVERIFY(r.classes[4].precision == 0.0 && r.classes[4].f1 == 0.0);
    QVERIFY(std::abs(r.macroF1 - macro / 5) < 1e-12);
    QVERIFY(std::abs(r.accuracy - correct / 400.0) < 1e-12);
    QVERIFY(std::abs(r.microF1 - r.accuracy) < 1e-12);
    QVERIFY(r.accuracy > 0.6 && r.accuracy < 0.9);
}

void TestEvalMetrics::classificationReportSizeMismatchThrows()
{
    const std::string error = tbtest::errorOf([] { classificationReport({"a", "b"}, {"a"}); });
    QVERIFY2(tbtest::contains(error, "2 predictions but 1 references"), error.c_str());
}

void TestEvalMetrics::accuracyTakesAnyReference()
{
    const auto metric = makeAccuracyMetric();
    QCOMPARE(metric->name(), std::string("accuracy"));
    const std::vector<MetricInput> inputs = {answer("Paris.", {"London", "paris"}),
                                             answer("'B'", {"b"}), answer("C", {"d", "e"}),
                                             answer("", {"x"})};
    QCOMPARE(metric->exampleScore(inputs[0]), 1.0);
    QCOMPARE(metric->exampleScore(inputs[2]), 0.0);
    QCOMPARE(corpusScore(*metric, inputs), 0.5);
    QVERIFY(tbtest::contains(tbtest::errorOf([&] { metric->stats(answer("a")); }), "no reference"));
}

void TestEvalMetrics::matchF1()
{
    QCOMPARE(matchLabelClass("Yes."), 1);
    QCOMPARE(matchLabelClass(" match"), 1);
    QCOMPARE(matchLabelClass("NO!"), 0);
    QCOMPARE(matchLabelClass("non-match"), 0);
    QCOMPARE(matchLabelClass("No match"), 0);
    QCOMPARE(matchLabelClass("Yes, they are"), -1);
    const auto metric = makeMatchF1Metric();
    QCOMPARE(metric->name(), std::string("match_f1"));
    // tp: 1, 2; fn: 3 (said no), 4 (unparseable); fp: 5 (said yes), 6 (unparseable); tn: 7, 8
    const std::vector<MetricInput> inputs = {answer("Yes", {"Yes"}), answer("yes.", {"match"}),
                                             answer("No", {"Yes"}),  answer("maybe", {"Yes"}),
                                             answer("YES", {"No"}),  answer("", {"No"}),
                                             answer("no", {"No"}),   answer("No.", {"non-match"})};
    QCOMPARE(metric->stats(inputs[3]), (std::vector<double>{0, 0, 1}));
    QCOMPARE(metric->stats(inputs[5]), (std::vector<double>{0, 1, 0}));
    QCOMPARE(metric->stats(inputs[7]), (std::vector<double>{0, 0, 0}));
    // precision 2/4, recall 2/4: F1 1/2; without the two unparseable answers (inputs 4 and 6)
    // precision 2/3, recall 2/3
    QVERIFY(std::abs(corpusScore(*metric, inputs) - 0.5) < 1e-12);
    QVERIFY(std::abs(corpusScore(*metric, {inputs[0], inputs[1], inputs[2], inputs[4], inputs[6],
                                           inputs[7]}) -
                     2.0 / 3) < 1e-12);
    // no match anywhere and none predicted: 0/0 is 0
    QCOMPARE(corpusScore(*metric, {answer("No", {"No"})}), 0.0);
    const std::string error = tbtest::errorOf([&] { metric->stats(answer("Yes", {"perhaps"})); });
    QVERIFY2(tbtest::contains(error, "\"perhaps\""), error.c_str());
}

void TestEvalMetrics::glossaryFiles()
{
    QTemporaryDir dir;
    const std::string tsv = tbtest::writeText(dir, "terms.tsv",
                                              "\xEF\xBB\xBFsource\ttarget\r\n# a comment\r\n\r\n"
                                              "neural network\tneuronales Netz\r\n"
                                              "  GPU \t GPU\n");
    QCOMPARE(loadGlossary(tsv), (Glossary{{"neural network", "neuronales Netz"}, {"GPU", "GPU"}}));
    const std::string csv = tbtest::writeText(
        dir, "terms.csv", "\"Smith, John\",\"J. \"\"the\"\" Smith\"\nbank , Ufer\n");
    QCOMPARE(loadGlossary(csv), (Glossary{{"Smith, John", "J. \"the\" Smith"}, {"bank", "Ufer"}}));
    const std::string object =
        tbtest::writeText(dir, "terms.json", R"({"zebra": "Zebra", "apple": "Apfel"})");
    QCOMPARE(loadGlossary(object), (Glossary{{"zebra", "Zebra"}, {"apple", "Apfel"}}));  // order
    const std::string list =
        tbtest::writeText(dir, "list.txt", R"( [["cat", "Katze"], ["dog", "Hund"]])");
    QCOMPARE(loadGlossary(list), (Glossary{{"cat", "Katze"}, {"dog", "Hund"}}));
}

void TestEvalMetrics::glossaryErrorsNameFileAndLine()
{
    QTemporaryDir dir;
    const auto errorFor = [&](const std::string& name, const std::string& text) {
        const std::string path = tbtest::writeText(dir, name, text);
        return tbtest::errorOf([&] { loadGlossary(path); });
    };
    const auto expect = [](const std::string& error, const std::string& part) {
        QVERIFY2(tbtest::contains(error, part), (error + " lacks " + part).c_str());
    };
    expect(errorFor("a.tsv", "# c\ncat\tKatze\n\tHund\n"), "a.tsv:3: empty source term");
    expect(errorFor("b.tsv", "cat\tKatze\ndog\n"), "b.tsv:2: missing target term for \"dog\"");
    expect(errorFor("c.tsv", "cat\t \n"), "c.tsv:1: missing target term");
    expect(errorFor("d.csv", "a,b,c\n"), "d.csv:1: 3 fields");
    expect(errorFor("e.csv", "x,y\n\"open,y\n"), "e.csv:2: unterminated quoted field");
    expect(errorFor("f.tsv", "ok\tfine\nbad\xFF\tx\n"), "f.tsv:2: invalid UTF-8");
    expect(errorFor("g.json", "{\"cat\": \"Katze\",\n \"dog\": }"), "g.json: bad JSON");
    expect(errorFor("g2.json", "{\"cat\": \"Katze\",\n \"dog\": }"), "line 2");
    expect(errorFor("h.json", R"({"cat": 3})"), "h.json: key \"cat\": the target term is not");
    expect(errorFor("i.json", R"({"cat": ""})"), "i.json: key \"cat\": missing target term");
    expect(errorFor("j.json", R"([["cat", "Katze"], ["dog"]])"),
           "j.json: entry 2: missing target term for \"dog\"");
    expect(errorFor("k.json", R"([["cat", "Katze"], "dog"])"), "k.json: entry 2: expected");
    expect(errorFor("l.json", R"("just a string")"), "l.json: expected an object");
    expect(errorFor("m.tsv", "# only a comment\n\n"), "m.tsv: the glossary has no terms");
    expect(tbtest::errorOf([&] { loadGlossary(dir.filePath("absent.tsv").toStdString()); }),
           "absent.tsv");
}

void TestEvalMetrics::terminologyAdherence()
{
    QVERIFY(containsTerm("The Neural Network runs", "neural network"));
    QVERIFY(!containsTerm("three cats", "cat"));
    QVERIFY(!containsTerm("concatenate", "cat"));
    QVERIFY(containsTerm("a cat.", "CAT"));
    QVERIFY(containsTerm("uses C++17 daily", "c++"));
    QVERIFY(containsTerm("DIE STRASSE", "stra\xC3\x9F"
                                        "e"));
    QVERIFY(containsTerm("\xC3\x89t\xC3\xA9 2024", "\xC3\xA9t\xC3\xA9"));
    QVERIFY(!containsTerm("anything", ""));

    const Glossary glossary = {
        {"neural network", "neuronales Netz"}, {"GPU", "GPU"}, {"cat", "Katze"}, {"bank", "Ufer"}};
    const auto metric = makeTerminologyMetric(glossary);
    QCOMPARE(metric->name(), std::string("terminology"));
    QVERIFY(!metric->needsReferences());
    // neural network present, not satisfied (neuronale Netz); GPU present and satisfied; "cats"
    // is not "cat"
    const auto first =
        answer("Das neuronale Netz nutzt eine gpu.", {}, "The Neural Network uses a GPU and cats.");
    QCOMPARE(metric->stats(first), (std::vector<double>{1, 2}));
    QCOMPARE(metric->exampleScore(first), 0.5);
    const auto second = answer("Die Katze sitzt am Ufer.", {}, "The cat sits on the bank.");
    QCOMPARE(metric->stats(second), (std::vector<double>{2, 2}));
    const auto none = answer("Hallo", {}, "Hello");
    QCOMPARE(metric->stats(none), (std::vector<double>{0, 0}));
    QCOMPARE(metric->exampleScore(none), 1.0);
    QCOMPARE(corpusScore(*metric, {first, second, none}), 0.75);
    QCOMPARE(corpusScore(*metric, {none, none}), 1.0);
    QVERIFY(tbtest::contains(tbtest::errorOf([] { makeTerminologyMetric({}); }), "no terms"));
}

void TestEvalMetrics::stopRateAndLength()
{
    const auto stop = makeStopRateMetric();
    const auto length = makeLengthMetric();
    QCOMPARE(stop->name(), std::string("stop_rate"));
    QCOMPARE(length->name(), std::string("length"));
    QVERIFY(!stop->needsReferences() && stop->higherIsBetter());
    QVERIFY(!length->needsReferences() && !length->higherIsBetter());
    std::vector<MetricInput> inputs(4);
    const bool stopped[] = {true, false, true, true};
    const int64_t tokens[] = {10, 256, 3, 31};
    for (size_t i = 0; i < 4; ++i) {
        inputs[i].stopped = stopped[i];
        inputs[i].answerTokens = tokens[i];
    }
    QCOMPARE(corpusScore(*stop, inputs), 0.75);
    QCOMPARE(corpusScore(*length, inputs), 75.0);
    QCOMPARE(length->exampleScore(inputs[1]), 256.0);
    QCOMPARE(stop->score({0, 0}), 0.0);
}

void TestEvalMetrics::squadAndRougeSpotChecks()
{
    QCOMPARE(normalizeSquadAnswer("  The Cat, sat (on) a mat! "), std::string("cat sat on mat"));
    QCOMPARE(normalizeSquadAnswer("Theatre"), std::string("theatre"));
    QCOMPARE(squadExactMatch("The cat.", "cat"), 1.0);
    // tokens [cat, sat] vs [cat, sat, down]: P 1, R 2/3, F1 0.8
    QVERIFY(std::abs(squadTokenF1("the cat sat", "a cat sat down") - 0.8) < 1e-12);
    QCOMPARE(squadTokenF1("", ""), 0.0);  // v1.1: no common token
    QCOMPARE(squadTokenF1("cat cat", "cat"), 2.0 * 0.5 * 1.0 / 1.5);
    const auto f1 = makeTokenF1Metric();
    QCOMPARE(f1->exampleScore(answer("cat sat", {"dog", "cat sat"})), 1.0);

    QCOMPARE(porterStem("caresses"), std::string("caress"));
    QCOMPARE(porterStem("ponies"), std::string("poni"));
    QCOMPARE(porterStem("relational"), std::string("relat"));
    QCOMPARE(porterStem("generalizations"), std::string("gener"));
    QCOMPARE(porterStem("dying"), std::string("die"));
    QCOMPARE(porterStem("Hopping"), std::string("hop"));
    QCOMPARE(rougeTokenize("Running, FAST-cars 42!", false),
             (std::vector<std::string>{"running", "fast", "cars", "42"}));
    QCOMPARE(rougeTokenize("Running, FAST-cars 42!", true),
             (std::vector<std::string>{"run", "fast", "car", "42"}));
    // rouge-score's own test: "testing one two" vs "testing": P 1, R 1/3, F 0.5
    const auto one =
        rougeN(rougeTokenize("testing one two", false), rougeTokenize("testing", false), 1);
    QVERIFY(std::abs(one.precision - 1.0) < 1e-12 && std::abs(one.recall - 1.0 / 3) < 1e-12 &&
            std::abs(one.fmeasure - 0.5) < 1e-12);
    // LCS of "a b c d" and "a c e d" is "a c d": P 3/4, R 3/4
    QVERIFY(std::abs(rougeL({"a", "b", "c", "d"}, {"a", "c", "e", "d"}).fmeasure - 0.75) < 1e-12);
    // The bit-parallel LCS against the dynamic-programming table on random texts: lengths across
    // the 64-token words (carries between them), alphabets from 2 tokens (long runs) to 40.
    std::mt19937 rng(11);
    for (int round = 0; round < 300; ++round) {
        const int alphabet = 2 + round % 39;
        auto text = [&](int n) {
            std::vector<std::string> t(static_cast<size_t>(n));
            for (auto& w : t)
                w = tbtest::numbered("w", rng() % static_cast<unsigned>(alphabet));
            return t;
        };
        const auto a = text(static_cast<int>(rng() % 200) + 1);
        const auto b = text(static_cast<int>(rng() % 200) + 1);
        std::vector<std::vector<int>> table(a.size() + 1, std::vector<int>(b.size() + 1, 0));
        for (size_t i = 1; i <= a.size(); ++i)
            for (size_t j = 1; j <= b.size(); ++j)
                table[i][j] = a[i - 1] == b[j - 1] ? table[i - 1][j - 1] + 1
                                                   : std::max(table[i - 1][j], table[i][j - 1]);
        const double lcs = rougeL(a, b).precision * double(b.size());  // LCS / |prediction|
        QVERIFY2(std::abs(lcs - table[a.size()][b.size()]) < 1e-6,
                 qPrintable(QStringLiteral("%1 tokens against %2, alphabet %3: %4 vs %5")
                                .arg(a.size())
                                .arg(b.size())
                                .arg(alphabet)
                                .arg(lcs)
                                .arg(table[a.size()][b.size()])));
    }
    QCOMPARE(makeRougeMetric(1, false)->name(), std::string("rouge1"));
    QCOMPARE(makeRougeMetric(kRougeL, true)->name(), std::string("rougeL"));
    QVERIFY(tbtest::contains(tbtest::errorOf([] { makeRougeMetric(0, false); }), "unknown"));
}

void TestEvalMetrics::quantilesInterpolateLinearly()
{
    const std::vector<double> v = {1, 2, 3, 4};
    QCOMPARE(quantileSorted(v, 0.0), 1.0);
    QCOMPARE(quantileSorted(v, 1.0), 4.0);
    QCOMPARE(quantileSorted(v, 0.5), 2.5);    // index 1.5
    QCOMPARE(quantileSorted(v, 0.25), 1.75);  // index 0.75
    QCOMPARE(quantileSorted({7.0}, 0.3), 7.0);
    const std::string none = tbtest::errorOf([] { quantileSorted({}, 0.5); });
    QVERIFY2(tbtest::contains(none, "quantile of no values"), none.c_str());
    const std::string outside = tbtest::errorOf([&] { quantileSorted(v, 1.5); });
    QVERIFY2(tbtest::contains(outside, "q must lie in [0, 1], got 1.5"), outside.c_str());
}

void TestEvalMetrics::bootstrapIsDeterministicAndCovers()
{
    const auto metric = makeAccuracyMetric();
    std::mt19937_64 rng(3);
    std::vector<MetricInput> inputs;
    for (int i = 0; i < 300; ++i)
        inputs.push_back(answer(rng() % 10 < 7 ? "yes" : "no", {"yes"}));
    const auto stats = statsOf(*metric, inputs);
    const CorpusScore a = bootstrapScore(*metric, stats, 500, 42);
    const CorpusScore b = bootstrapScore(*metric, stats, 500, 42);
    const CorpusScore c = bootstrapScore(*metric, stats, 500, 43);
    QCOMPARE(a.score, corpusScore(*metric, inputs));
    QCOMPARE(a.ci.lo, b.ci.lo);
    QCOMPARE(a.ci.hi, b.ci.hi);
    QVERIFY(a.ci.lo != c.ci.lo || a.ci.hi != c.ci.hi);
    QVERIFY(a.ci.lo < a.score && a.score < a.ci.hi);
    QVERIFY(a.ci.hi - a.ci.lo > 0.02 && a.ci.hi - a.ci.lo < 0.2);
    // a non-linear metric: the interval is over scores of summed statistics
    const auto f1 = makeMatchF1Metric();
    std::vector<MetricInput> pairs;
    for (int i = 0; i < 200; ++i)
        pairs.push_back(answer(rng() % 4 ? "Yes" : "No", {rng() % 2 ? "Yes" : "No"}));
    const CorpusScore m = bootstrapScore(*f1, statsOf(*f1, pairs), 400, 1);
    QCOMPARE(m.score, corpusScore(*f1, pairs));
    QVERIFY(m.ci.lo < m.score && m.score < m.ci.hi);
    // one example: every resample is that example
    const CorpusScore single = bootstrapScore(*metric, {stats[0]}, 10, 0);
    QCOMPARE(single.ci.lo, single.score);
    QCOMPARE(single.ci.hi, single.score);
}

// For a mean, the 95% percentile interval approaches mean +- 1.96 sd / sqrt(n) (sd of the sample,
// ddof 0: the bootstrap draws from the empirical distribution).
void TestEvalMetrics::bootstrapWidthMatchesNormalApproximation()
{
    const auto metric = makeLengthMetric();
    std::mt19937_64 rng(9);
    std::gamma_distribution<double> gamma(2.0, 30.0);
    std::vector<MetricInput> inputs(2000);
    for (auto& input : inputs)
        input.answerTokens = static_cast<int64_t>(gamma(rng));
    double mean = 0, var = 0;
    for (const auto& input : inputs)
        mean += double(input.answerTokens) / double(inputs.size());
    for (const auto& input : inputs)
        var += std::pow(double(input.answerTokens) - mean, 2) / double(inputs.size());
    const double expected = 2 * 1.96 * std::sqrt(var) / std::sqrt(double(inputs.size()));
    const CorpusScore s = bootstrapScore(*metric, statsOf(*metric, inputs), 2000, 5);
    const double width = s.ci.hi - s.ci.lo;
    QVERIFY2(std::abs(width - expected) < 0.15 * expected,
             qPrintable(QStringLiteral("width %1, expected %2").arg(width).arg(expected)));
    QVERIFY(std::abs((s.ci.hi + s.ci.lo) / 2 - mean) < 0.25 * expected);
    // 80% interval: 2 * 1.2816 sd / sqrt(n)
    const CorpusScore narrow = bootstrapScore(*metric, statsOf(*metric, inputs), 2000, 5, 0.8);
    const double expected80 = expected * 1.2816 / 1.96;
    QVERIFY(std::abs((narrow.ci.hi - narrow.ci.lo) - expected80) < 0.15 * expected80);
}

void TestEvalMetrics::pairedBootstrapOfTwoSystems()
{
    const auto metric = makeAccuracyMetric();
    std::mt19937_64 rng(17);
    std::vector<MetricInput> base, tuned;
    for (int i = 0; i < 500; ++i) {
        const bool baseRight = rng() % 10 < 5;
        const bool tunedRight = baseRight || rng() % 10 < 4;  // 50% -> about 70%
        base.push_back(answer(baseRight ? "a" : "b", {"a"}));
        tuned.push_back(answer(tunedRight ? "a" : "b", {"a"}));
    }
    const auto statsA = statsOf(*metric, base);
    const auto statsB = statsOf(*metric, tuned);
    const PairedDelta same = pairedBootstrap(*metric, statsA, statsA, 300, 2);
    QCOMPARE(same.delta, 0.0);
    QCOMPARE(same.ci.lo, 0.0);
    QCOMPARE(same.ci.hi, 0.0);
    QVERIFY(!same.excludesZero);
    const PairedDelta better = pairedBootstrap(*metric, statsA, statsB, 1000, 2);
    QCOMPARE(better.a, corpusScore(*metric, base));
    QCOMPARE(better.b, corpusScore(*metric, tuned));
    QCOMPARE(better.delta, better.b - better.a);
    QVERIFY(better.delta > 0.15);
    QVERIFY(better.ci.lo > 0 && better.ci.lo < better.delta && better.delta < better.ci.hi);
    QVERIFY(better.excludesZero);
    // reversed: the same interval mirrored (same indices), still excluding zero
    const PairedDelta worse = pairedBootstrap(*metric, statsB, statsA, 1000, 2);
    QVERIFY(std::abs(worse.ci.hi + better.ci.lo) < 1e-12);
    QVERIFY(worse.excludesZero && worse.ci.hi < 0);
    // pairing narrows the interval: the unpaired intervals of the two systems overlap more
    const CorpusScore a = bootstrapScore(*metric, statsA, 1000, 2);
    const CorpusScore b = bootstrapScore(*metric, statsB, 1000, 3);
    QVERIFY((better.ci.hi - better.ci.lo) < (a.ci.hi - a.ci.lo) + (b.ci.hi - b.ci.lo));
}

void TestEvalMetrics::bootstrapRejectsBadInput()
{
    const auto metric = makeAccuracyMetric();
    const std::vector<std::vector<double>> three = {{1, 1}, {0, 1}, {1, 1}};
    const std::vector<std::vector<double>> two = {{1, 1}, {0, 1}};
    const auto has = [](const std::string& error, const char* part) {
        return tbtest::contains(error, part);
    };
    QVERIFY(has(tbtest::errorOf([&] { pairedBootstrap(*metric, three, two); }), "3 and 2"));
    QVERIFY(has(tbtest::errorOf([&] { pairedBootstrap(*metric, {}, {}); }), "no examples"));
    QVERIFY(has(tbtest::errorOf([&] { bootstrapScore(*metric, {}); }), "no examples"));
    QVERIFY(has(tbtest::errorOf([&] { bootstrapScore(*metric, {{1, 1}, {1}}); }), "example 2"));
    QVERIFY(has(tbtest::errorOf([&] { bootstrapScore(*metric, three, 0); }), "resamples"));
    QVERIFY(
        has(tbtest::errorOf([&] { bootstrapScore(*metric, three, 10, 0, 1.0); }), "confidence"));
}

QTEST_GUILESS_MAIN(TestEvalMetrics)
#include "test_eval_metrics.moc"
