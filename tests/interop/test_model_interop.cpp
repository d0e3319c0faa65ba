// Interop: our logits, greedy generations and parameter counts against Hugging Face transformers on
// tiny random models of every architecture, and on the converted stories260k.
#include "model/config.h"
#include "model/model.h"
#include "model/safetensors.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

class TestModelInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void logitsMatchTransformers_data();
    void logitsMatchTransformers();

private:
    QTemporaryDir m_dir;
    nlohmann::json m_oracle;
};

void TestModelInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    QVERIFY(m_dir.isValid());
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    p.start(QStringLiteral(TB_PYTHON),
            {QStringLiteral(TB_SOURCE_DIR "/tests/interop/model_oracle.py"), m_dir.path(),
             QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k")});
    QVERIFY(p.waitForFinished(300000));
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitCode() == 0, err.constData());
    m_oracle = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QVERIFY(m_oracle.size() >= 10);
}

void TestModelInterop::logitsMatchTransformers_data()
{
    QTest::addColumn<QString>("variant");
    for (const char* v :
         {"llama", "llama_sharded", "llama_tied", "llama3_rope", "mistral", "mistral_window",
          "qwen2", "qwen2_window", "qwen3", "gemma3", "smollm3", "smollm3_window", "phi3",
          "phi3_longrope", "gpt2", "gpt2_untied", "stories260k"})
        QTest::newRow(v) << QString::fromLatin1(v);
}

void TestModelInterop::logitsMatchTransformers()
{
    QFETCH(QString, variant);
    const auto& ref = m_oracle.at(variant.toStdString());
    const std::string dir = ref.at("dir").get<std::string>();
    const std::string refDir =
        variant == QStringLiteral("stories260k") ? m_dir.filePath(variant).toStdString() : dir;

    // Parameter count from config.json alone equals transformers' count.
    tb::ModelConfig config = tb::loadModelConfig(dir);
    QCOMPARE(tb::parameterCount(config), ref.at("num_parameters").get<int64_t>());

    if (variant == QStringLiteral("llama_sharded"))
        QVERIFY(QFileInfo::exists(QString::fromStdString(dir + "/model.safetensors.index.json")));
    auto model = tb::Model::load(dir, {"fp32", "cpu"});
    QCOMPARE(model->parameterCount(), ref.at("num_parameters").get<int64_t>());

    auto file = tb::SafetensorsFile::open(refDir + "/reference.safetensors");
    const tb::TensorInfo* ids = file->find("ids");
    const tb::TensorInfo* logits = file->find("logits");
    QVERIFY(ids && logits);
    std::vector<int32_t> input(static_cast<size_t>(ids->numel()));
    for (size_t i = 0; i < input.size(); ++i) {
        int64_t v;
        std::memcpy(&v, file->data(*ids) + 8 * i, 8);
        input[i] = static_cast<int32_t>(v);
    }
    const std::vector<float> ours = model->logits(input);
    QCOMPARE(static_cast<int64_t>(ours.size()), logits->numel());
    const float* theirs = reinterpret_cast<const float*>(file->data(*logits));
    double maxDiff = 0, maxRef = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        maxDiff = std::max(maxDiff, std::abs(static_cast<double>(ours[i]) - theirs[i]));
        maxRef = std::max(maxRef, std::abs(static_cast<double>(theirs[i])));
    }
    // fp32: within 1e-4 relative to the largest logit.
    QVERIFY2(
        maxDiff <= 1e-4 * maxRef,
        qPrintable(QStringLiteral("max |diff| %1 vs max |logit| %2").arg(maxDiff).arg(maxRef)));

    // Greedy continuation identical to transformers' generate(do_sample=False).
    std::vector<int32_t> prompt = variant == QStringLiteral("stories260k")
                                      ? input
                                      : std::vector<int32_t>{1, 5, 9, 2, 7, 3, 11, 4};
    tb::GenerateOptions o;
    o.greedy = true;
    o.stopAtEos = false;
    o.maxNewTokens = static_cast<int>(ref.at("greedy").size());
    auto result = model->generate(prompt, o);
    std::vector<int32_t> expected = ref.at("greedy").get<std::vector<int32_t>>();
    QCOMPARE(result.tokens, expected);
}

QTEST_GUILESS_MAIN(TestModelInterop)
#include "test_model_interop.moc"
