// Preference training on the bundled model: pairs tokenized and batched as the objectives read
// them, bad pairs refused with their reason, the reference of DPO (the policy with its method
// switched off) equal to stored reference log-probabilities and to a frozen copy, reward models
// scored the same by the trainer and the scorer, and bad configs named.
#include "data/store/pairs_store.h"
#include "data/store/snapshot.h"
#include "data/store/store.h"
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

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace {

using nlohmann::json;
using tbtest::contains;
using tbtest::errorOf;
using tbtest::numbered;
using tbtest::writeText;

const std::string kModel = TB_SOURCE_DIR "/datasets/models/stories260k";

json pairRow(const std::string& prompt, const std::string& chosen, const std::string& rejected)
{
    return {{"prompt", {{{"role", "user"}, {"content", prompt}}}},
            {"chosen", {{{"role", "assistant"}, {"content", chosen}}}},
            {"rejected", {{{"role", "assistant"}, {"content", rejected}}}}};
}

std::string writePairs(const QTemporaryDir& dir, const std::string& name, int n)
{
    std::string text;
    const char* names[] = {"Lily", "Tom", "Sue", "Ben", "Max", "Amy"};
    for (int i = 0; i < n; ++i) {
        const std::string who = names[i % 6];
        text += pairRow("Tell me about " + who + ".", who + " went to the park. The end.",
                        who + " went to the park and played with a ball.")
                    .dump() +
                "\n";
    }
    return writeText(dir, name, text);
}

json baseConfig(const QTemporaryDir& dir, const std::string& name, const std::string& pairs)
{
    return {{"name", name},
            {"model", kModel},
            {"output_dir", dir.path().toStdString()},
            {"objective", "dpo"},
            {"method", "lora"},
            {"lora", {{"rank", 4}, {"alpha", 8}}},
            {"data",
             {{"train_file", pairs},
              {"val_ratio", 0.25},
              {"chat_template", "alpaca"},
              {"max_length", 64}}},
            {"optim", {{"lr", 0.01}, {"schedule", "constant"}, {"warmup_steps", 0}}},
            {"batch_size", 4},
            {"max_steps", 3},
            {"device", "cpu"},
            {"seed", 1}};
}

struct Run {
    std::string dir;
    std::vector<json> steps, evals;
    tb::TrainSummary summary;
};

Run train(const json& config, QString* error)
{
    Run r;
    tb::TrainingJob job(tb::parseTrainConfig(config, "test.json"), nullptr);
    job.runHere();
    if (job.state() != tb::JobState::Finished) {
        *error = QString::fromStdString(job.error());
        return r;
    }
    r.summary = job.summary();
    r.dir = r.summary.runDir;
    for (const json& line : tb::RunStore(r.dir).readMetrics()) {
        if (line.value("type", "") == "step")
            r.steps.push_back(line);
        if (line.value("type", "") == "eval")
            r.evals.push_back(line);
    }
    return r;
}

}  // namespace

class TestPreference : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tokenizesAndRefusesPairs()
    {
        auto tokenizer = tb::loadTokenizer(kModel);
        const tb::ChatTemplate chat = tb::ChatTemplate::fromFamily(tb::ChatTemplateFamily::Alpaca);
        std::vector<tb::PairExample> pairs;
        for (const json& row : {pairRow("Who is Lily?", "Lily is a girl.", "Lily is a dog."),
                                pairRow(std::string(400, 'a'), "Yes.", "No."),
                                pairRow("Hi", "Same words here.", "Same words here!")}) {
            pairs.push_back(tb::parsePairRow(row));
            pairs.back().source = numbered("pairs.jsonl:", long(pairs.size()));
        }
        // The same tokens on both sides (the parser refuses equal strings, so make them equal
        // after parsing).
        pairs[2].rejected = pairs[2].chosen;
        const tb::PairSet set = tb::tokenizePairs(pairs, *tokenizer, chat, 48);
        QCOMPARE(set.pairs.size(), size_t(1));
        QCOMPARE(set.rejected.size(), size_t(2));
        QCOMPARE(set.rejected[0].first, std::string("pairs.jsonl:2"));
        QVERIFY2(contains(set.rejected[0].second, "max_length is 48"),
                 set.rejected[0].second.c_str());
        QCOMPARE(set.rejected[1].first, std::string("pairs.jsonl:3"));
        QVERIFY(contains(set.rejected[1].second, "same tokens"));

        // The prompt is what prompt + answer share; each answer is the rest, and the whole row is
        // the conversation rendered with the answer.
        const tb::PairSequence& p = set.pairs[0];
        std::vector<int32_t> row = p.prompt;
        row.insert(row.end(), p.chosen.begin(), p.chosen.end());
        QVERIFY(row == tb::answerRowIds(pairs[0].prompt, pairs[0].chosen, *tokenizer, chat));
        QCOMPARE(p.chosen.back(), *tokenizer->eosId());  // Alpaca ends answers with EOS

        // Batch rows: chosen first, then rejected; labels predict the answer tokens only.
        const tb::PairBatch b = tb::makePairBatch(set, {0}, 0);
        QCOMPARE(b.pairs, int64_t(1));
        QCOMPARE(b.lengths.size(), size_t(2));
        const auto width = static_cast<size_t>(b.width);
        int64_t labelled = 0;
        for (size_t t = 0; t < width; ++t)
            if (b.labels[t] != -100) {
                ++labelled;
                QCOMPARE(b.labels[t], b.ids[t + 1]);
                QVERIFY(t + 1 >= p.prompt.size());
            }
        QCOMPARE(labelled, int64_t(p.chosen.size()));
        QCOMPARE(b.ids[width + p.prompt.size()], int64_t(p.rejected[0]));
    }

    // For LoRA and adapters the method adds nothing at initialisation, so with the method switched
    // off the reference equals the policy: the first DPO loss is log 2 and every reward 0. Stored
    // reference log-probabilities give the same run.
    void referenceSwitchedOffEqualsStored()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 16);
        for (const char* method : {"lora", "adapter", "prompt"}) {
            QString error;
            json config = baseConfig(dir, std::string(method) + "-off", pairs);
            config["method"] = method;
            const Run off = train(config, &error);
            QVERIFY2(!off.dir.empty(), qPrintable(error));
            config["name"] = std::string(method) + "-stored";
            config["preference"] = {{"reference", "precomputed"}};
            const Run stored = train(config, &error);
            QVERIFY2(!stored.dir.empty(), qPrintable(error));
            QVERIFY(tb::fileExists(stored.dir + "/reference_logps.json"));
            QCOMPARE(off.steps.size(), size_t(3));
            QCOMPARE(stored.steps.size(), size_t(3));
            for (size_t s = 0; s < 3; ++s)
                QVERIFY2(std::abs(off.steps[s]["loss"].get<double>() -
                                  stored.steps[s]["loss"].get<double>()) < 1e-6,
                         method);
            if (std::string(method) != "prompt") {  // a soft prompt is not a no-op at init
                QVERIFY(std::abs(off.steps[0]["loss"].get<double>() - std::log(2.0)) < 1e-6);
                QVERIFY(std::abs(off.steps[0]["rewards/margins"].get<double>()) < 1e-6);
            }
            QVERIFY(off.steps[2]["rewards/margins"].get<double>() != 0.0);
        }
    }

    // Full fine-tuning: a frozen copy of the base and stored sums are the same reference.
    void frozenCopyEqualsStored()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 12);
        QString error;
        json config = baseConfig(dir, "copy", pairs);
        config["method"] = "full";
        config["optim"]["lr"] = 1e-3;
        const Run copy = train(config, &error);
        QVERIFY2(!copy.dir.empty(), qPrintable(error));
        config["name"] = "stored";
        config["preference"] = {{"reference", "precomputed"}};
        const Run stored = train(config, &error);
        QVERIFY2(!stored.dir.empty(), qPrintable(error));
        for (size_t s = 0; s < 3; ++s)
            QVERIFY(std::abs(copy.steps[s]["loss"].get<double>() -
                             stored.steps[s]["loss"].get<double>()) < 1e-6);
        QVERIFY(std::abs(copy.steps[0]["loss"].get<double>() - std::log(2.0)) < 1e-6);
        // The first step's memory report: the frozen copy measured is the copy estimated, and
        // the weights, gradients and optimizer states as exactly as for SFT.
        json memory;
        for (const json& line : tb::RunStore(copy.dir).readMetrics())
            if (line.value("type", "") == "memory")
                memory = line;
        QVERIFY2(memory.contains("reference"), memory.dump().c_str());
        for (const char* key : {"reference", "weights", "gradients", "optimizer_states"})
            QVERIFY2(memory[key]["estimated"] == memory[key]["measured"],
                     (std::string(key) + ": " + memory[key].dump()).c_str());
    }

    // The validation pairs' accuracy is logged before the first update and at the end, and the
    // summary carries both.
    void evaluatesHeldOutPairs()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 16);
        QString error;
        json config = baseConfig(dir, "simpo", pairs);
        config["objective"] = "simpo";
        const Run r = train(config, &error);
        QVERIFY2(!r.dir.empty(), qPrintable(error));
        QCOMPARE(r.evals.size(), size_t(2));
        QCOMPARE(r.evals[0]["pairs"].get<int64_t>(), int64_t(4));
        QVERIFY(r.summary.valAccuracy.has_value());
        QVERIFY(r.summary.initialValAccuracy.has_value());
        QCOMPARE(*r.summary.valAccuracy, r.evals[1]["rewards/accuracies"].get<double>());
    }

    // 12 training pairs in micro-batches of 2 with grad_accum 4: an epoch is a step of 4 and one
    // of 2, so `epochs: 2` reads every pair exactly twice in 4 steps (2.67 epochs before).
    void epochsEndSteps()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 16);
        QString error;
        json config = baseConfig(dir, "epochs", pairs);
        config["batch_size"] = 2;
        config["grad_accum"] = 4;
        config["max_steps"] = 0;
        config["epochs"] = 2;
        const Run r = train(config, &error);
        QVERIFY2(!r.dir.empty(), qPrintable(error));
        QCOMPARE(r.steps.size(), size_t(4));
        QCOMPARE(r.steps[1]["epoch"].get<double>(), 1.0);
        QCOMPARE(r.steps[3]["epoch"].get<double>(), 2.0);
    }

    // A reward run: the scorer loads its head and gives the scores the trainer's evaluation saw
    // (its accuracy on the validation pairs).
    void rewardScorerMatchesTraining()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 16);
        QString error;
        json config = baseConfig(dir, "reward", pairs);
        config["objective"] = "reward";
        config["data"]["val_ratio"] = 0.0;
        config["data"]["val_file"] = pairs;
        const Run r = train(config, &error);
        QVERIFY2(!r.dir.empty(), qPrintable(error));
        QVERIFY(tb::isRewardRun(r.dir));
        QVERIFY(!tb::isRewardRun(dir.path().toStdString()));
        const tb::RewardScorer scorer(r.dir, "cpu");
        int correct = 0;
        double margin = 0;
        std::string text = tb::readFile(pairs);
        size_t start = 0;
        int n = 0;
        while (start < text.size()) {
            const size_t end = text.find('\n', start);
            const tb::PairExample p =
                tb::parsePairRow(json::parse(text.substr(start, end - start)));
            const auto s = scorer.score(p.prompt, {p.chosen[0].content, p.rejected[0].content});
            correct += s[0] > s[1] ? 1 : 0;
            margin += s[0] - s[1];
            ++n;
            start = end + 1;
        }
        const json& last = r.evals.back();
        QCOMPARE(double(correct) / n, last["rewards/accuracies"].get<double>());
        QVERIFY(std::abs(margin / n - last["rewards/margins"].get<double>()) < 1e-5);
        QVERIFY(contains(errorOf([&] { tb::RewardScorer bad(dir.path().toStdString()); }),
                         "not a reward-model run"));
    }

    // Pairs frozen in a store snapshot train like a pair file, and run.json records the snapshot.
    void trainsFromStoreSnapshot()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 12);
        const std::string storePath = dir.filePath(QStringLiteral("pairs.tbstore")).toStdString();
        std::string snapshot;
        {
            auto store = tb::DataStore::open(storePath);
            QCOMPARE(tb::importPairs(*store, pairs, tb::PairLayout::Auto, "ann").imported,
                     int64_t(12));
            tb::SnapshotOptions options;
            options.acceptedOnly = false;
            snapshot = tb::createSnapshot(*store, options).id;
        }
        QString error;
        json config = baseConfig(dir, "from-store", pairs);
        config["data"].erase("train_file");
        config["data"]["store"] = storePath;
        config["data"]["snapshot"] = snapshot;
        config["max_steps"] = 2;
        const Run r = train(config, &error);
        QVERIFY2(!r.dir.empty(), qPrintable(error));
        const json info = tb::RunStore(r.dir).readRunInfo();
        QCOMPARE(info["data"]["snapshots"]["train"]["id"].get<std::string>(), snapshot);
        QCOMPARE(info["data"]["train_pairs"].get<int64_t>() +
                     info["data"]["val_pairs"].get<int64_t>(),
                 int64_t(12));
        QCOMPARE(r.steps.size(), size_t(2));
    }

    // A preference run resumed from its checkpoint continues exactly: steps 3 and 4 of a run
    // stopped after 2 and resumed equal those of a straight run (reference precomputed: the stored
    // file is read back, not recomputed).
    void resumesExactly()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 24);
        json config = baseConfig(dir, "straight", pairs);
        config["max_steps"] = 4;
        config["preference"] = {{"reference", "precomputed"}};
        QString error;
        const Run straight = train(config, &error);
        QVERIFY2(!straight.dir.empty(), qPrintable(error));
        config["name"] = "resumed";
        config["max_steps"] = 2;
        const Run first = train(config, &error);
        QVERIFY2(!first.dir.empty(), qPrintable(error));
        config["max_steps"] = 4;
        tb::TrainingJob job(tb::parseTrainConfig(config, "test.json"), nullptr, first.dir);
        job.runHere();
        QVERIFY2(job.state() == tb::JobState::Finished, job.error().c_str());
        std::vector<json> steps;
        for (const json& line : tb::RunStore(first.dir).readMetrics())
            if (line.value("type", "") == "step")
                steps.push_back(line);
        QCOMPARE(steps.size(), size_t(4));
        for (size_t s = 0; s < 4; ++s)
            QVERIFY2(std::abs(steps[s]["loss"].get<double>() -
                              straight.steps[s]["loss"].get<double>()) < 1e-6,
                     qPrintable(QString::number(s + 1)));
    }

    void badConfigsAndPairsAreNamed()
    {
        QTemporaryDir dir;
        const std::string pairs = writePairs(dir, "pairs.jsonl", 4);
        json config = baseConfig(dir, "bad", pairs);
        config["data"]["packing"] = true;
        QVERIFY(contains(errorOf([&] { tb::parseTrainConfig(config, "run.json"); }),
                         "'data.packing' cannot be used with objective 'dpo'"));
        config = baseConfig(dir, "bad", pairs);
        config["objective"] = "kto";
        QVERIFY(contains(errorOf([&] { tb::parseTrainConfig(config, "run.json"); }),
                         "sft | dpo | ipo | simpo | orpo | reward"));
        config = baseConfig(dir, "bad", pairs);
        config["preference"] = {{"label_smoothing", 0.5}};
        QVERIFY(contains(errorOf([&] { tb::parseTrainConfig(config, "run.json"); }),
                         "label_smoothing"));
        // Every pair's prompt is longer than max_length: nothing is trained on silently.
        config = baseConfig(dir, "long", pairs);
        config["data"]["max_length"] = 8;
        QString error;
        QVERIFY(train(config, &error).dir.empty());
        QVERIFY2(contains(error.toStdString(), "no preference pair left to train on"),
                 qPrintable(error));
    }
};

QTEST_GUILESS_MAIN(TestPreference)
#include "test_preference.moc"
