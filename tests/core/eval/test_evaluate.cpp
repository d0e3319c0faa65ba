// Evaluating a model on held-out cases: batched answers equal one-at-a-time answers, results
// folders round-trip, predictions made elsewhere are read with clear errors, scorecards pair the
// systems' cases, and regression suites check answers and gate on regressions.
#include "data/example.h"
#include "eval/evaluate.h"
#include "eval/scorecard.h"
#include "eval/suite.h"
#include "test_util.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/file_util.h"

#include <QtTest>

#include <filesystem>

#include <cmath>

using namespace tb;
using namespace tb::eval;
using tbtest::contains;
using tbtest::errorOf;
using tbtest::writeText;

namespace {

const std::string kBundled = TB_SOURCE_DIR "/datasets/models/stories260k";

EvalPrediction prediction(const std::string& answer, const std::string& reference,
                          bool stopped = true, int64_t tokens = 5)
{
    EvalPrediction p;
    p.input.id = reference;
    p.input.prompt = {{"user", "q " + reference}};
    p.input.references = {reference};
    p.prediction = answer;
    p.stopped = stopped;
    p.answerTokens = tokens;
    return p;
}

EvalResult resultOf(std::vector<EvalPrediction> predictions)
{
    EvalResult r;
    r.predictions = std::move(predictions);
    std::vector<EvalCase> cases;
    for (const auto& p : r.predictions)
        cases.push_back(p.input);
    r.data["sha256"] = casesSha256(cases);
    return r;
}

}  // namespace

class TestEvaluate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void casesAndSamples();
    void batchedEqualsSingle();
    void scoresAndFiles();
    void predictionErrors();
    void scorecardDeltas();
    void suiteChecks();
    void suiteErrors();
    void suiteRunsAndCancels();

private:
    QTemporaryDir m_dir;
};

void TestEvaluate::casesAndSamples()
{
    std::vector<Example> examples(4);
    examples[0].messages = {{"user", "a"}, {"assistant", "A"}};
    examples[0].source = "f.jsonl:1";
    examples[1].messages = {{"user", "b"}};  // no answer: skipped
    examples[2].plainText = true;
    examples[2].messages = {{"assistant", "text"}};
    examples[3].messages = {{"system", "s"}, {"user", "c"}, {"assistant", "C"}};
    examples[3].source = "store#train-v1:record 42";
    const auto cases = casesFromExamples(examples);
    QCOMPARE(cases.size(), size_t(2));
    QCOMPARE(cases[0].references, std::vector<std::string>{"A"});
    QCOMPARE(cases[1].prompt.size(), size_t(2));
    QCOMPARE(cases[1].source, std::string("c"));
    QCOMPARE(cases[1].recordId, int64_t(42));
    QCOMPARE(casesFromExamples(examples, 1).size(), size_t(1));
    // The hash depends on prompts and references only, not on where they came from.
    auto moved = cases;
    moved[0].id = "elsewhere";
    QCOMPARE(casesSha256(moved), casesSha256(cases));
    moved[0].references = {"B"};
    QVERIFY(casesSha256(moved) != casesSha256(cases));

    std::vector<EvalCase> many(50);
    for (size_t i = 0; i < many.size(); ++i)
        many[i].id = std::to_string(i);
    const auto a = sampleCases(many, 10, 7), b = sampleCases(many, 10, 7),
               c = sampleCases(many, 10, 8);
    QCOMPARE(a.size(), size_t(10));
    std::vector<std::string> ia, ib, ic;
    for (size_t i = 0; i < 10; ++i) {
        ia.push_back(a[i].id);
        ib.push_back(b[i].id);
        ic.push_back(c[i].id);
    }
    QCOMPARE(ia, ib);
    QVERIFY(ia != ic);
    QVERIFY(std::is_sorted(ia.begin(), ia.end(), [](const auto& x, const auto& y) {
        return std::stoi(x) < std::stoi(y);
    }));
    QCOMPARE(sampleCases(many, 0, 1).size(), many.size());
}

void TestEvaluate::batchedEqualsSingle()
{
    const auto model = Model::load(kBundled, {"fp32", "cpu"});
    const auto tokenizer = loadTokenizer(kBundled);
    const ChatTemplate chat = ChatTemplate::fromFamily(ChatTemplateFamily::Alpaca);
    std::vector<EvalCase> cases;
    const char* prompts[] = {"Tell me about Mia and the cat.", "Where did Tom play?",
                             "Once upon a time there was a very small dog who liked to run.", "Hi",
                             "Write about Lucy, a pig and the farm."};
    for (const char* p : prompts) {
        EvalCase c;
        c.id = p;
        c.prompt = {{"user", p}};
        c.references = {"Mia had a little cat."};
        cases.push_back(c);
    }
    EvalSettings settings;
    settings.metrics = {"exact_match", "f1", "stop_rate", "length"};
    settings.generation.maxNewTokens = 24;
    settings.resamples = 200;
    settings.batch = 1;
    const EvalResult single = evaluateModel(*model, *tokenizer, chat, cases, settings);
    settings.batch = 4;
    int64_t calls = 0;
    const EvalResult batched =
        evaluateModel(*model, *tokenizer, chat, cases, settings, [&](int64_t done, int64_t total) {
            ++calls;
            return done <= total;
        });
    QCOMPARE(calls, int64_t(2));  // after each batch of 4
    QCOMPARE(batched.predictions.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        QCOMPARE(batched.predictions[i].prediction, single.predictions[i].prediction);
        QCOMPARE(batched.predictions[i].answerTokens, single.predictions[i].answerTokens);
        QCOMPARE(batched.predictions[i].stopReason, single.predictions[i].stopReason);
        QVERIFY(batched.predictions[i].answerTokens > 0);
    }
    QCOMPARE(batched.metrics.at("f1").score, single.metrics.at("f1").score);
    // Cancelling after the first batch returns what was answered, unscored.
    const EvalResult cancelled = evaluateModel(*model, *tokenizer, chat, cases, settings,
                                               [](int64_t, int64_t) { return false; });
    QVERIFY(cancelled.cancelled);
    QCOMPARE(cancelled.predictions.size(), size_t(4));
    QVERIFY(cancelled.metrics.empty());
}

void TestEvaluate::scoresAndFiles()
{
    EvalResult r = resultOf({prediction("The cat.", "the cat"), prediction("a dog", "the cat"),
                             prediction("cat", "the cat", false, 9), prediction("", "cat")});
    EvalSettings settings;
    settings.metrics = {"exact_match", "stop_rate", "length"};
    settings.resamples = 1000;
    scorePredictions(r, settings);
    // SQuAD normalisation: "The cat." == "the cat" == "cat" (articles and punctuation dropped).
    QCOMPARE(r.metrics.at("exact_match").score, 0.5);
    QCOMPARE(r.predictions[0].scores.at("exact_match"), 1.0);
    QCOMPARE(r.predictions[1].scores.at("exact_match"), 0.0);
    QCOMPARE(r.metrics.at("stop_rate").score, 0.75);
    QCOMPARE(r.metrics.at("length").score, (5.0 + 5 + 9 + 5) / 4);
    const auto& ci = r.metrics.at("exact_match").ci;
    QVERIFY(ci.lo <= 0.5 && ci.hi >= 0.5 && ci.lo >= 0.0 && ci.hi <= 1.0 && ci.hi > ci.lo);

    const std::string dir = m_dir.filePath(QStringLiteral("results/a")).toStdString();
    r.name = "a";
    writeEvalResult(r, dir);
    const auto j = nlohmann::json::parse(readFile(joinPath(dir, "results.json")));
    QCOMPARE(j["examples"].get<int>(), 4);
    QCOMPARE(j["metrics"]["exact_match"]["score"].get<double>(), 0.5);
    QCOMPARE(j["metrics"]["exact_match"]["ci"].size(), size_t(2));
    const EvalResult back = readEvalResult(dir);
    QCOMPARE(back.predictions.size(), size_t(4));
    QCOMPARE(back.predictions[2].prediction, std::string("cat"));
    QCOMPARE(back.predictions[2].answerTokens, int64_t(9));
    QCOMPARE(back.predictions[2].scores.at("exact_match"), 1.0);
    QCOMPARE(back.metrics.at("exact_match").score, 0.5);
    QCOMPARE(back.data["sha256"], r.data["sha256"]);
    // The two files are one result: predictions another evaluation left beside it (one stopped
    // between its two files) are refused, not read with the other's scores.
    const std::string predictions = joinPath(dir, "predictions.jsonl");
    const std::string whole = readFile(predictions);
    writeFileAtomic(predictions, whole.substr(0, whole.find('\n') + 1));
    std::string e = errorOf([&] { readEvalResult(dir); });
    QVERIFY2(contains(e, "predictions.jsonl: does not belong to"), e.c_str());
    // A folder of its own files (a stale temporary too) is replaced whole; one holding the
    // user's other files keeps them.
    writeFileAtomic(joinPath(dir, "results.json.tmp.999999"), "x");
    writeEvalResult(r, dir);
    QCOMPARE(readEvalResult(dir).predictions.size(), size_t(4));
    QVERIFY(!fileExists(joinPath(dir, "results.json.tmp.999999")));
    writeFileAtomic(joinPath(dir, "notes.txt"), "mine");
    writeEvalResult(r, dir);
    QCOMPARE(readEvalResult(dir).predictions.size(), size_t(4));
    QCOMPARE(readFile(joinPath(dir, "notes.txt")), std::string("mine"));
    // A folder given as "." or through a symlink is written where it is (staging "." threw).
    namespace fs = std::filesystem;
    const std::string own = m_dir.filePath(QStringLiteral("results/own")).toStdString();
    writeEvalResult(r, own);
    const std::string link = m_dir.filePath(QStringLiteral("results/link")).toStdString();
    fs::create_directory_symlink(own, link);
    writeEvalResult(r, link);
    QVERIFY(fs::is_symlink(link));
    QCOMPARE(readEvalResult(link).predictions.size(), size_t(4));
    const fs::path before = fs::current_path();
    fs::current_path(own);
    writeEvalResult(r, ".");
    fs::current_path(before);
    QCOMPARE(readEvalResult(own).predictions.size(), size_t(4));

    // Unknown metrics are named with the known ones.
    settings.metrics = {"bleu4"};
    e = errorOf([&] { scorePredictions(r, settings); });
    QVERIFY2(contains(e, "bleu4") && contains(e, "exact_match"), e.c_str());
}

void TestEvaluate::predictionErrors()
{
    const auto path = [&](const char* name, const std::string& text) {
        return writeText(m_dir, name, text);
    };
    const std::string good = path(
        "good.jsonl", "{\"prediction\": \"a\", \"reference\": \"a\"}\n\n"
                      "{\"prediction\": \"b\", \"references\": [\"c\", \"b\"], \"id\": \"x\"}\n");
    const auto rows = readPredictions(good);
    QCOMPARE(rows.size(), size_t(2));
    QCOMPARE(rows[1].input.references.size(), size_t(2));
    QCOMPARE(rows[1].input.id, std::string("x"));
    // What Tunebench writes reads back: both keys (the first reference repeated), numeric ids,
    // nulls as absent.
    const auto written = readPredictions(path(
        "written.jsonl",
        "{\"prediction\": \"b\", \"reference\": \"c\", \"references\": [\"c\", \"b\"], \"id\": 7, "
        "\"stopped\": true, \"answer_tokens\": 12, \"stop_reason\": null, \"source\": null}\n"
        "{\"prediction\": \"b\", \"reference\": \"\", \"references\": []}\n"));
    QCOMPARE(written[0].input.references.size(), size_t(2));
    QCOMPARE(written[0].input.id, std::string("7"));
    QVERIFY(written[0].stopped);
    QCOMPARE(written[0].answerTokens, int64_t(12));
    QVERIFY(written[1].input.references.empty());

    struct Bad {
        const char* name;
        std::string text;
        std::string expect;
    };
    const std::vector<Bad> bad{
        {"empty.jsonl", "", "empty"},
        {"json.jsonl", "{\"prediction\": \"a\", \"reference\": \"a\"}\n{oops\n", "json.jsonl:2"},
        {"nopred.jsonl", "{\"reference\": \"a\"}\n", "prediction"},
        {"refs.jsonl", "{\"prediction\": \"a\", \"references\": [1]}\n", "references"},
        // Optional keys of another type, or counts out of range, are named with their line (the
        // count was cast unchecked: 1e30 answer tokens made a length of -4.6e18).
        {"huge.jsonl", "{\"prediction\": \"a\", \"answer_tokens\": 1e30}\n",
         "huge.jsonl:1: 'answer_tokens' must be a whole number"},
        {"negative.jsonl", "{\"prediction\": \"a\", \"answer_tokens\": -3}\n", "answer_tokens"},
        {"half.jsonl", "{\"prediction\": \"a\", \"answer_tokens\": 1.5}\n", "answer_tokens"},
        {"stopped.jsonl", "{\"prediction\": \"a\", \"stopped\": \"yes\"}\n",
         "stopped.jsonl:1: 'stopped' must be true or false"},
        {"id.jsonl", "{\"prediction\": \"a\", \"id\": [1]}\n", "id.jsonl:1: 'id' must be a string"},
        {"source.jsonl", "{\"prediction\": \"a\", \"source\": 5}\n",
         "source.jsonl:1: 'source' must be a string"},
        {"scores.jsonl", "{\"prediction\": \"a\", \"scores\": 3}\n", "scores"},
        // Two answers to one question: 'reference' outside 'references'.
        {"both.jsonl", "{\"prediction\": \"a\", \"reference\": \"a\", \"references\": [\"b\"]}\n",
         "both.jsonl:1: 'reference' \"a\" is not among 'references'"},
        {"bothempty.jsonl", "{\"prediction\": \"a\", \"reference\": \"x\", \"references\": []}\n",
         "not among"},
    };
    for (const Bad& b : bad) {
        const std::string e = errorOf([&] { readPredictions(path(b.name, b.text)); });
        QVERIFY2(contains(e, b.name) && contains(e, b.expect), e.c_str());
    }
    // A reference-based metric needs references; stop_rate does not.
    EvalResult r;
    r.predictions = readPredictions(path("noref.jsonl", "{\"prediction\": \"a\"}\n"));
    EvalSettings settings;
    settings.metrics = {"f1"};
    const std::string e = errorOf([&] { scorePredictions(r, settings); });
    QVERIFY2(contains(e, "noref.jsonl:1") && contains(e, "reference"), e.c_str());
    settings.metrics = {"stop_rate"};
    scorePredictions(r, settings);
    QCOMPARE(r.metrics.at("stop_rate").score, 0.0);
    // A metric's own complaint names the example it is about; a metric twice is refused.
    r.predictions = readPredictions(
        path("labels.jsonl", "{\"prediction\": \"yes\", \"reference\": \"no\"}\n"
                             "{\"prediction\": \"yes\", \"reference\": \"positive\"}\n"));
    settings.metrics = {"match_f1"};
    const std::string label = errorOf([&] { scorePredictions(r, settings); });
    QVERIFY2(contains(label, "labels.jsonl:2: match_f1") && contains(label, "positive"),
             label.c_str());
    settings.metrics = {"bleu", "bleu"};
    const std::string twice = errorOf([&] { scorePredictions(r, settings); });
    QVERIFY2(contains(twice, "metric 'bleu' is listed twice"), twice.c_str());
    // A folder given as the file.
    const std::string folder = errorOf([&] { readPredictions(m_dir.path().toStdString()); });
    QVERIFY2(contains(folder, "is a folder, not a file"), folder.c_str());
}

void TestEvaluate::scorecardDeltas()
{
    std::vector<EvalPrediction> base, tuned, same;
    for (int i = 0; i < 60; ++i) {
        const std::string ref = "answer " + std::to_string(i);
        base.push_back(prediction(i % 4 == 0 ? ref : "wrong", ref));
        tuned.push_back(prediction(i % 4 == 3 ? "wrong" : ref, ref));
        same.push_back(base.back());
    }
    EvalSettings settings;
    settings.metrics = {"exact_match", "length"};
    settings.resamples = 1000;
    // How the tuned system held its weights: 1000 fp32 parameters, 600 of them NF4 in 330 bytes.
    tb::WeightFootprint nf4;
    nf4.quant.kind = tb::QuantKind::Nf4;
    nf4.parameters = 1000;
    nf4.quantizedParameters = 600;
    nf4.quantizedBytes = 330;
    nf4.bytes = 4 * 400 + 330;
    std::vector<ScorecardSystem> systems{{"base", resultOf(base), 0.5, {}},
                                         {"tuned", resultOf(tuned), 0.7, nf4},
                                         {"copy", resultOf(same), std::nullopt, {}}};
    const Scorecard sc = buildScorecard(systems, settings);
    QCOMPARE(sc.cells.size(), size_t(2));
    QCOMPARE(sc.cells[0][0].score.score, 0.25);
    QCOMPARE(sc.cells[0][1].score.score, 0.75);
    const PairedDelta& up = *sc.cells[0][1].delta;
    QCOMPARE(up.delta, 0.5);
    QVERIFY(up.excludesZero && up.ci.lo > 0 && up.ci.hi <= 1.0);
    const PairedDelta& none = *sc.cells[0][2].delta;
    QCOMPARE(none.delta, 0.0);
    QVERIFY(!none.excludesZero);
    const auto j = toJson(sc);
    QCOMPARE(j["systems"][1]["metrics"]["exact_match"]["delta"]["better"].get<bool>(), true);
    QCOMPARE(j["systems"][0]["general_loss"].get<double>(), 0.5);
    // The weights record: only where known; bits per weight of the quantised layers (8 x 330 /
    // 600).
    QVERIFY(!j["systems"][0].contains("weights"));
    const auto& w = j["systems"][1]["weights"];
    QCOMPARE(w["quant"].get<std::string>(), std::string("nf4"));
    QCOMPARE(w["double_quant"].get<bool>(), false);
    QCOMPARE(w["dtype"].get<std::string>(), std::string("fp32"));
    QCOMPARE(w["bytes"].get<int64_t>(), int64_t(1930));
    QCOMPARE(w["quantized_parameters"].get<int64_t>(), int64_t(600));
    QVERIFY(std::abs(w["bits_per_weight"].get<double>() - 4.4) < 1e-12);
    // Length describes; it is neither better nor worse.
    QVERIFY(!j["systems"][1]["metrics"]["length"]["delta"].contains("better"));
    const std::string md = scorecardMarkdown(sc);
    QVERIFY2(contains(md, "better") && contains(md, "no clear difference") &&
                 contains(md, "forgetting"),
             md.c_str());
    // 1930 bytes = 0.00184 MiB.
    QVERIFY2(
        contains(md, "| tuned | NF4 · 4.4 bits/weight (linear layers) · 0.00 MiB of weights |") &&
            contains(md, "| base | – |"),
        md.c_str());

    // Other cases, or fewer of them: one clear error.
    std::vector<EvalPrediction> shorter(tuned.begin(), tuned.end() - 1);
    std::string e = errorOf([&] {
        buildScorecard({{"base", resultOf(base), {}, {}}, {"t", resultOf(shorter), {}, {}}},
                       settings);
    });
    QVERIFY2(contains(e, "same cases"), e.c_str());
    auto other = tuned;
    other[0].input.references = {"something else"};
    e = errorOf([&] {
        buildScorecard({{"base", resultOf(base), {}, {}}, {"t", resultOf(other), {}, {}}},
                       settings);
    });
    QVERIFY2(contains(e, "SHA-256"), e.c_str());
}

void TestEvaluate::suiteChecks()
{
    const std::string path = writeText(
        m_dir, "suite.jsonl",
        "{\"id\": \"greet\", \"prompt\": \"Say hi\", \"checks\": [{\"contains\": \"hi\"}, "
        "{\"not_contains\": \"bye\"}, {\"starts_with\": \"Oh\"}]}\n"
        "{\"prompt\": [{\"role\": \"user\", \"content\": \"Number?\"}], \"required\": true, "
        "\"checks\": [{\"regex\": \"^[0-9]+$\"}, {\"max_tokens\": 3}]}\n"
        "{\"id\": 7, \"prompt\": \"x\", \"checks\": [{\"exact\": \"Yes.\"}, {\"metric\": "
        "\"exact_match\", \"reference\": \"yes\", \"min\": 1}]}\n");
    const auto suite = readSuite(path);
    QCOMPARE(suite.size(), size_t(3));
    QCOMPARE(suite[1].id, path + ":2");
    QCOMPARE(suite[2].id, std::string("7"));
    QVERIFY(suite[1].required);

    QVERIFY(checkAnswer(suite[0], "Oh hi there", 3, true).passed);
    const auto bye = checkAnswer(suite[0], "hi, bye", 3, true);
    QCOMPARE(bye.failures.size(), size_t(2));  // contains "bye", does not start with "Oh"
    QVERIFY(checkAnswer(suite[1], "42", 2, true).passed);
    QCOMPARE(checkAnswer(suite[1], "42", 4, true).failures.size(), size_t(1));
    QVERIFY(!checkAnswer(suite[1], "4 2", 2, true).passed);
    QVERIFY(checkAnswer(suite[2], "Yes.", 1, true).passed);
    QCOMPARE(checkAnswer(suite[2], "No.", 1, true).failures.size(), size_t(2));
    // A pattern with nested repeats ends at PCRE2's match limit (std::regex ran for hours): the
    // check fails and says why.
    SuiteCase nested;
    nested.id = "nested";
    nested.checks.push_back(SuiteCheck{});
    nested.checks.back().kind = "regex";
    nested.checks.back().value = "(a+)+$";
    const CaseOutcome limit = checkAnswer(nested, std::string(40, 'a') + "b", 41, true);
    QVERIFY(!limit.passed);
    QCOMPARE(limit.failures.size(), size_t(1));
    QVERIFY2(limit.failures[0].find("cannot be matched against /(a+)+$/ (match limit") !=
                 std::string::npos,
             limit.failures[0].c_str());
    QVERIFY(checkAnswer(nested, std::string(40, 'a'), 40, true).passed);

    // Regressions and required cases gate; a case that failed on the base too does not.
    const std::vector<CaseOutcome> base{checkAnswer(suite[0], "Oh hi", 2, true),
                                        checkAnswer(suite[1], "x", 1, true),
                                        checkAnswer(suite[2], "No", 1, true)};
    std::vector<CaseOutcome> tuned{checkAnswer(suite[0], "Oh hi", 2, true),
                                   checkAnswer(suite[1], "12", 1, true),
                                   checkAnswer(suite[2], "No", 1, true)};
    SuiteReport r = compareSuite(suite, base, tuned);
    QCOMPARE(r.passed, int64_t(2));
    QCOMPARE(r.regressions, int64_t(0));
    QVERIFY(!r.gateFailed());
    tuned[0] = checkAnswer(suite[0], "bye", 1, true);
    r = compareSuite(suite, base, tuned);
    QCOMPARE(r.regressions, int64_t(1));
    QVERIFY(r.gateFailed() && r.cases[0].regression && r.cases[0].gate);
    tuned[0] = checkAnswer(suite[0], "Oh hi", 2, true);
    tuned[1] = checkAnswer(suite[1], "many", 1, true);
    r = compareSuite(suite, {}, tuned);  // no base: only required cases gate
    QCOMPARE(r.requiredFailed, int64_t(1));
    QVERIFY(r.gateFailed());
    const auto j = toJson(r);
    QCOMPARE(j["summary"]["gate_failed"].get<bool>(), true);
    QVERIFY(contains(suiteMarkdown(r), "(required)"));
}

void TestEvaluate::suiteErrors()
{
    struct Bad {
        const char* name;
        std::string text;
        std::string expect;
    };
    const std::vector<Bad> bad{
        {"s_empty.jsonl", "\n", "no cases"},
        {"s_json.jsonl", "{\"prompt\": \"a\", \"checks\": [{\"contains\": \"a\"}]}\n[1\n",
         "s_json.jsonl:2"},
        {"s_check.jsonl", "{\"prompt\": \"a\", \"checks\": [{\"contain\": \"a\"}]}\n", "contain"},
        {"s_regex.jsonl", "{\"prompt\": \"a\", \"checks\": [{\"regex\": \"(\"}]}\n", "regex"},
        {"s_metric.jsonl",
         "{\"prompt\": \"a\", \"checks\": [{\"metric\": \"bleu9\", \"reference\": \"a\", "
         "\"min\": 1}]}\n",
         "bleu9"},
        {"s_min.jsonl",
         "{\"prompt\": \"a\", \"checks\": [{\"metric\": \"f1\", \"reference\": \"a\"}]}\n", "min"},
        {"s_key.jsonl", "{\"prompt\": \"a\", \"checks\": [{\"exact\": \"a\"}], \"requird\": 1}\n",
         "requird"},
        {"s_noprompt.jsonl", "{\"checks\": [{\"exact\": \"a\"}]}\n", "prompt"},
        {"s_nochecks.jsonl", "{\"prompt\": \"a\", \"checks\": []}\n", "checks"},
        // Two kinds in one check: the second was ignored.
        {"s_twokinds.jsonl",
         "{\"prompt\": \"a\", \"checks\": [{\"contains\": \"a\", \"regex\": \"b\"}]}\n", "names 2"},
        {"s_extrakey.jsonl", "{\"prompt\": \"a\", \"checks\": [{\"max_tokens\": 3, \"min\": 1}]}\n",
         "unknown key 'min'"},
        {"s_refs.jsonl",
         "{\"prompt\": \"a\", \"checks\": [{\"metric\": \"chrf\", \"references\": \"a\", "
         "\"min\": 1}]}\n",
         "list of strings"},
        // A case id used twice: the second case's result would overwrite the first's.
        {"s_dupid.jsonl",
         "{\"id\": \"x\", \"prompt\": \"a\", \"checks\": [{\"exact\": \"a\"}]}\n"
         "{\"id\": \"x\", \"prompt\": \"b\", \"checks\": [{\"exact\": \"b\"}]}\n",
         "s_dupid.jsonl:1"},
        {"s_budget.jsonl",
         "{\"prompt\": \"a\", \"checks\": [{\"exact\": \"a\"}], \"max_new_tokens\": "
         "4294967297}\n",
         "max_new_tokens"},
    };
    for (const Bad& b : bad) {
        const std::string e = errorOf([&] { readSuite(writeText(m_dir, b.name, b.text)); });
        QVERIFY2(contains(e, b.name) && contains(e, b.expect), e.c_str());
    }
}

void TestEvaluate::suiteRunsAndCancels()
{
    const auto model = Model::load(kBundled, {"fp32", "cpu"});
    const auto tokenizer = loadTokenizer(kBundled);
    const ChatTemplate chat = ChatTemplate::fromFamily(ChatTemplateFamily::Alpaca);
    // The same prompt five times, the odd cases allowing one answer token where eight are
    // generated: those fail, the others pass, and every answer is the same greedy text whichever
    // batch (of 2, 2 and 1) it was decoded in.
    std::string text;
    for (int i = 0; i < 5; ++i)
        text += "{\"prompt\": \"Tell me about a cat\", \"max_new_tokens\": 8, \"checks\": "
                "[{\"max_tokens\": " +
                std::string(i % 2 ? "1" : "8") + "}]}\n";
    const auto suite = readSuite(writeText(m_dir, "run.jsonl", text));
    std::vector<int64_t> seen;
    const auto outcomes =
        runSuite(*model, *tokenizer, chat, suite, 16, 2, [&](int64_t done, int64_t) {
            seen.push_back(done);
            return true;
        });
    QCOMPARE(outcomes.size(), size_t(5));
    QVERIFY2(outcomes[0].answerTokens > 1, outcomes[0].answer.c_str());
    for (size_t i = 0; i < outcomes.size(); ++i) {
        QCOMPARE(outcomes[i].answer, outcomes[0].answer);
        QCOMPARE(outcomes[i].answerTokens, outcomes[0].answerTokens);
        QCOMPARE(outcomes[i].passed, i % 2 == 0);
        QCOMPARE(outcomes[i].failures.size(), size_t(i % 2));
    }
    QVERIFY2(contains(outcomes[1].failures.front(), "(max 1)"),
             outcomes[1].failures.front().c_str());
    QCOMPARE(seen, (std::vector<int64_t>{2, 4, 5}));
    const std::string e = errorOf([&] {
        runSuite(*model, *tokenizer, chat, suite, 16, 2, [](int64_t, int64_t) { return false; });
    });
    QVERIFY2(contains(e, "cancelled"), e.c_str());
}

QTEST_GUILESS_MAIN(TestEvaluate)
#include "test_evaluate.moc"
