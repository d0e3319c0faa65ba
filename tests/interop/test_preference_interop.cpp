// Interop: the preference objectives against TRL on the same model folder, pairs and settings.
// DPO and IPO through TRL's DPOTrainer (its tokenization, two SGD steps with a frozen reference
// copy), SimPO and ORPO through the losses of TRL's CPOTrainer and ORPOTrainer (one SGD step):
// the logged loss and statistics, the gradient norm, and the weights after the steps (which are
// the starting weights minus lr x the gradients) agree within 1e-5.
#include "export/export.h"
#include "model/safetensors.h"
#include "tokenizer/tokenizer.h"
#include "train/job.h"
#include "train/pair_batching.h"
#include "train/reward_scorer.h"
#include "train/run_store.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"

#include <QTemporaryDir>
#include <QtTest>

#include "interop/oracle_util.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

namespace {

using nlohmann::json;

// The bundled model with a chat template of its own (plain "Q:"/"A:" lines), as both sides read it.
std::string writeModel(const QTemporaryDir& dir)
{
    const std::string src = TB_SOURCE_DIR "/datasets/models/stories260k";
    const std::string out = dir.filePath(QStringLiteral("model")).toStdString();
    QDir().mkpath(QString::fromStdString(out));
    for (const char* f :
         {"config.json", "generation_config.json", "model.safetensors", "tokenizer.model"})
        QFile::copy(QString::fromStdString(src + "/" + f), QString::fromStdString(out + "/" + f));
    json config = json::parse(tb::readFile(src + "/tokenizer_config.json"));
    config["chat_template"] =
        "{% for m in messages %}{% if m['role'] == 'user' %}Q: {{ m['content'] }}\n{% else %}A: "
        "{{ m['content'] }}\n{% endif %}{% endfor %}{% if add_generation_prompt %}A:{% endif %}";
    tb::writeFileAtomic(out + "/tokenizer_config.json", config.dump(1));
    return out;
}

json pairRows()
{
    const char* rows[][3] = {
        {"Where is the cat?", "The cat is on the mat. The end.", "The cat is on the mat."},
        {"What did Tom see?", "Tom saw a big dog. The end.", "Tom saw a dog and ran home fast."},
        {"Who is happy?", "Lily is happy. The end.", "Lily is sad."},
        {"What is red?", "The ball is red. The end.", "The sky is blue today."},
        {"Where did they go?", "They went to the park. The end.", "They went to the park to play."},
    };
    json pairs = json::array();
    for (const auto& r : rows)
        pairs.push_back({{"prompt", {{{"role", "user"}, {"content", r[0]}}}},
                         {"chosen", {{{"role", "assistant"}, {"content", r[1]}}}},
                         {"rejected", {{{"role", "assistant"}, {"content", r[2]}}}}});
    return pairs;
}

// Our run: full fine-tuning, plain SGD without clipping, every pair in each step's one batch.
std::string runOurs(const std::string& model, const std::string& pairsFile, const std::string& out,
                    const std::string& objective, int steps, double lr, double sftWeight,
                    QString* error)
{
    const json config = {
        {"name", objective},
        {"model", model},
        {"output_dir", out},
        {"objective", objective},
        {"method", "full"},
        {"preference",
         {{"beta", 0.1}, {"gamma", 0.5}, {"label_smoothing", 0.0}, {"sft_weight", sftWeight}}},
        {"data",
         {{"train_file", pairsFile},
          {"val_ratio", 0.0},
          {"chat_template", "model"},
          {"max_length", 64}}},
        {"optim",
         {{"optimizer", "sgd"},
          {"lr", lr},
          {"schedule", "constant"},
          {"warmup_steps", 0},
          {"clip_norm", 0.0}}},
        {"batch_size", 5},
        {"max_steps", steps},
        {"device", "cpu"},
        {"spike_factor", 0},
        {"seed", 0}};
    tb::TrainingJob job(tb::parseTrainConfig(config, out + "/config.json"), nullptr);
    job.runHere();
    if (job.state() != tb::JobState::Finished) {
        *error = QString::fromStdString(job.error());
        return {};
    }
    return job.summary().runDir;
}

std::vector<json> stepLines(const std::string& runDir)
{
    std::vector<json> out;
    for (const json& line : tb::RunStore(runDir).readMetrics())
        if (line.value("type", "") == "step")
            out.push_back(line);
    return out;
}

std::vector<float> floatsOf(const std::string& bytes)
{
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

// The largest |ours - TRL's| over every trained tensor, each present on both sides.
double weightDifference(const std::string& runDir, const std::string& oracleFile)
{
    auto checkpoint = tb::RunStore(runDir).loadLatestCheckpoint();
    if (!checkpoint)
        return INFINITY;
    const auto theirs = tb::SafetensorsFile::open(oracleFile);
    double worst = 0;
    int compared = 0;
    for (const auto& [name, blobs] : checkpoint->data.tensorFiles) {
        if (name != "trainable")
            continue;
        for (const tb::TensorBlob& blob : blobs) {
            const tb::TensorInfo* info = theirs->find(blob.name);
            if (!info)
                return INFINITY;
            const std::vector<float> a = floatsOf(blob.bytes);
            std::vector<float> b(a.size());
            std::memcpy(b.data(), theirs->data(*info), b.size() * sizeof(float));
            for (size_t i = 0; i < a.size(); ++i)
                worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
            ++compared;
        }
    }
    return compared > 0 ? worst : INFINITY;
}

json runOracle(const QString& mode, const json& spec, const QTemporaryDir& dir, QString* error)
{
    const std::string specPath = dir.filePath(mode + QStringLiteral(".json")).toStdString();
    tb::writeFileAtomic(specPath, spec.dump());
    const QByteArray out =
        tbtest::runOracleScript(QStringLiteral("preference_oracle.py"),
                                {mode, QString::fromStdString(specPath), dir.path()}, error);
    if (out.isEmpty())
        return {};
    const QList<QByteArray> lines = out.trimmed().split('\n');
    return json::parse(lines.last().toStdString());
}

// |a - b| <= 1e-5, relative to |b| when it is above 1.
bool close(double a, double b)
{
    return std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b));
}

const char* const kStatKeys[] = {"rewards/chosen",     "rewards/rejected", "rewards/margins",
                                 "rewards/accuracies", "logps/chosen",     "logps/rejected"};

}  // namespace

class TestPreferenceInterop : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string m_model, m_pairs;

    // lr: SGD's step; IPO's gradients are large (its target 1 / (2 beta) is 5), so it takes a
    // smaller one to keep the second step where fp32 rounding stays below the tolerance.
    void compareRun(const std::string& objective, const QString& mode, const std::string& loss,
                    int steps, double lr, double sftWeight = 0)
    {
        QString error;
        const std::string name = objective + (sftWeight > 0 ? "-sft" : "");
        const std::string out = m_dir.filePath(QString::fromStdString(name)).toStdString();
        QDir().mkpath(QString::fromStdString(out));
        const std::string runDir =
            runOurs(m_model, m_pairs, out, objective, steps, lr, sftWeight, &error);
        QVERIFY2(!runDir.empty(), qPrintable(error));
        QTemporaryDir oracleDir;
        const json spec = {
            {"model", m_model},       {"pairs", pairRows()},    {"beta", 0.1}, {"gamma", 0.5},
            {"label_smoothing", 0.0}, {"loss", loss},           {"lr", lr},    {"steps", steps},
            {"max_length", 64},       {"sft_weight", sftWeight}};
        const json trl = runOracle(mode, spec, oracleDir, &error);
        QVERIFY2(!trl.is_null(), qPrintable(error));
        const std::vector<json> ours = stepLines(runDir);
        QCOMPARE(ours.size(), size_t(steps));
        const std::vector<json> theirs =
            trl.contains("logs") ? trl["logs"].get<std::vector<json>>() : std::vector<json>{trl};
        QCOMPARE(theirs.size(), size_t(steps));
        for (int s = 0; s < steps; ++s) {
            const json& a = ours[size_t(s)];
            const json& b = theirs[size_t(s)];
            std::vector<std::string> keys(std::begin(kStatKeys), std::end(kStatKeys));
            keys.insert(keys.end(), {"loss", "grad_norm"});
            for (const char* extra : {"nll_loss", "log_odds_ratio"})
                if (b.contains(extra))
                    keys.emplace_back(extra);
            for (const std::string& key : keys) {
                QVERIFY2(a.contains(key), key.c_str());
                QVERIFY2(close(a[key].get<double>(), b[key].get<double>()),
                         qPrintable(QStringLiteral("%1 step %2 %3: ours %4, TRL %5")
                                        .arg(QString::fromStdString(objective))
                                        .arg(s + 1)
                                        .arg(QString::fromStdString(key))
                                        .arg(a[key].get<double>(), 0, 'g', 9)
                                        .arg(b[key].get<double>(), 0, 'g', 9)));
            }
        }
        // Weights after the steps: w0 - lr x (sum of the gradients), so they agree within
        // lr x 1e-5 when the gradients do, plus two fp32 steps at 1.0 (the norms' weights), the
        // rounding of the weights themselves.
        const double difference = weightDifference(
            runDir, oracleDir.filePath(QStringLiteral("weights.safetensors")).toStdString());
        QVERIFY2(difference <= lr * 1e-5 + 2.4e-7,
                 qPrintable(QStringLiteral("%1: weights differ from TRL's by %2")
                                .arg(QString::fromStdString(objective))
                                .arg(difference)));
        if (trl.contains("tokens")) {  // TRL's tokenization of each pair equals ours
            auto tokenizer = tb::loadTokenizer(m_model);
            std::vector<tb::PairExample> pairs;
            for (const json& row : pairRows())
                pairs.push_back(tb::parsePairRow(row));
            const tb::ChatTemplate chat = *tb::ChatTemplate::fromModel(m_model);
            const tb::PairSet set = tb::tokenizePairs(pairs, *tokenizer, chat, 64);
            QCOMPARE(set.pairs.size(), pairs.size());
            for (size_t i = 0; i < pairs.size(); ++i) {
                const json& t = trl["tokens"][i];
                QVERIFY(t["prompt_ids"].get<std::vector<int32_t>>() == set.pairs[i].prompt);
                QVERIFY(t["chosen_ids"].get<std::vector<int32_t>>() == set.pairs[i].chosen);
                QVERIFY(t["rejected_ids"].get<std::vector<int32_t>>() == set.pairs[i].rejected);
            }
        }
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_model = writeModel(m_dir);
        std::string jsonl;
        for (const json& row : pairRows())
            jsonl += row.dump() + "\n";
        m_pairs = m_dir.filePath(QStringLiteral("pairs.jsonl")).toStdString();
        tb::writeFileAtomic(m_pairs, jsonl);
    }

    void dpoMatchesTrl() { compareRun("dpo", QStringLiteral("dpo"), "sigmoid", 2, 0.5); }
    // DPO with TRL's SFT term beside it (loss_type ["sigmoid", "sft"], weight 0.5).
    void dpoWithSftTermMatchesTrl()
    {
        compareRun("dpo", QStringLiteral("dpo"), "sigmoid", 2, 0.5, 0.5);
    }
    void ipoMatchesTrl() { compareRun("ipo", QStringLiteral("dpo"), "ipo", 2, 0.05); }
    void simpoMatchesTrl() { compareRun("simpo", QStringLiteral("step"), "simpo", 1, 0.5); }
    // A LoRA reward model, trained here, exported merged: AutoModelForSequenceClassification loads
    // the folder and scores every pair as RewardScorer does (1e-4), and RewardTrainer's loss on
    // them equals our final evaluation's (1e-5).
    void rewardMatchesTrl()
    {
        QString error;
        const std::string out = m_dir.filePath(QStringLiteral("reward")).toStdString();
        QDir().mkpath(QString::fromStdString(out));
        // Pairs with a margin each (the Bradley-Terry loss subtracts it), as RewardTrainer reads
        // its "margin" column.
        json rows = pairRows();
        std::string jsonl;
        for (size_t i = 0; i < rows.size(); ++i) {
            rows[i]["margin"] = 0.25 * double(i);
            jsonl += rows[i].dump() + "\n";
        }
        const std::string pairsFile = out + "/margins.jsonl";
        tb::writeFileAtomic(pairsFile, jsonl);
        const json config = {
            {"name", "reward"},
            {"model", m_model},
            {"output_dir", out},
            {"objective", "reward"},
            {"method", "lora"},
            {"lora", {{"rank", 4}, {"alpha", 8}}},
            {"data",
             {{"train_file", pairsFile},
              {"val_file", pairsFile},
              {"chat_template", "model"},
              {"max_length", 64}}},
            {"optim", {{"lr", 0.01}, {"schedule", "constant"}, {"warmup_steps", 0}}},
            {"batch_size", 5},
            {"max_steps", 3},
            {"device", "cpu"},
            {"seed", 2}};
        tb::TrainingJob job(tb::parseTrainConfig(config, out + "/config.json"), nullptr);
        job.runHere();
        QVERIFY2(job.state() == tb::JobState::Finished, job.error().c_str());
        const std::string runDir = job.summary().runDir;
        const std::string exported = out + "/hf";
        tb::exportRun(runDir, {"merged", exported});
        QTemporaryDir oracleDir;
        const json trl = runOracle(QStringLiteral("reward"),
                                   {{"model", exported}, {"pairs", rows}, {"max_length", 64}},
                                   oracleDir, &error);
        QVERIFY2(!trl.is_null(), qPrintable(error));
        const tb::RewardScorer scorer(runDir, "cpu");
        double worst = 0;
        for (size_t i = 0; i < rows.size(); ++i) {
            const tb::PairExample p = tb::parsePairRow(rows[i]);
            const auto s = scorer.score(p.prompt, {p.chosen[0].content, p.rejected[0].content});
            worst = std::max({worst, std::abs(s[0] - trl["chosen"][i].get<double>()),
                              std::abs(s[1] - trl["rejected"][i].get<double>())});
        }
        qInfo("reward scores: largest difference from transformers %.3g", worst);
        double byHand = 0;  // the Bradley-Terry loss with margins from transformers' scores
        for (size_t i = 0; i < rows.size(); ++i) {
            const double z = trl["chosen"][i].get<double>() - trl["rejected"][i].get<double>() -
                             rows[i]["margin"].get<double>();
            byHand += std::log1p(std::exp(-z)) / double(rows.size());
        }
        qInfo("loss by hand from transformers' scores %.9g", byHand);
        QVERIFY2(worst <= 1e-4, qPrintable(QString::number(worst)));
        json lastEval;
        for (const json& line : tb::RunStore(runDir).readMetrics())
            if (line.value("type", "") == "eval")
                lastEval = line;
        QVERIFY2(close(lastEval["val_loss"].get<double>(), trl["loss"].get<double>()),
                 qPrintable(QStringLiteral("ours %1, RewardTrainer %2")
                                .arg(lastEval["val_loss"].get<double>(), 0, 'g', 9)
                                .arg(trl["loss"].get<double>(), 0, 'g', 9)));
    }

    void orpoMatchesTrl() { compareRun("orpo", QStringLiteral("step"), "orpo", 1, 0.5); }
};

QTEST_GUILESS_MAIN(TestPreferenceInterop)
#include "test_preference_interop.moc"
