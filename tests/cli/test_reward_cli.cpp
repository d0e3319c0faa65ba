// `tunebench reward score` end to end: a reward run trained by `tunebench train` scores pair rows
// (as RewardScorer does in process) and prompt/response rows, reports bad rows with file:line, and
// refuses a run that is not a reward model; `export` refuses formats that cannot hold one.
#include "data/pairs.h"
#include "train/reward_scorer.h"

#include <QTemporaryDir>
#include <QtTest>

#include "cli/cli_run.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

using nlohmann::json;

namespace {

using Run = tbtest::CliRun;

Run tunebench(const QStringList& args)
{
    return tbtest::runTunebench(args, 300000);
}

bool has(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

std::vector<json> jsonLines(const std::string& text)
{
    std::vector<json> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty())
            out.push_back(json::parse(line));
    return out;
}

}  // namespace

class TestRewardCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainScoreAndRefuse()
    {
        QTemporaryDir dir;
        const std::string base = dir.path().toStdString();
        const Run train = tunebench(
            {"train", "--config", TB_SOURCE_DIR "/datasets/examples/reward-tiny.json",
             QString::fromStdString("output_dir=" + base), "max_steps=3", "device=cpu", "--json"});
        QVERIFY2(train.exitCode == 0, train.err.c_str());
        const std::string run = base + "/reward-tiny";

        // Pairs: both answers scored, one JSON line each, then the accuracy; a bad row is named.
        const std::string file = base + "/rows.jsonl";
        const json pair = {
            {"prompt", {{{"role", "user"}, {"content", "Tell me about Ben."}}}},
            {"chosen", {{{"role", "assistant"}, {"content", "Ben ran. The end."}}}},
            {"rejected", {{{"role", "assistant"}, {"content", "Ben ran. Mom was glad."}}}}};
        std::ofstream(file) << pair.dump() << "\nnot json\n"
                            << json{{"prompt", "Tell me about Sue."},
                                    {"responses", {"Sue sang. The end.", "Sue sang."}}}
                                   .dump()
                            << "\n";
        const Run score =
            tunebench({"reward", "score", "--run", QString::fromStdString(run), "--data",
                       QString::fromStdString(file), "--device", "cpu", "--json"});
        QVERIFY2(score.exitCode == 0, score.err.c_str());
        QVERIFY2(has(score.err, "rows.jsonl:2: not a JSON object"), score.err.c_str());
        const std::vector<json> lines = jsonLines(score.out);
        QCOMPARE(lines.size(), size_t(3));
        QCOMPARE(lines[2]["pairs"].get<int>(), 1);
        const tb::RewardScorer scorer(run, "cpu");
        const tb::PairExample p = tb::parsePairRow(pair);
        const auto s = scorer.score(p.prompt, {p.chosen[0].content, p.rejected[0].content});
        QVERIFY(std::abs(lines[0]["chosen"].get<double>() - s[0]) < 1e-9);
        QVERIFY(std::abs(lines[0]["rejected"].get<double>() - s[1]) < 1e-9);
        QCOMPARE(lines[2]["accuracy"].get<double>(), s[0] > s[1] ? 1.0 : 0.0);
        const auto r =
            scorer.score({{"user", "Tell me about Sue."}}, {"Sue sang. The end.", "Sue sang."});
        QCOMPARE(lines[1]["scores"].size(), size_t(2));
        QVERIFY(std::abs(lines[1]["scores"][0].get<double>() - r[0]) < 1e-9);

        // Not a reward run; a reward run as PEFT.
        const Run notReward = tunebench({"reward", "score", "--run", QString::fromStdString(base),
                                         "--data", QString::fromStdString(file)});
        QCOMPARE(notReward.exitCode, 1);
        QVERIFY2(has(notReward.err, "not a reward-model run"), notReward.err.c_str());
        const Run peft = tunebench({"export", "--run", QString::fromStdString(run), "--format",
                                    "peft", "--out", QString::fromStdString(base + "/x")});
        QCOMPARE(peft.exitCode, 1);
        QVERIFY2(has(peft.err, "sequence-classification folder"), peft.err.c_str());
    }
};

QTEST_GUILESS_MAIN(TestRewardCli)
#include "test_reward_cli.moc"
