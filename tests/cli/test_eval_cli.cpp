// `tunebench eval` end to end: LoRA on datasets/tiny lifts exact match over the base model with a
// paired interval that excludes zero, and the scorecard says so; results folders, scoring
// predictions made elsewhere, regression suites that gate, evaluation during training, a QLoRA run
// on one scorecard with the fp32 and the NF4 base, and one clear error for each kind of bad input.
#include "data/store/comparisons.h"
#include "data/store/store.h"
#include "test_util.h"
#include "util/file_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <utility>
#include <vector>

namespace {

const QString kConfig = QStringLiteral(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json");
const QString kVal = QStringLiteral(TB_SOURCE_DIR "/datasets/tiny/val.jsonl");

struct Run {
    int exitCode = -1;
    QByteArray out, err;
};

Run tunebench(const QStringList& args)
{
    QProcess p;
    p.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    Run r;
    if (!p.waitForFinished(300000))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

nlohmann::json lastJson(const Run& r)
{
    return nlohmann::json::parse(r.out.trimmed().split('\n').last().toStdString());
}

QString q(const std::string& s)
{
    return QString::fromStdString(s);
}

}  // namespace

class TestEvalCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void generationEvalDuringTraining();
    void evalRun();
    void compareScorecard();
    void compareQuantisedBase();
    void blindComparison();
    void scorePredictions();
    void suiteGate();
    void errors_data();
    void errors();

private:
    QTemporaryDir m_dir;
    QString m_run;
    QString m_card;  // eval compare's output folder
};

// One LoRA run on the tiny task, with generation-based evaluation every 30 steps.
void TestEvalCli::initTestCase()
{
    const QString runs = m_dir.filePath(QStringLiteral("runs"));
    Run r = tunebench({QStringLiteral("train"), QStringLiteral("--config"), kConfig,
                       QStringLiteral("output_dir=") + runs, QStringLiteral("name=evaltiny"),
                       QStringLiteral("max_steps=60"), QStringLiteral("eval_every=0"),
                       QStringLiteral("eval.generate_every=30"), QStringLiteral("eval.sample=8"),
                       QStringLiteral("eval.max_new_tokens=24"),
                       QStringLiteral("eval.metrics=[\"exact_match\",\"f1\"]"),
                       QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    m_run = q(lastJson(r)["run_dir"].get<std::string>());
    QVERIFY2(r.out.contains("generation eval step 30 (8 cases): exact_match"), r.out.constData());
}

void TestEvalCli::generationEvalDuringTraining()
{
    std::vector<nlohmann::json> lines;
    std::istringstream in(tb::readFile(m_run.toStdString() + "/metrics.jsonl"));
    for (std::string line; std::getline(in, line);) {
        auto j = nlohmann::json::parse(line);
        if (j["type"] == "generation_eval")
            lines.push_back(j);
    }
    QCOMPARE(lines.size(), size_t(2));  // step 30 and the end (60)
    QCOMPARE(lines[0]["step"].get<int>(), 30);
    QCOMPARE(lines[1]["step"].get<int>(), 60);
    QCOMPARE(lines[1]["cases"].get<int>(), 8);
    const double f1 = lines[1]["metrics"]["f1"].get<double>();
    QVERIFY2(f1 > 0.3 && f1 <= 1.0, std::to_string(f1).c_str());
}

void TestEvalCli::evalRun()
{
    // The run's own validation split, its template, 20 cases.
    Run r = tunebench(
        {QStringLiteral("eval"), QStringLiteral("--run"), m_run, QStringLiteral("--metrics"),
         QStringLiteral("exact_match,f1,bleu,rougeL"), QStringLiteral("--limit"),
         QStringLiteral("20"), QStringLiteral("--max-new-tokens"), QStringLiteral("32"),
         QStringLiteral("--name"), QStringLiteral("val20"), QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto j = lastJson(r);
    QCOMPARE(j["examples"].get<int>(), 20);
    for (const char* m : {"exact_match", "f1", "bleu", "rougeL"}) {
        const auto& s = j["metrics"][m];
        QVERIFY2(s["ci"][0].get<double>() <= s["score"].get<double>() &&
                     s["score"].get<double>() <= s["ci"][1].get<double>(),
                 m);
    }
    QVERIFY(j["metrics"]["bleu"]["score"].get<double>() > 1.0);  // sacrebleu's 0-100 units
    const std::string dir = m_run.toStdString() + "/eval/val20";
    QCOMPARE(j["dir"].get<std::string>(), dir);
    QCOMPARE(j["data"]["sha256"].get<std::string>().size(), size_t(64));
    const auto results = nlohmann::json::parse(tb::readFile(dir + "/results.json"));
    QCOMPARE(results["metrics"], j["metrics"]);
    std::istringstream in(tb::readFile(dir + "/predictions.jsonl"));
    int rows = 0;
    for (std::string line; std::getline(in, line); ++rows) {
        const auto p = nlohmann::json::parse(line);
        for (const char* key : {"prompt", "reference", "prediction", "scores", "stopped"})
            QVERIFY2(p.contains(key), key);
    }
    QCOMPARE(rows, 20);
}

void TestEvalCli::compareScorecard()
{
    const QString out = m_dir.filePath(QStringLiteral("card"));
    Run r =
        tunebench({QStringLiteral("eval"), QStringLiteral("compare"), QStringLiteral("--runs"),
                   m_run, QStringLiteral("--data"), kVal, QStringLiteral("--limit"),
                   QStringLiteral("40"), QStringLiteral("--metrics"),
                   QStringLiteral("exact_match,f1,chrf"), QStringLiteral("--max-new-tokens"),
                   QStringLiteral("32"), QStringLiteral("--out"), out, QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto j = lastJson(r);
    QCOMPARE(j["examples"].get<int>(), 40);
    QCOMPARE(j["systems"].size(), size_t(2));
    QCOMPARE(j["systems"][0]["label"].get<std::string>(), std::string("base"));
    const auto& em = j["systems"][1]["metrics"]["exact_match"];
    const double base = j["systems"][0]["metrics"]["exact_match"]["score"].get<double>();
    const double tuned = em["score"].get<double>();
    QVERIFY2(tuned > base + 0.2, r.out.constData());
    QVERIFY(em["delta"]["excludes_zero"].get<bool>());
    QVERIFY(em["delta"]["better"].get<bool>());
    QVERIFY(em["delta"]["ci"][0].get<double>() > 0);
    // stop rate and length are always on the card; the general holdout shows forgetting.
    QVERIFY(j["systems"][1]["metrics"].contains("stop_rate"));
    QVERIFY(j["systems"][1]["metrics"].contains("length"));
    QVERIFY(j["systems"][0].contains("general_loss") && j["systems"][1].contains("general_loss"));
    const std::string md = tb::readFile(out.toStdString() + "/scorecard.md");
    QVERIFY2(tbtest::contains(md, "| exact_match |") && tbtest::contains(md, "better"), md.c_str());
    QVERIFY(tb::fileExists(out.toStdString() + "/system-1/predictions.jsonl"));
    m_card = out;
}

// Bytes of one [rows, cols] weight in NF4 with double quantisation, by bitsandbytes' layout
// (written out here, not taken from core/quant): two codes a byte, a uint8 absmax per 64-element
// block, a float32 absmax per 256 blocks and the 256-entry float32 code table.
namespace {
int64_t nf4DoubleBytes(int64_t rows, int64_t cols)
{
    const int64_t n = rows * cols;
    const int64_t blocks = (n + 63) / 64;
    return (n + 1) / 2 + blocks + (blocks + 255) / 256 * 4 + 256 * 4;
}
}  // namespace

// QLoRA (LoRA on an NF4 double-quant base) on the tiny task, then one scorecard of the fp32 base,
// the NF4 base and the run: three entries named for their weights, the NF4 base's bytes and bits
// per weight as bitsandbytes lays them out, answers that differ from the fp32 base's (its logits
// differ), and the run's logged base loss on the base it was trained on.
void TestEvalCli::compareQuantisedBase()
{
    const QString runs = m_dir.filePath(QStringLiteral("qruns"));
    Run t = tunebench({QStringLiteral("train"), QStringLiteral("--config"), kConfig,
                       QStringLiteral("output_dir=") + runs, QStringLiteral("name=qlora"),
                       QStringLiteral("quant=nf4"), QStringLiteral("quant_double=true"),
                       QStringLiteral("max_steps=30"), QStringLiteral("eval_every=0"),
                       QStringLiteral("--json")});
    QVERIFY2(t.exitCode == 0, t.err.constData());
    const QString run = q(lastJson(t)["run_dir"].get<std::string>());
    const QString out = m_dir.filePath(QStringLiteral("qcard"));
    Run r =
        tunebench({QStringLiteral("eval"), QStringLiteral("compare"), QStringLiteral("--runs"), run,
                   QStringLiteral("--base-quant"), QStringLiteral("fp32,nf4"),
                   QStringLiteral("--base-quant-double"), QStringLiteral("--data"), kVal,
                   QStringLiteral("--limit"), QStringLiteral("24"), QStringLiteral("--metrics"),
                   QStringLiteral("exact_match,f1"), QStringLiteral("--max-new-tokens"),
                   QStringLiteral("24"), QStringLiteral("--out"), out, QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto j = lastJson(r);
    QCOMPARE(j["systems"].size(), size_t(3));
    const auto& fp32 = j["systems"][0];
    const auto& nf4 = j["systems"][1];
    const auto& tuned = j["systems"][2];
    QCOMPARE(fp32["label"].get<std::string>(), std::string("base"));
    QCOMPARE(nf4["label"].get<std::string>(), std::string("base (nf4, double quant)"));
    QCOMPARE(tuned["label"].get<std::string>(), std::string("qlora"));

    // stories260k: 5 blocks of q [64, 64], k and v [32, 64], o [64, 64], gate and up [172, 64],
    // down [64, 172]; everything else (embedding, norms) stays fp32.
    int64_t qParams = 0, qBytes = 0;
    for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {64, 64}, {32, 64}, {32, 64}, {64, 64}, {172, 64}, {172, 64}, {64, 172}}) {
        qParams += 5 * rows * cols;
        qBytes += 5 * nf4DoubleBytes(rows, cols);
    }
    const auto& w0 = fp32["weights"];
    const auto& w1 = nf4["weights"];
    QCOMPARE(w0["quant"].get<std::string>(), std::string("none"));
    QCOMPARE(w0["bits_per_weight"].get<double>(), 32.0);
    const int64_t params = w0["parameters"].get<int64_t>();
    QCOMPARE(w0["bytes"].get<int64_t>(), 4 * params);
    QCOMPARE(w1["quant"].get<std::string>(), std::string("nf4"));
    QVERIFY(w1["double_quant"].get<bool>());
    QCOMPARE(w1["parameters"].get<int64_t>(), params);
    QCOMPARE(w1["quantized_parameters"].get<int64_t>(), qParams);
    QCOMPARE(w1["quantized_bytes"].get<int64_t>(), qBytes);
    QCOMPARE(w1["bytes"].get<int64_t>(), 4 * (params - qParams) + qBytes);
    QVERIFY(std::abs(w1["bits_per_weight"].get<double>() - 8.0 * double(qBytes) / double(qParams)) <
            1e-12);
    QCOMPARE(tuned["weights"]["quant"].get<std::string>(), std::string("nf4"));
    QVERIFY(tuned["weights"]["double_quant"].get<bool>());

    // The NF4 base answered from its own (quantised) logits: some greedy answers differ.
    auto answers = [&out](int system) {
        std::vector<std::string> texts;
        std::istringstream in(tb::readFile(out.toStdString() + "/system-" + std::to_string(system) +
                                           "/predictions.jsonl"));
        for (std::string line; std::getline(in, line);)
            texts.push_back(nlohmann::json::parse(line)["prediction"].get<std::string>());
        return texts;
    };
    const auto a0 = answers(0), a1 = answers(1);
    QCOMPARE(a0.size(), size_t(24));
    QCOMPARE(a1.size(), a0.size());
    int differ = 0;
    for (size_t i = 0; i < a0.size(); ++i)
        differ += a0[i] != a1[i] ? 1 : 0;
    qInfo("fp32 vs NF4 base: %d of %zu answers differ", differ, a0.size());
    QVERIFY2(differ > 0, "the NF4 base answered exactly as the fp32 base");
    // Its deltas are taken against the fp32 base; the run logged its base loss on the NF4 base.
    QVERIFY(nf4["metrics"]["f1"].contains("delta"));
    QVERIFY(!fp32.contains("general_loss"));
    QVERIFY(nf4.contains("general_loss") && tuned.contains("general_loss"));
    const std::string md = tb::readFile(out.toStdString() + "/scorecard.md");
    QVERIFY2(tbtest::contains(md, "| base (nf4, double quant) |") &&
                 tbtest::contains(md, "## Weights") &&
                 tbtest::contains(md, "NF4 (double quant) · "),
             md.c_str());
}

// The scorecard's two systems become a blind set in a store; verdicts recorded through the store
// API come back out of another process as preference pairs, with the win rate.
void TestEvalCli::blindComparison()
{
    QVERIFY(!m_card.isEmpty());
    const QString store = m_dir.filePath(QStringLiteral("blind.tbstore"));
    Run r = tunebench({QStringLiteral("eval"), QStringLiteral("blind"), QStringLiteral("--store"),
                       store, QStringLiteral("--scorecard"), m_card, QStringLiteral("--set"),
                       QStringLiteral("tiny"), QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QCOMPARE(lastJson(r)["items"].get<int>(), 40);
    {
        const auto db = tb::DataStore::open(store.toStdString(), false);
        const auto items = tb::blindItems(*db, "tiny");
        QCOMPARE(items.size(), size_t(40));
        // The annotator prefers whichever shown answer is the tuned one on the first 3 items
        // (found by its text), and calls the 4th a tie.
        const auto full = tb::comparisonItems(*db, "tiny");
        for (int i = 0; i < 4; ++i) {
            const tb::ComparisonItem& item = full[static_cast<size_t>(i)];
            const bool tunedIsA = item.aIsX ? item.sourceX != "base" : item.sourceY != "base";
            tb::recordVerdict(*db, item.id, "ana", i == 3 ? "tie" : (tunedIsA ? "a" : "b"));
        }
    }
    Run pairs =
        tunebench({QStringLiteral("eval"), QStringLiteral("pairs"), QStringLiteral("--store"),
                   store, QStringLiteral("--set"), QStringLiteral("tiny")});
    QVERIFY2(pairs.exitCode == 0, pairs.err.constData());
    const QList<QByteArray> lines = pairs.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);  // the tie stores no pair
    for (const QByteArray& line : lines) {
        const auto p = nlohmann::json::parse(line.toStdString());
        QCOMPARE(p["source_chosen"].get<std::string>(), std::string("evaltiny"));
        QCOMPARE(p["source_rejected"].get<std::string>(), std::string("base"));
        QCOMPARE(p["annotator"].get<std::string>(), std::string("ana"));
        QVERIFY(p["chosen"].get<std::string>() != p["rejected"].get<std::string>());
    }
    Run summary = tunebench({QStringLiteral("eval"), QStringLiteral("pairs"),
                             QStringLiteral("--store"), store, QStringLiteral("--set"),
                             QStringLiteral("tiny"), QStringLiteral("--summary")});
    QVERIFY2(summary.exitCode == 0, summary.err.constData());
    const auto rate = lastJson(summary)["win_rates"][0];
    QCOMPARE(rate["verdicts"].get<int>(), 4);
    // (3 wins + 1 tie / 2) / 4 for the tuned side, whichever of X/Y it is.
    const double tunedRate = rate["y"] == "evaltiny" ? rate["win_rate_y"].get<double>()
                                                     : 1.0 - rate["win_rate_y"].get<double>();
    QCOMPARE(tunedRate, 3.5 / 4);
}

void TestEvalCli::scorePredictions()
{
    const std::string path = tbtest::writeText(
        m_dir, "preds.jsonl",
        "{\"prediction\": \"The cat sat on the mat.\", \"reference\": \"The cat sat on the "
        "mat.\"}\n"
        "{\"prediction\": \"A dog.\", \"references\": [\"The cat.\", \"a dog\"]}\n");
    Run r = tunebench({QStringLiteral("eval"), QStringLiteral("score"),
                       QStringLiteral("--predictions"), q(path), QStringLiteral("--metrics"),
                       QStringLiteral("exact_match,bleu"), QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto j = lastJson(r);
    QCOMPARE(j["examples"].get<int>(), 2);
    QCOMPARE(j["metrics"]["exact_match"]["score"].get<double>(), 1.0);
    Run text =
        tunebench({QStringLiteral("eval"), QStringLiteral("score"), QStringLiteral("--predictions"),
                   q(path), QStringLiteral("--metrics"), QStringLiteral("exact_match")});
    QCOMPARE(text.exitCode, 0);
    QVERIFY2(text.out.contains("exact_match"), text.out.constData());
}

void TestEvalCli::suiteGate()
{
    // Passes on the base model and the tuned one: no gate.
    const std::string ok = tbtest::writeText(
        m_dir, "ok.jsonl",
        "{\"id\": \"short\", \"prompt\": \"Tell me about Mia and the cat.\", \"checks\": "
        "[{\"max_tokens\": 64}]}\n"
        "{\"id\": \"learned\", \"prompt\": \"Tell me about Mia and the cat.\", \"checks\": "
        "[{\"contains\": \"Mia had a little cat\"}]}\n");
    Run r = tunebench({QStringLiteral("eval"), QStringLiteral("suite"), QStringLiteral("--run"),
                       m_run, QStringLiteral("--suite"), q(ok), QStringLiteral("--max-new-tokens"),
                       QStringLiteral("32"), QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
    auto j = lastJson(r);
    QCOMPARE(j["summary"]["passed"].get<int>(), 2);
    QCOMPARE(j["summary"]["base_passed"].get<int>(), 1);  // the base never learned the task
    QCOMPARE(j["cases"][1]["base"]["passed"].get<bool>(), false);

    // A required case that fails gates the run: exit status 2, the case named in the report.
    const std::string bad = tbtest::writeText(
        m_dir, "bad.jsonl",
        "{\"id\": \"never\", \"prompt\": \"Tell me about Mia and the cat.\", \"required\": true, "
        "\"checks\": [{\"contains\": \"purple elephant\"}]}\n");
    r = tunebench({QStringLiteral("eval"), QStringLiteral("suite"), QStringLiteral("--run"), m_run,
                   QStringLiteral("--suite"), q(bad), QStringLiteral("--no-base"),
                   QStringLiteral("--max-new-tokens"), QStringLiteral("16")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.out.contains("never (required)") && r.out.contains("gate fails"), r.out.constData());
}

void TestEvalCli::errors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expect");
    const std::string noRef = tbtest::writeText(m_dir, "noref.jsonl", "{\"prediction\": \"a\"}\n");
    const std::string empty = tbtest::writeText(m_dir, "empty.jsonl", "");
    const QString noModel = m_dir.filePath(QStringLiteral("not-a-run"));
    QDir().mkpath(noModel);
    QTest::newRow("no references")
        << QStringList{QStringLiteral("eval"),          QStringLiteral("score"),
                       QStringLiteral("--predictions"), q(noRef),
                       QStringLiteral("--metrics"),     QStringLiteral("f1")}
        << QStringLiteral("noref.jsonl:1");
    QTest::newRow("empty file") << QStringList{QStringLiteral("eval"),
                                               QStringLiteral("score"),
                                               QStringLiteral("--predictions"),
                                               q(empty),
                                               QStringLiteral("--metrics"),
                                               QStringLiteral("f1")}
                                << QStringLiteral("empty");
    QTest::newRow("unknown metric")
        << QStringList{QStringLiteral("eval"),          QStringLiteral("score"),
                       QStringLiteral("--predictions"), q(noRef),
                       QStringLiteral("--metrics"),     QStringLiteral("f1,blue")}
        << QStringLiteral("blue");
    QTest::newRow("run without a model")
        << QStringList{QStringLiteral("eval"), QStringLiteral("--run"), noModel,
                       QStringLiteral("--metrics"), QStringLiteral("f1")}
        << QStringLiteral("not a run folder");
    QTest::newRow("model without data")
        << QStringList{QStringLiteral("eval"), QStringLiteral("--model"),
                       QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k"),
                       QStringLiteral("--metrics"), QStringLiteral("f1")}
        << QStringLiteral("--data");
    QTest::newRow("unknown base format")
        << QStringList{QStringLiteral("eval"),         QStringLiteral("compare"),
                       QStringLiteral("--runs"),       noModel,
                       QStringLiteral("--base-quant"), QStringLiteral("none,q4")}
        << QStringLiteral("--base-quant 'q4'");
    QTest::newRow("double quant without a 4-bit base")
        << QStringList{QStringLiteral("eval"),
                       QStringLiteral("compare"),
                       QStringLiteral("--runs"),
                       noModel,
                       QStringLiteral("--base-quant"),
                       QStringLiteral("none,int8"),
                       QStringLiteral("--base-quant-double")}
        << QStringLiteral("needs a 4-bit base");
    QTest::newRow("unknown subcommand")
        << QStringList{QStringLiteral("eval"), QStringLiteral("scorecard")}
        << QStringLiteral("scorecard");
}

void TestEvalCli::errors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, expect);
    Run r = tunebench(args);
    QCOMPARE(r.exitCode, 1);
    const QByteArray line = r.err.trimmed();
    QVERIFY2(line.startsWith("tunebench: ") && !line.contains('\n'), r.err.constData());
    QVERIFY2(line.contains(expect.toUtf8()), r.err.constData());
}

QTEST_GUILESS_MAIN(TestEvalCli)
#include "test_eval_cli.moc"
