// Memory measurement: the tracking CPU allocator counts tensor bytes exactly, and training steps report
// per-phase memory that holds the weights, gradients and optimizer states they must hold.
#include "memory/measure.h"
#include "train/job.h"
#include "train/train_config.h"

#include <torch/torch.h>

#include <QtTest>

class TestMeasure : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void countsTensorBytes()
    {
        tb::installCpuMemoryTracking();
        tb::installCpuMemoryTracking();  // idempotent
        QVERIFY(tb::cpuMemoryTrackingInstalled());
        const auto before = tb::memorySnapshot("cpu");
        QCOMPARE(before.source, std::string("cpu-tracked"));
        tb::resetMemoryPeak("cpu");
        {
            auto t = torch::empty({2500000}, torch::kFloat32);  // 10,000,000 bytes
            QCOMPARE(tb::memorySnapshot("cpu").current - before.current, int64_t(10000000));
            auto u = torch::empty({1000, 1000}, torch::kFloat64);  // 8,000,000 bytes
            QCOMPARE(tb::memorySnapshot("cpu").current - before.current, int64_t(18000000));
        }
        const auto after = tb::memorySnapshot("cpu");
        QCOMPARE(after.current, before.current);
        QVERIFY(after.peak - before.current >= 18000000);
        tb::resetMemoryPeak("cpu");
        QCOMPARE(tb::memorySnapshot("cpu").peak, after.current);
    }

    void phasesOfAFullFineTuningStep()
    {
        // Full fine-tuning with AdamW: after the optimizer step the gradients (4 B) and both moments (8 B)
        // of all 260,032 parameters are alive on top of what was there after loading.
        QTemporaryDir dir;
        class Capture : public tb::JobEvents {
        public:
            void onStep(const tb::StepMetrics& m) override { last = m; }
            tb::StepMetrics last;
        } events;
        auto c = tb::loadTrainConfig(TB_SOURCE_DIR "/datasets/examples/full-tiny.json",
                                     {"max_steps=1", "device=cpu", "output_dir=" + dir.path().toStdString(), "name=m"});
        tb::TrainingJob job(c, &events);
        job.runHere();
        QCOMPARE(job.state(), tb::JobState::Finished);
        const auto& m = events.last;
        QVERIFY(m.memoryAfterLoad >= 260032 * 4);
        const int64_t optimizerAndGrads = m.memoryAfterOptimizer - m.memoryAfterLoad;
        QVERIFY2(optimizerAndGrads >= 260032 * 12 && optimizerAndGrads < 260032 * 12 + (1 << 20),
                 qPrintable(QString::number(optimizerAndGrads)));
        QVERIFY(m.memoryAfterForward > m.memoryAfterLoad);  // activations kept for backward
        QVERIFY(m.memoryPeak >= m.memoryAfterForward);
        QVERIFY(m.memoryCurrent < m.memoryAfterOptimizer);  // gradients freed after the step
    }
    void bf16KernelsWorkWithTracking()
    {
        // oneDNN's bf16 kernels take raw pointers from the CPU allocator: the tracking allocator must hand
        // out simple ones (this once failed with "dptr.get() == dptr.get_context()").
        QTemporaryDir dir;
        auto c = tb::loadTrainConfig(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json",
                                     {"max_steps=2", "device=cpu", "precision=bf16", "gradient_checkpointing=true",
                                      "output_dir=" + dir.path().toStdString(), "name=bf16"});
        tb::TrainingJob job(c, nullptr);
        job.runHere();
        QVERIFY2(job.state() == tb::JobState::Finished, job.error().c_str());
        QVERIFY(job.summary().peakMemoryBytes > 0);
    }
};

QTEST_GUILESS_MAIN(TestMeasure)
#include "test_measure.moc"
