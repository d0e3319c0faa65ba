// Interop: the training steps of `tunebench bench train` (fused AdamW, gradient clipping, LoRA or
// full fine-tuning; the bundled model and a random Gemma 3) give, step by step, the losses of
// transformers + PEFT + torch.optim.AdamW doing the same steps on the same weights and tokens
// (tests/interop/train_oracle.py). After the first
// step every loss depends on the optimizer's updates, so a wrong moment, bias correction, clipping
// or per-parameter step count shows here.
#include "cli/cli_run.h"
#include "oracle_util.h"

#include "util/paths.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>

class TestTrainInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void lossesMatchTorchOptim_data();
    void lossesMatchTorchOptim();

private:
    QTemporaryDir m_dir;
};

// A random Gemma 3 text model, written by transformers (its sandwich norms, scaled embeddings,
// GELU-tanh and sliding layers trained through on both sides), a random SmolLM3 (layers
// without rotary embeddings) and a random Phi-3 (fused projections, LongRoPE, half-rotary heads).
void TestTrainInterop::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QString error;
    tbtest::runOracleScript(
        QStringLiteral("train_oracle.py"),
        {QStringLiteral("make-gemma3"), m_dir.filePath(QStringLiteral("gemma3"))}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    tbtest::runOracleScript(
        QStringLiteral("train_oracle.py"),
        {QStringLiteral("make-smollm3"), m_dir.filePath(QStringLiteral("smollm3"))}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    tbtest::runOracleScript(QStringLiteral("train_oracle.py"),
                            {QStringLiteral("make-phi3"), m_dir.filePath(QStringLiteral("phi3"))},
                            &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
}

void TestTrainInterop::lossesMatchTorchOptim_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("method");
    QTest::addColumn<QString>("clip");
    QTest::addColumn<QString>("lr");
    // LoRA's few weights move further per step: a smaller rate keeps AdamW's amplified rounding
    // (7e-5 relative after 6 steps at 0.01, 1e-7 at 0.003) well inside the tolerance.
    const QString bundled = QString::fromStdString(tb::bundledModelDir());
    QTest::newRow("full, clipped")
        << bundled << QStringLiteral("full") << QStringLiteral("1.0") << QStringLiteral("0.01");
    QTest::newRow("full, unclipped")
        << bundled << QStringLiteral("full") << QStringLiteral("0") << QStringLiteral("0.01");
    QTest::newRow("lora, clipped")
        << bundled << QStringLiteral("lora") << QStringLiteral("0.5") << QStringLiteral("0.003");
    const QString gemma = m_dir.filePath(QStringLiteral("gemma3"));
    QTest::newRow("gemma3 full") << gemma << QStringLiteral("full") << QStringLiteral("1.0")
                                 << QStringLiteral("0.003");
    QTest::newRow("gemma3 lora") << gemma << QStringLiteral("lora") << QStringLiteral("0.5")
                                 << QStringLiteral("0.003");
    const QString smol = m_dir.filePath(QStringLiteral("smollm3"));
    QTest::newRow("smollm3 full") << smol << QStringLiteral("full") << QStringLiteral("1.0")
                                  << QStringLiteral("0.003");
    QTest::newRow("smollm3 lora") << smol << QStringLiteral("lora") << QStringLiteral("0.5")
                                  << QStringLiteral("0.003");
    const QString phi3 = m_dir.filePath(QStringLiteral("phi3"));
    QTest::newRow("phi3 full") << phi3 << QStringLiteral("full") << QStringLiteral("1.0")
                               << QStringLiteral("0.003");
    QTest::newRow("phi3 lora") << phi3 << QStringLiteral("lora") << QStringLiteral("0.5")
                               << QStringLiteral("0.003");
}

void TestTrainInterop::lossesMatchTorchOptim()
{
    QFETCH(QString, model);
    QFETCH(QString, method);
    QFETCH(QString, clip);
    QFETCH(QString, lr);
    const QString batch = QStringLiteral("2"), seq = QStringLiteral("32"),
                  steps = QStringLiteral("6");
    const auto ours = tbtest::runTunebench(
        {QStringLiteral("bench"), QStringLiteral("train"), QStringLiteral("--model"), model,
         QStringLiteral("--method"), method, QStringLiteral("--batch"), batch,
         QStringLiteral("--seq"), seq, QStringLiteral("--steps"), steps, QStringLiteral("--warmup"),
         QStringLiteral("0"), QStringLiteral("--lr"), lr, QStringLiteral("--clip"), clip,
         QStringLiteral("--json")});
    QVERIFY2(ours.exitCode == 0, ours.err.c_str());
    QString error;
    const QByteArray oracle = tbtest::runOracleScript(
        QStringLiteral("train_oracle.py"), {model, method, batch, seq, steps, lr, clip}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const auto a = nlohmann::json::parse(ours.out)["losses"].get<std::vector<double>>();
    const auto b = nlohmann::json::parse(oracle.toStdString())["losses"].get<std::vector<double>>();
    QCOMPARE(a.size(), size_t(6));
    QCOMPARE(b.size(), a.size());
    // fp32 sums in another order: 1e-4 relative per step (AdamW turns rounding in tiny gradients
    // into whole-lr steps; here the sides differ by 1e-6 or less).
    for (size_t i = 0; i < a.size(); ++i)
        QVERIFY2(std::abs(a[i] - b[i]) <= 1e-4 * std::abs(b[i]),
                 qPrintable(QStringLiteral("step %1: ours %2, torch %3")
                                .arg(i)
                                .arg(a[i], 0, 'g', 9)
                                .arg(b[i], 0, 'g', 9)));
    // The curve moves by far more than the tolerance, so equal losses mean equal updates.
    QVERIFY2(b.front() - b.back() > 100 * 1e-4 * std::abs(b.front()),
             qPrintable(QStringLiteral("loss %1 -> %2").arg(b.front()).arg(b.back())));
}

QTEST_GUILESS_MAIN(TestTrainInterop)
#include "test_train_interop.moc"
