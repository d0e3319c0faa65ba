// The bundled preference example end to end (datasets/tiny-pref: chosen answers end with "The
// end.", rejected ones with another sentence): a short SFT on the chosen answers, its merged export
// as the base of DPO (datasets/examples/dpo-tiny.json), and the rule suite on both. DPO must rank
// at least 90% of the held-out pairs right and follow the rule more often than SFT alone; a reward
// model trained on the same pairs ranks at least 90% of them right.
#include "eval/suite.h"
#include "export/export.h"
#include "train/evaluate_run.h"
#include "train/job.h"
#include "train/run_store.h"
#include "train/train_config.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

const std::string kExamples = TB_SOURCE_DIR "/datasets/examples/";

tb::TrainSummary train(const std::string& example, std::vector<std::string> overrides,
                       QString* error)
{
    overrides.insert(overrides.begin(), "device=cpu");
    tb::TrainingJob job(tb::loadTrainConfig(kExamples + example, overrides), nullptr);
    job.runHere();
    if (job.state() != tb::JobState::Finished)
        *error = QString::fromStdString(job.error());
    return job.summary();
}

int64_t rulePasses(const std::string& runDir)
{
    const auto suite = tb::eval::readSuite(TB_SOURCE_DIR "/datasets/tiny-pref/rule-suite.jsonl");
    return tb::runSuiteOnRun(runDir, suite, 48, 16, /*skipBase=*/true, "cpu").passed;
}

}  // namespace

class TestPreferenceRule : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void dpoAfterSftFollowsTheRuleMoreOften()
    {
        QTemporaryDir dir;
        const std::string out = dir.path().toStdString();
        QString error;
        const tb::TrainSummary sft = train("sft-pref-tiny.json", {"output_dir=" + out}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const std::string merged = out + "/sft-merged";
        tb::exportRun(sft.runDir, {"merged", merged});
        const tb::TrainSummary dpo = train(
            "dpo-tiny.json", {"output_dir=" + out, "model=" + merged, "eval_every=0"}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        // Held-out pairs: every implicit reward is 0 before the first update (a tie, which TRL's
        // accuracy counts as wrong); after DPO at least 90% rank the chosen answer higher.
        QVERIFY(dpo.initialValAccuracy.has_value() && dpo.valAccuracy.has_value());
        QCOMPARE(*dpo.initialValAccuracy, 0.0);
        QVERIFY2(*dpo.valAccuracy >= 0.9, qPrintable(QString::number(*dpo.valAccuracy)));
        const int64_t sftPasses = rulePasses(sft.runDir);
        const int64_t dpoPasses = rulePasses(dpo.runDir);
        qInfo("rule followed in %lld of 80 answers after SFT, %lld after DPO; held-out pair "
              "accuracy %.3f",
              static_cast<long long>(sftPasses), static_cast<long long>(dpoPasses),
              *dpo.valAccuracy);
        QVERIFY2(dpoPasses > sftPasses,
                 qPrintable(QStringLiteral("SFT %1, DPO %2").arg(sftPasses).arg(dpoPasses)));
    }

    void rewardModelLearnsThePreference()
    {
        QTemporaryDir dir;
        QString error;
        const tb::TrainSummary r =
            train("reward-tiny.json", {"output_dir=" + dir.path().toStdString()}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(r.initialValAccuracy.has_value() && r.valAccuracy.has_value());
        qInfo("reward model: held-out accuracy %.3f -> %.3f", *r.initialValAccuracy,
              *r.valAccuracy);
        QVERIFY(*r.valAccuracy >= 0.9);
    }
};

QTEST_GUILESS_MAIN(TestPreferenceRule)
#include "test_preference_rule.moc"
