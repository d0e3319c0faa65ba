// QLoRA and the other quantised bases in training: LoRA on an NF4 base computes exactly what LoRA
// computes on a plain checkpoint holding the dequantised weights (the quantised linear layer's
// forward and input gradient against LibTorch's dense ones), with and without gradient
// checkpointing and under bf16 autocast; its quality against LoRA on the fp32 base (datasets/tiny,
// the bundled model and the random 26.5M Llama); the first step's memory report (weights exact);
// and the configs refused.
#include "export/model_folder.h"
#include "memory/measure.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "train/job.h"
#include "train/metrics.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include "test_util.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using tbtest::contains;

namespace {

std::string example(const char* name)
{
    return std::string(TB_SOURCE_DIR "/datasets/examples/") + name;
}

struct Reports : tb::JobEvents {
    std::vector<tb::MemoryReport> memory;
    void onMemoryReport(const tb::MemoryReport& r) override { memory.push_back(r); }
};

struct Run {
    tb::TrainSummary summary;
    std::vector<double> losses;
    std::vector<tb::MemoryReport> memory;
};

Run train(const QString& dir, const std::string& name, std::vector<std::string> overrides)
{
    overrides.insert(overrides.begin(),
                     {"output_dir=" + dir.toStdString(), "name=" + name, "device=cpu",
                      "eval_every=0", "log_every=1", "data.general_file=", "seed=3"});
    const tb::TrainConfig config = tb::loadTrainConfig(example("lora-tiny.json"), overrides);
    Reports events;
    tb::TrainingJob job(config, &events);
    job.runHere();
    if (job.state() != tb::JobState::Finished)
        qFatal("%s: %s", name.c_str(), job.error().c_str());
    Run r{job.summary(), {}, events.memory};
    for (const auto& s : tb::readRunMetrics(r.summary.runDir).steps)
        r.losses.push_back(s.loss);
    return r;
}

double maxRelDiff(const std::vector<double>& a, const std::vector<double>& b)
{
    if (a.size() != b.size() || a.empty())
        return 1e9;
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i)
        d = std::max(d, std::abs(a[i] - b[i]) / std::max(1e-12, std::abs(b[i])));
    return d;
}

QString refusal(std::vector<std::string> overrides)
{
    try {
        tb::loadTrainConfig(example("lora-tiny.json"), overrides);
    } catch (const tb::Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

const tb::MemoryReport::Item* item(const tb::MemoryReport& r, const std::string& key)
{
    for (const auto& i : r.items)
        if (i.key == key)
            return &i;
    return nullptr;
}

}  // namespace

class TestQlora : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { tb::installCpuMemoryTracking(); }
    void equalsLoraOnDequantisedBase_data();
    void equalsLoraOnDequantisedBase();
    void qualityNearFp32Base_data();
    void qualityNearFp32Base();
    void memoryReportCountsPackedWeights();
    void refusesWhatCannotBeQuantised();
    void refusesQuantisedCheckpoints_data();
    void refusesQuantisedCheckpoints();
};

void TestQlora::equalsLoraOnDequantisedBase_data()
{
    QTest::addColumn<QString>("quant");
    QTest::addColumn<bool>("doubleQuant");
    QTest::addColumn<QString>("precision");
    QTest::addColumn<bool>("checkpointing");
    QTest::addColumn<bool>("fewRows");
    QTest::newRow("nf4 double") << "nf4" << true << "fp32" << false << false;
    QTest::newRow("nf4 double, checkpointing") << "nf4" << true << "fp32" << true << false;
    QTest::newRow("nf4, bf16 autocast, 64-row micro-batches")
        << "nf4" << false << "bf16" << false << true;
    QTest::newRow("nf4, bf16 autocast, dense base stacked")
        << "nf4" << false << "bf16" << false << false;
    QTest::newRow("fp4") << "fp4" << false << "fp32" << false << false;
    QTest::newRow("int8") << "int8" << false << "fp32" << true << false;
}

void TestQlora::equalsLoraOnDequantisedBase()
{
    // Six AdamW steps of LoRA (all projections) on the quantised base and on a checkpoint holding
    // exactly the dequantised weights: the same forward and the same input gradients make the same
    // losses, step by step (fp32: to float rounding of the matmul's order).
    // Under CPU bf16 autocast a dense base above a decoding step's 64 rows runs q, k, v and gate,
    // up as stacked products (model/stacked_linears.h) that a quantised base does not: the same
    // forward, but x's gradient is summed in another order (within 2^-6, test_train_ops), which
    // AdamW's first steps amplify where gradients are near zero (6.4e-3 after six steps). So in
    // bf16 the step-by-step comparison runs micro-batches of at most 64 rows (1 x 64 tokens, 16
    // accumulated), where both bases run each layer's own product, and the stacked row compares
    // the first step's loss, which the forward alone makes.
    QFETCH(QString, quant);
    QFETCH(bool, doubleQuant);
    QFETCH(QString, precision);
    QFETCH(bool, checkpointing);
    QFETCH(bool, fewRows);
    QTemporaryDir dir;
    tb::QuantOptions q;
    q.kind = *tb::parseQuantKind(quant.toStdString());
    q.doubleQuant = doubleQuant;
    const std::string plain = dir.filePath(QStringLiteral("dequantised")).toStdString();
    QVERIFY(tb::writeDequantizedBase(tb::bundledModelDir(), q, plain) > 0);
    std::vector<std::string> common{"max_steps=6", "precision=" + precision.toStdString(),
                                    std::string("gradient_checkpointing=") +
                                        (checkpointing ? "true" : "false")};
    if (fewRows)
        common.insert(common.end(), {"batch_size=1", "grad_accum=16", "data.max_length=64"});
    auto withQuant = common;
    withQuant.push_back("quant=" + quant.toStdString());
    withQuant.push_back(std::string("quant_double=") + (doubleQuant ? "true" : "false"));
    const Run a = train(dir.path(), "quantised", withQuant);
    auto onPlain = common;
    onPlain.push_back("model=" + plain);
    const Run b = train(dir.path(), "plain", onPlain);
    const double d = maxRelDiff(a.losses, b.losses);
    qInfo("%s: losses %.6f -> %.6f, largest relative difference %.2e", qPrintable(quant),
          a.losses.front(), a.losses.back(), d);
    QCOMPARE(a.losses.size(), size_t(6));
    const bool stacked = precision == QStringLiteral("bf16") && !fewRows;
    const double first = maxRelDiff({a.losses.front()}, {b.losses.front()});
    QVERIFY2(first < 1e-6, qPrintable(QString::number(first)));
    if (!stacked)
        QVERIFY2(d < (precision == QStringLiteral("bf16") ? 2e-3 : 1e-5),
                 qPrintable(QString::number(d)));
    QVERIFY(a.losses.back() < a.losses.front());  // it trains
    QCOMPARE(a.summary.totalParameters, b.summary.totalParameters);
    QCOMPARE(a.summary.trainableParameters, b.summary.trainableParameters);
}

void TestQlora::qualityNearFp32Base_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<double>("margin");
    QTest::newRow("stories260k") << "bundled" << 0.05;
    QTest::newRow("random 26.5M llama") << "random" << 0.05;
}

void TestQlora::qualityNearFp32Base()
{
    // LoRA on the NF4 (double-quantised) base against LoRA on the fp32 base: the same data
    // (datasets/tiny), seed and steps; the validation losses after training apart by at most
    // `margin` of what training gained on the fp32 base (its base model's loss minus its own), and
    // both below the base model's.
    QFETCH(QString, model);
    QFETCH(double, margin);
    QTemporaryDir dir;
    std::vector<std::string> common{"max_steps=20", "eval_every=0"};
    if (model == QStringLiteral("random")) {
        const std::string folder = dir.filePath(QStringLiteral("random-llama")).toStdString();
        tb::writeRandomModel(R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
  "vocab_size": 32000, "hidden_size": 384, "intermediate_size": 1024, "num_hidden_layers": 8,
  "num_attention_heads": 6, "num_key_value_heads": 6, "head_dim": 64,
  "max_position_embeddings": 2048, "rms_norm_eps": 1e-05, "tie_word_embeddings": true,
  "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"})",
                             0, TB_SOURCE_DIR "/tests/data/tokenizers/llama2", folder);
        common.push_back("model=" + folder);
        common.push_back("lr=0.003");
        common.push_back("batch_size=8");
    }
    auto quantised = common;
    quantised.push_back("quant=nf4");
    quantised.push_back("quant_double=true");
    const Run q = train(dir.path(), "nf4", quantised);
    const Run f = train(dir.path(), "fp32", common);
    QVERIFY(q.summary.valLoss && f.summary.valLoss && f.summary.initialValLoss);
    const double gained = *f.summary.initialValLoss - *f.summary.valLoss;
    const double rel = (*q.summary.valLoss - *f.summary.valLoss) / gained;
    qInfo("%s: validation loss base %.4f (nf4 base %.4f); LoRA fp32 base %.4f, NF4 base %.4f "
          "(%+.2f%% of the gain)",
          qPrintable(model), *f.summary.initialValLoss, q.summary.initialValLoss.value_or(0),
          *f.summary.valLoss, *q.summary.valLoss, 100 * rel);
    QVERIFY2(std::abs(rel) < margin, qPrintable(QString::number(rel)));
    QVERIFY(*q.summary.valLoss < *q.summary.initialValLoss);
}

void TestQlora::memoryReportCountsPackedWeights()
{
    // The first step's report: weights, gradients and optimizer states exact with the packed
    // weights and their statistics; the peak near the estimate.
    QTemporaryDir dir;
    const Run r = train(dir.path(), "report",
                        {"max_steps=1", "quant=nf4", "quant_double=true", "batch_size=4"});
    QCOMPARE(r.memory.size(), size_t(1));
    for (const char* key : {"weights", "gradients", "optimizer_states"}) {
        const auto* i = item(r.memory.front(), key);
        QVERIFY2(i, key);
        QVERIFY2(i->estimated == i->measured,
                 qPrintable(QStringLiteral("%1: estimated %2, measured %3")
                                .arg(QLatin1String(key))
                                .arg(i->estimated)
                                .arg(i->measured)));
    }
    // The forward pass's growth against the estimate of the same moment (activations and the
    // loss's forward-side buffers, not backward's start).
    const auto* forward = item(r.memory.front(), "activations");
    QVERIFY(forward);
    const double forwardRatio = double(forward->measured) / double(forward->estimated);
    qInfo("activations at forward's end: estimated %lld, measured %lld (%.3f)",
          static_cast<long long>(forward->estimated), static_cast<long long>(forward->measured),
          forwardRatio);
    QVERIFY2(forwardRatio > 0.8 && forwardRatio < 1.2, qPrintable(QString::number(forwardRatio)));
    const auto* total = item(r.memory.front(), "total");
    QVERIFY(total);
    const double ratio = double(total->measured) / double(total->estimated);
    QVERIFY2(ratio > 0.9 && ratio < 1.1, qPrintable(QString::number(ratio)));
}

void TestQlora::refusesWhatCannotBeQuantised()
{
    const QString full = refusal({"method=full", "quant=nf4"});
    QVERIFY2(full.contains(QStringLiteral("'quant'")) && full.contains(QStringLiteral("full")) &&
                 full.contains(QStringLiteral("lora")),
             qPrintable(full));
    QVERIFY(refusal({"method=partial", "quant=int8"}).contains(QStringLiteral("partial")));
    QVERIFY(refusal({"quant=int8", "quant_double=true"}).contains(QStringLiteral("quant_double")));
    QVERIFY(refusal({"quant_double=true"}).contains(QStringLiteral("quant_double")));
    QVERIFY(refusal({"quant=nf5"}).contains(QStringLiteral("nf4")));
    QVERIFY(refusal({"quant=nf4", "quant_double=true"}).isEmpty());
    // The bundled model ties its head: quant_head is refused at load, naming the key.
    QTemporaryDir dir;
    const tb::TrainConfig config = tb::loadTrainConfig(
        example("lora-tiny.json"), {"output_dir=" + dir.path().toStdString(), "quant=nf4",
                                    "quant_head=true", "max_steps=1", "device=cpu"});
    tb::TrainingJob job(config, nullptr);
    job.runHere();
    QCOMPARE(job.state(), tb::JobState::Failed);
    QVERIFY2(contains(job.error(), "quant_head") && contains(job.error(), "ties"),
             job.error().c_str());
}

void TestQlora::refusesQuantisedCheckpoints_data()
{
    // Tensor names as GPTQ, AWQ and bitsandbytes serialise a quantised q_proj.
    QTest::addColumn<QStringList>("tensors");
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("shown");  // the tensor that gives the format away
    const QString p = QStringLiteral("model.layers.0.self_attn.q_proj.");
    QTest::newRow("gptq") << QStringList{p + QStringLiteral("qweight"),
                                         p + QStringLiteral("qzeros"), p + QStringLiteral("scales"),
                                         p + QStringLiteral("g_idx")}
                          << "GPTQ" << p + QStringLiteral("qweight");
    QTest::newRow("awq") << QStringList{p + QStringLiteral("qweight"), p + QStringLiteral("qzeros"),
                                        p + QStringLiteral("scales")}
                         << "AWQ" << p + QStringLiteral("qweight");
    QTest::newRow("bnb nf4") << QStringList{p + QStringLiteral("weight"),
                                            p + QStringLiteral("weight.absmax"),
                                            p + QStringLiteral("weight.quant_map"),
                                            p + QStringLiteral(
                                                    "weight.quant_state.bitsandbytes__nf4")}
                             << "bitsandbytes 4-bit" << p + QStringLiteral("weight.absmax");
    QTest::newRow("bnb int8") << QStringList{p + QStringLiteral("weight"),
                                             p + QStringLiteral("SCB")}
                              << "bitsandbytes int8" << p + QStringLiteral("SCB");
}

void TestQlora::refusesQuantisedCheckpoints()
{
    // The bundled model's config with a checkpoint saved already quantised: the error names the
    // format and a tensor that shows it, and says what to load instead.
    QFETCH(QStringList, tensors);
    QFETCH(QString, format);
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    tb::writeFileAtomic(d + "/config.json", tb::readFile(tb::bundledModelDir() + "/config.json"));
    std::vector<tb::TensorBlob> blobs;
    for (const QString& name : tensors)
        blobs.push_back({name.toStdString(), tb::DType::U8, {4}, std::string(4, '\0')});
    tb::writeSafetensors(d + "/model.safetensors", blobs);
    QString error;
    try {
        tb::Model::load(d, {"fp32", "cpu"});
    } catch (const tb::Error& e) {
        error = QString::fromUtf8(e.what());
    }
    QVERIFY2(error.contains(format + QStringLiteral("-quantised")), qPrintable(error));
    QFETCH(QString, shown);
    QVERIFY2(error.contains(QLatin1Char('\'') + shown + QLatin1Char('\'')), qPrintable(error));
    QVERIFY2(error.contains(QStringLiteral("quant: nf4")), qPrintable(error));
}

QTEST_GUILESS_MAIN(TestQlora)
#include "test_qlora.moc"
