// CUDA path (label gpu): the bundled model on the GPU gives the CPU's logits and greedy tokens, one
// prompt and a batch.
// Skipped where LibTorch sees no CUDA device.
#include "memory/measure.h"
#include "model/model.h"
#include "train/job.h"
#include "train/train_config.h"

#include <QtTest>

#include <cmath>

class TestGpu : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (!tb::cudaAvailable())
            QSKIP("no CUDA device");
    }
    void logitsMatchCpu()
    {
        const std::string dir = TB_SOURCE_DIR "/datasets/models/stories260k";
        auto cpu = tb::Model::load(dir, {"fp32", "cpu"});
        auto gpu = tb::Model::load(dir, {"fp32", "cuda"});
        QVERIFY(gpu->device().rfind("cuda", 0) == 0);
        std::vector<int32_t> ids{1, 403, 407, 261, 378, 432, 383, 286};
        auto a = cpu->logits(ids);
        auto b = gpu->logits(ids);
        double maxDiff = 0, maxRef = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            maxDiff = std::max(maxDiff, std::abs(double(a[i]) - b[i]));
            maxRef = std::max(maxRef, std::abs(double(a[i])));
        }
        QVERIFY2(maxDiff <= 1e-4 * maxRef, qPrintable(QString::number(maxDiff)));
        tb::GenerateOptions o;
        o.greedy = true;
        o.maxNewTokens = 92;
        QCOMPARE(gpu->generate({1, 403, 407, 261, 378}, o).tokens,
                 cpu->generate({1, 403, 407, 261, 378}, o).tokens);
    }
    void batchOnGpu()
    {
        // Rows of a batch on the GPU (padding, mask and rows leaving the batch on the device)
        // give the CPU's greedy tokens for each prompt alone.
        const std::string dir = TB_SOURCE_DIR "/datasets/models/stories260k";
        auto cpu = tb::Model::load(dir, {"fp32", "cpu"});
        auto gpu = tb::Model::load(dir, {"fp32", "cuda"});
        const std::vector<std::vector<int32_t>> prompts = {
            {1, 403, 407, 261, 378}, {1}, {1, 403, 407, 261, 378, 432, 383, 286, 261, 376}};
        tb::GenerateOptions o;
        o.greedy = true;
        o.maxNewTokens = 40;
        o.stopTokenIds = {cpu->generate(prompts[1], o).tokens.at(20)};  // row 1 ends early
        auto rows = gpu->generateBatch(prompts, o);
        for (size_t i = 0; i < prompts.size(); ++i) {
            auto alone = cpu->generate(prompts[i], o);
            QCOMPARE(rows[i].tokens, alone.tokens);
            QCOMPARE(rows[i].stopReason, alone.stopReason);
        }
    }
    void bf16OnGpu()
    {
        auto gpu = tb::Model::load(TB_SOURCE_DIR "/datasets/models/stories260k", {"bf16", "cuda"});
        tb::GenerateOptions o;
        o.greedy = true;
        o.maxNewTokens = 16;
        QCOMPARE(gpu->generate({1, 403, 407, 261, 378}, o).tokens.size(), size_t(16));
    }
    void fineTuneOnGpu_data()
    {
        QTest::addColumn<QString>("precision");
        QTest::newRow("fp32") << QStringLiteral("fp32");
        QTest::newRow("bf16") << QStringLiteral("bf16");
        QTest::newRow("fp16") << QStringLiteral("fp16");  // dynamic loss scaling
    }
    void fineTuneOnGpu()
    {
        QFETCH(QString, precision);
        QTemporaryDir dir;
        class Capture : public tb::JobEvents {
        public:
            void onStep(const tb::StepMetrics& m) override { last = m; }
            tb::StepMetrics last;
        } events;
        auto c = tb::loadTrainConfig(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json",
                                     {"device=cuda", "precision=" + precision.toStdString(),
                                      "max_steps=20", "output_dir=" + dir.path().toStdString(),
                                      "name=gpu"});
        tb::TrainingJob job(c, &events);
        job.runHere();
        QVERIFY2(job.state() == tb::JobState::Finished, job.error().c_str());
        const auto& s = job.summary();
        QVERIFY(s.valLoss && s.initialValLoss && *s.valLoss < 0.75 * *s.initialValLoss);
        QVERIFY(events.last.memoryPeak > 0);  // CUDA allocator statistics
        QVERIFY(events.last.memoryReserved >=
                events.last.memoryCurrent);  // reserved = allocated + cached
        QCOMPARE(tb::memorySnapshot("cuda").source, std::string("cuda"));
    }
};

QTEST_GUILESS_MAIN(TestGpu)
#include "test_gpu.moc"
