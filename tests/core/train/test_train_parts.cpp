// The trainer's torch-free components on their own: the divergence guard's rules, the checkpoint
// position's JSON (including state.json as runs before this release wrote it), the metrics records'
// one JSON form and console line, readRunMetrics reading without writing, and JobControl's pause on
// a condition variable.
#include "train/control.h"
#include "train/divergence_guard.h"
#include "train/metrics.h"
#include "train/position.h"
#include "train/run_store.h"
#include "util/file_util.h"

#include "test_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

using nlohmann::json;

class TestTrainParts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void guardNonFinite();
    void guardSpikeOverWindow();
    void guardWindowAndRestore();
    void positionRoundTrip();
    void positionFromOlderRuns();
    void stepMetricsOneForm();
    void evalMetricsOneForm();
    void summaryJsonContract();
    void readRunMetricsWritesNothing();
    void controlPauseBlocksUntilResume();
    void controlStopWakesPaused();
};

void TestTrainParts::guardNonFinite()
{
    const tb::DivergenceGuard guard(4.0, 3);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    auto d = guard.check(7, nan, 1.0);
    QVERIFY(d);
    QCOMPARE(d->step, int64_t(7));
    QCOMPARE(d->what, std::string("loss is not finite"));
    d = guard.check(8, 2.0, inf);
    QVERIFY(d);
    QCOMPARE(d->what, std::string("gradient norm is not finite"));
    QVERIFY(std::isinf(d->value));
    QVERIFY(!guard.check(9, 2.0, 1.0));  // finite, and the window is still empty: no spike check
    const tb::Diagnosis e = tb::DivergenceGuard::fp16Exhausted(3, 5.0);
    QCOMPARE(e.step, int64_t(3));
    QVERIFY(tbtest::contains(e.advice, "bf16"));
}

void TestTrainParts::guardSpikeOverWindow()
{
    tb::DivergenceGuard guard(4.0, 3);
    for (double l : {1.0, 2.0, 3.0})
        guard.record(l);                 // mean 2
    QVERIFY(!guard.check(4, 8.0, 1.0));  // exactly factor x mean: allowed
    const auto d = guard.check(4, 8.0 + 1e-9, 1.0);
    QVERIFY(d);
    QVERIFY2(tbtest::contains(d->what, "loss spiked to 8.0"), d->what.c_str());
    QVERIFY2(tbtest::contains(d->what, "the recent mean 2.0"), d->what.c_str());
    QCOMPARE(d->value, 8.0 + 1e-9);
    const tb::DivergenceGuard off(0.0, 3);
    QVERIFY(!off.check(4, 1e6, 1.0));  // spike_factor 0: only non-finite values stop a step
}

void TestTrainParts::guardWindowAndRestore()
{
    tb::DivergenceGuard guard(4.0, 2);
    guard.record(1.0);
    QVERIFY(!guard.check(2, 100.0, 1.0));  // window not full yet
    guard.record(3.0);
    guard.record(5.0);  // the window keeps the last two: {3, 5}, mean 4
    QCOMPARE(guard.recentLosses().size(), size_t(2));
    QCOMPARE(guard.recentLosses().front(), 3.0);
    QVERIFY(!guard.check(4, 16.0, 1.0));
    QVERIFY(guard.check(4, 16.5, 1.0));
    tb::DivergenceGuard restored(4.0, 2);
    restored.restore({3.0, 5.0});
    QVERIFY(!restored.check(4, 16.0, 1.0));
    QVERIFY(restored.check(4, 16.5, 1.0));
}

void TestTrainParts::positionRoundTrip()
{
    tb::TrainerPosition p;
    p.step = 40;
    p.optimizerSteps = 38;
    p.epoch = 2;
    p.cursor = 17;
    p.tokensSeen = 123456;
    p.recentLosses = {2.5, 2.25, 2.125};
    p.initialLoss = 5.5;
    p.initialValLoss = 5.25;
    p.lastLoss = 2.125;
    p.lossScale = {{"scale", 1024.0}, {"good_steps", 7}, {"skipped", 2}};
    const json j = tb::toJson(p);
    QCOMPARE(j.size(), size_t(11));
    QVERIFY(j.at("general_base").is_null());  // unset optionals are written as null
    QCOMPARE(j.at("tokens_seen").get<int64_t>(), int64_t(123456));
    QVERIFY(tb::trainerPositionFromJson(j, "ckpt") == p);
    QVERIFY(tb::trainerPositionFromJson(json::parse(j.dump()), "ckpt") == p);
}

void TestTrainParts::positionFromOlderRuns()
{
    // state.json as a run written before "last_loss" and "loss_scale" existed.
    const json old = json::parse(R"({"step": 10, "optimizer_steps": 10, "epoch": 0, "cursor": 80,
        "tokens_seen": 2048, "recent_losses": [3.0, 2.0], "initial_loss": 4.0,
        "general_base": null, "initial_val_loss": null})");
    const tb::TrainerPosition p = tb::trainerPositionFromJson(old, "runs/a/checkpoints/step-10");
    QCOMPARE(p.step, int64_t(10));
    QCOMPARE(p.lastLoss, 0.0);
    QVERIFY(p.lossScale.is_null());
    QCOMPARE(*p.initialLoss, 4.0);
    QVERIFY(!p.generalBase && !p.initialValLoss);
    json broken = old;
    broken.erase("cursor");
    const std::string message =
        tbtest::errorOf([&] { tb::trainerPositionFromJson(broken, "runs/a/checkpoints/step-10"); });
    QVERIFY2(tbtest::contains(message, "runs/a/checkpoints/step-10: state.json"), message.c_str());
    QVERIFY2(tbtest::contains(message, "cursor"), message.c_str());
}

void TestTrainParts::stepMetricsOneForm()
{
    tb::StepMetrics m;
    m.step = 12;
    m.totalSteps = 100;
    m.epoch = 0.375;
    m.tokensSeen = 4096;
    m.loss = 2.5;
    m.lr = 0.00125;
    m.gradNorm = 0.75;
    m.tokensPerSecond = 1500;
    m.memoryCurrent = 3 << 20;
    m.memoryPeak = 5 << 20;
    m.memoryAfterLoad = 1;
    m.memoryAfterForward = 2;
    m.memoryAfterBackward = 3;
    m.memoryAfterOptimizer = 4;
    m.memoryResident = 99;
    const json j = tb::toJson(m);
    // The metrics.jsonl keys as runs have always written them.
    QCOMPARE(
        j.dump(),
        std::string(
            R"({"epoch":0.375,"grad_norm":0.75,"loss":2.5,"lr":0.00125,"memory_bytes":3145728,)"
            R"("memory_peak_bytes":5242880,"memory_phases":{"backward":3,"forward":2,"load":1,)"
            R"("optimizer_step":4},"memory_reserved_bytes":0,"resident_bytes":99,"step":12,)"
            R"("tokens_per_s":1500.0,"tokens_seen":4096,"type":"step"})"));
    const tb::StepMetrics back = tb::stepMetricsFromJson(j);
    QCOMPARE(back.step, m.step);
    QCOMPARE(back.tokensSeen, m.tokensSeen);
    QCOMPARE(back.loss, m.loss);
    QCOMPARE(back.lr, m.lr);
    QCOMPARE(back.memoryPeak, m.memoryPeak);
    QCOMPARE(back.memoryAfterOptimizer, m.memoryAfterOptimizer);
    QCOMPARE(back.memoryResident, m.memoryResident);
    // A step line as runs wrote it before the key took the struct's name.
    json legacy = j;
    legacy.erase("tokens_seen");
    legacy["tokens"] = 777;
    QCOMPARE(tb::stepMetricsFromJson(legacy).tokensSeen, int64_t(777));
    QCOMPARE(tb::formatStepLine(m),
             std::string("step 12/100  epoch 0.38  loss 2.5000  lr 0.00125  grad norm "
                         "0.750  1500 tok/s  tensors 3.0 MiB (peak 5.0)"));
    QVERIFY(tbtest::contains(tbtest::errorOf([] {
                                 tb::stepMetricsFromJson(json{{"type", "step"}});
                             }),
                             "'step' and 'loss'"));
}

void TestTrainParts::evalMetricsOneForm()
{
    tb::EvalMetrics e;
    e.step = 25;
    e.valLoss = 1.5;
    e.valPerplexity = std::exp(1.5);
    e.memoryPeak = 10;
    json j = tb::toJson(e);
    QVERIFY(!j.contains("general_loss"));  // only with a general holdout
    QCOMPARE(tb::evalMetricsFromJson(j).valLoss.value_or(0), 1.5);
    QCOMPARE(tb::formatEvalLine(e), std::string("eval step 25: val loss 1.5000 (perplexity 4.48)"));
    e.generalLoss = 3.25;
    e.generalLossBase = 3.0;
    j = tb::toJson(e);
    QCOMPARE(j.at("general_loss").get<double>(), 3.25);
    QCOMPARE(*tb::evalMetricsFromJson(j).generalLossBase, 3.0);
    QCOMPARE(tb::formatEvalLine(e),
             std::string(
                 "eval step 25: val loss 1.5000 (perplexity 4.48)  general holdout 3.25 (base 3)"));
    // A general holdout without a validation split: no val loss of 0 in the line, the file or
    // back from it.
    tb::EvalMetrics general;
    general.step = 5;
    general.generalLoss = 3.25;
    general.generalLossBase = 3.0;
    j = tb::toJson(general);
    QVERIFY(!j.contains("val_loss") && !j.contains("val_perplexity"));
    QVERIFY(!tb::evalMetricsFromJson(j).valLoss.has_value());
    QCOMPARE(tb::formatEvalLine(general),
             std::string("eval step 5: general holdout 3.25 (base 3)"));
    // Pair objectives: accuracy and margin instead of a perplexity; the stats round-trip.
    tb::PreferenceStats p;
    p.rewardsAccuracies = 0.9;
    p.rewardsMargins = 1.5;
    p.pairs = 80;
    p.nllLoss = 0.25;
    e.preference = p;
    QCOMPARE(
        tb::formatEvalLine(e),
        std::string("eval step 25: val loss 1.5000  accuracy 90.0% of 80 pairs  margin 1.500"));
    const auto back = tb::evalMetricsFromJson(tb::toJson(e)).preference;
    QVERIFY(back.has_value());
    QCOMPARE(back->pairs, int64_t(80));
    QCOMPARE(*back->nllLoss, 0.25);
    QVERIFY(!back->logOddsRatio.has_value());
}

void TestTrainParts::summaryJsonContract()
{
    tb::TrainSummary s;
    s.runDir = "runs/a";
    s.steps = 3;
    s.initialLoss = 4.0;
    s.finalLoss = 3.0;
    s.trainableParameters = 10;
    s.tokensPerSecond = 2.0;
    s.peakMemoryBytes = 7;
    // `tunebench train --json`: the keys and null for a missing validation loss (and packing).
    QCOMPARE(
        tb::toJson(s).dump(),
        std::string(
            R"({"final_loss":3.0,"initial_loss":4.0,"initial_val_accuracy":null,"packing":null,)"
            R"("peak_memory_bytes":7,"run_dir":"runs/a","steps":3,"stop_rate":null,"stopped":false,)"
            R"("tokens_per_second":2.0,"trainable_parameters":10,"val_accuracy":null,"val_loss":null,)"
            R"("val_loss_step":null})"));
    s.valLoss = 2.5;
    s.valLossStep = 3;
    s.stopped = true;
    QCOMPARE(tb::toJson(s)["val_loss_step"].get<int64_t>(), int64_t(3));
    QCOMPARE(tb::toJson(s)["stopped"].get<bool>(), true);
    s.valLoss.reset();
    s.stopped = false;
    s.valAccuracy = 0.75;
    QCOMPARE(tb::toJson(s)["val_accuracy"].get<double>(), 0.75);
    s.packing = tb::PackingStats{2, 6, 39, 40};
    QCOMPARE(tb::toJson(s)["packing"].dump(),
             std::string(R"({"bins":2,"efficiency":0.975,"examples":6,"slots":40,"tokens":39})"));
    s.stopPrompts = 16;
    s.stopStopped = 12;
    QCOMPARE(tb::toJson(s)["stop_rate"].dump(),
             std::string(R"({"prompts":16,"rate":0.75,"stopped":12})"));
}

void TestTrainParts::readRunMetricsWritesNothing()
{
    QTemporaryDir tmp;
    const std::string missing = tmp.filePath(QStringLiteral("never-written")).toStdString();
    const tb::RunMetrics none = tb::readRunMetrics(missing);
    QVERIFY(none.steps.empty() && none.evals.empty());
    QVERIFY(!tb::isDirectory(missing));  // reading a run never creates it
    const std::string dir = tmp.filePath(QStringLiteral("run")).toStdString();
    const tb::RunStore store = tb::RunStore::create(dir);
    store.writeRunInfo({{"config", nlohmann::json::object()}, {"planned_steps", 9}});
    tb::StepMetrics m;
    m.step = 1;
    m.loss = 3.0;
    store.appendMetrics(tb::toJson(m));
    store.appendMetrics({{"type", "memory"}, {"step", 1}});
    tb::EvalMetrics e;
    e.step = 1;
    e.valLoss = 2.0;
    store.appendMetrics(tb::toJson(e));
    store.appendMetrics(
        {{"type", "diverged"}, {"step", 2}, {"what", "loss is not finite"}, {"value", nullptr}});
    m.step = 2;
    m.loss = 2.5;
    store.appendMetrics(tb::toJson(m));
    const std::string before = tb::readFile(dir + "/metrics.jsonl");
    const tb::RunMetrics r = tb::readRunMetrics(dir);
    QCOMPARE(r.steps.size(), size_t(2));
    QCOMPARE(r.steps[1].loss, 2.5);
    QCOMPARE(r.steps[1].totalSteps, int64_t(9));  // from run.json's planned_steps
    QCOMPARE(r.evals.size(), size_t(1));
    QCOMPARE(r.diagnoses.size(), size_t(1));
    QVERIFY(std::isnan(r.diagnoses[0].value));
    const tb::Diagnosis spike{4, "loss spiked to 9.0", 9.0, "cause", "advice"};
    const tb::Diagnosis back = tb::diagnosisFromJson(tb::toJson(spike));
    QCOMPARE(back.step, int64_t(4));
    QCOMPARE(back.what, spike.what);
    QCOMPARE(back.value, 9.0);
    QCOMPARE(tb::readFile(dir + "/metrics.jsonl"), before);
}

void TestTrainParts::controlPauseBlocksUntilResume()
{
    tb::JobControl control;
    control.setState(tb::JobState::Running);
    QVERIFY(control.waitWhilePaused());  // not paused: returns at once
    control.pause();
    std::atomic<int> result{-1};
    std::thread worker([&] { result = control.waitWhilePaused() ? 1 : 0; });
    QTRY_COMPARE_WITH_TIMEOUT(control.state(), tb::JobState::Paused, 10000);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QCOMPARE(result.load(), -1);  // still waiting: no step runs while paused
    control.resume();
    worker.join();
    QCOMPARE(result.load(), 1);
    QCOMPARE(control.state(), tb::JobState::Running);
}

void TestTrainParts::controlStopWakesPaused()
{
    tb::JobControl control;
    control.setState(tb::JobState::Running);
    control.pause();
    std::atomic<int> result{-1};
    std::thread worker([&] { result = control.waitWhilePaused() ? 1 : 0; });
    QTRY_COMPARE_WITH_TIMEOUT(control.state(), tb::JobState::Paused, 10000);
    control.stop();
    worker.join();
    QCOMPARE(result.load(), 0);
    QVERIFY(control.stopRequested());
    QVERIFY(!control.waitWhilePaused());  // stopped stays stopped
}

QTEST_GUILESS_MAIN(TestTrainParts)
#include "test_train_parts.moc"
