// Playground (label gui, offscreen): the quantised base beside the fp32 base and a QLoRA run. A
// run trained here on the bundled model (LoRA on an NF4 double-quant base); the Playground's
// quantised-base choice, driven with the keyboard, shows the middle column; one Generate click
// fills the three columns with exactly core's generate() of the fp32 base, the NF4 base and the
// tuned model, each column saying how its model holds its weights (bytes and bits per weight
// checked against bitsandbytes' NF4 layout written out here); switching the choice off again
// hides the column and the base answers alone.
#include "generation_controller.h"
#include "main_window.h"
#include "model_page.h"
#include "playground_page.h"
#include "studio_state.h"
#include "test_util.h"

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "train/job.h"
#include "train/train_config.h"
#include "train/tuned_model.h"

#include <QCheckBox>
#include <QComboBox>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

namespace {

const QString kModel = QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k");
const char* kConfig = TB_SOURCE_DIR "/datasets/examples/lora-tiny.json";
const QString kPrompt = QStringLiteral("Once upon a time, there was a little girl named Lily.");
constexpr int kTokens = 120;

// stories260k's quantised weights: 5 blocks of q [64, 64], k and v [32, 64], o [64, 64], gate and
// up [172, 64], down [64, 172]. Bytes in NF4 with double quantisation, by bitsandbytes' layout:
// two codes a byte, a uint8 absmax per 64-element block, a float32 absmax per 256 blocks, the
// 256-entry float32 code table.
std::pair<int64_t, int64_t> nf4DoubleParametersAndBytes()
{
    int64_t params = 0, bytes = 0;
    for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {64, 64}, {32, 64}, {32, 64}, {64, 64}, {172, 64}, {172, 64}, {64, 172}}) {
        const int64_t n = rows * cols;
        const int64_t blocks = (n + 63) / 64;
        params += 5 * n;
        bytes += 5 * ((n + 1) / 2 + blocks + (blocks + 255) / 256 * 4 + 256 * 4);
    }
    return {params, bytes};
}

std::string greedyText(const tb::Model& model)
{
    const auto tokenizer = tb::loadTokenizer(kModel.toStdString());
    tb::GenerateOptions options;
    options.maxNewTokens = kTokens;
    options.greedy = true;
    return model.generate(tokenizer->encode(kPrompt.toStdString(), true), options, tokenizer.get())
        .text;
}

QPushButton* button(QWidget* root, const QString& text)
{
    for (QPushButton* b : root->findChildren<QPushButton*>())
        if (b->text() == text)
            return b;
    return nullptr;
}

}  // namespace

class TestPlayground : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QVERIFY(m_runs.isValid());
        tb::TrainConfig config = tb::loadTrainConfig(
            kConfig, {"output_dir=" + m_runs.path().toStdString(), "name=qlora-play", "quant=nf4",
                      "quant_double=true", "max_steps=12", "eval_every=0"});
        tb::TrainingJob job(config, nullptr);
        job.runHere();
        QVERIFY2(job.error().empty(), job.error().c_str());
        m_run = QString::fromStdString(job.summary().runDir);
    }

    void quantizedBaseColumn()
    {
        tb::MainWindow w;
        QSignalSpy opened(w.state(), &tb::StudioState::modelChanged);
        w.modelPage()->openModel(kModel);
        QVERIFY(opened.wait(15000));
        w.state()->setRuns({m_run});
        w.showPage(QStringLiteral("Playground"));
        tb::PlaygroundPage* play = w.playgroundPage();
        play->runBox()->setCurrentIndex(play->runBox()->findData(m_run));
        play->templateBox()->setCurrentIndex(0);  // raw text
        play->greedyBox()->setChecked(true);
        play->maxTokensBox()->setValue(kTokens);
        play->setPrompt(kPrompt);

        // Off by default: two columns. One key press chooses NF4 with double quantisation.
        QComboBox* box = play->quantizedBaseBox();
        QCOMPARE(box->count(), 5);
        QCOMPARE(box->currentIndex(), 0);
        QVERIFY(play->quantizedBaseColumn()->isHidden());
        box->setFocus();
        QTest::keyClick(box, Qt::Key_Down);
        QCOMPARE(box->currentText(), QStringLiteral("NF4 (double quant)"));
        QVERIFY(!play->quantizedBaseColumn()->isHidden());

        QSignalSpy tokens(play, &tb::PlaygroundPage::tokenArrived);
        QSignalSpy done(play, &tb::PlaygroundPage::generationFinished);
        QPushButton* generate = button(play, QStringLiteral("Generate"));
        QVERIFY(generate);
        QTest::mouseClick(generate, Qt::LeftButton);
        QVERIFY(play->busy());
        QVERIFY(done.wait(120000));
        const QString summary = done.first().at(0).toString();
        QVERIFY2(!summary.startsWith(QStringLiteral("Error")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("base NF4 (double quant):")), qPrintable(summary));
        QSet<int> sides;
        for (const QList<QVariant>& t : tokens)
            sides << t.at(0).toInt();
        QCOMPARE(sides, (QSet<int>{tb::kBaseSide, tb::kTunedSide, tb::kQuantizedBaseSide}));

        // Each column is exactly core's greedy answer of its model.
        tb::QuantOptions nf4;
        nf4.kind = tb::QuantKind::Nf4;
        nf4.doubleQuant = true;
        const auto fp32Model = tb::Model::load(kModel.toStdString(), {"fp32", "auto", {}});
        const auto nf4Model = tb::Model::load(kModel.toStdString(), {"fp32", "auto", nf4});
        const auto tunedModel = tb::loadTunedModel(m_run.toStdString(), {"fp32", "auto", {}});
        const std::string fp32Text = greedyText(*fp32Model), nf4Text = greedyText(*nf4Model);
        QCOMPARE(play->baseText(), QString::fromStdString(fp32Text));
        QCOMPARE(play->quantizedBaseText(), QString::fromStdString(nf4Text));
        QCOMPARE(play->tunedText(), QString::fromStdString(greedyText(*tunedModel)));
        // The NF4 base is another model: its logits differ from fp32, and so does its answer here.
        const auto ids =
            tb::loadTokenizer(kModel.toStdString())->encode(kPrompt.toStdString(), true);
        const std::vector<float> a = fp32Model->logits(ids), b = nf4Model->logits(ids);
        float maxDiff = 0;
        for (size_t i = 0; i < a.size(); ++i)
            maxDiff = std::max(maxDiff, std::abs(a[i] - b[i]));
        qInfo("fp32 vs NF4 (double quant) logits: max |difference| %.4f", double(maxDiff));
        QVERIFY2(maxDiff > 1e-3f, qPrintable(QString::number(maxDiff)));
        QVERIFY(fp32Text != nf4Text);

        // The weights lines: fp32 at 32 bits; NF4 at bitsandbytes' bytes.
        for (int side : {tb::kBaseSide, tb::kQuantizedBaseSide, tb::kTunedSide})
            qInfo("side %d: %s", side, qPrintable(play->weightsText(side)));
        const tb::WeightFootprint fp32Weights = fp32Model->weightFootprint();
        const auto [qParams, qBytes] = nf4DoubleParametersAndBytes();
        const int64_t nf4Bytes = 4 * (fp32Weights.parameters - qParams) + qBytes;
        QCOMPARE(fp32Weights.bytes, 4 * fp32Weights.parameters);
        QCOMPARE(nf4Model->weightFootprint().bytes, nf4Bytes);
        const auto mib = [](int64_t bytes) {
            return QString::number(double(bytes) / (1024.0 * 1024.0), 'f', 2);
        };
        QCOMPARE(play->weightsText(tb::kBaseSide),
                 QStringLiteral("fp32 · 32 bits/weight · %1 MiB of weights")
                     .arg(mib(fp32Weights.bytes)));
        const QString bits = QString::number(8.0 * double(qBytes) / double(qParams), 'g', 3);
        QCOMPARE(play->weightsText(tb::kQuantizedBaseSide),
                 QStringLiteral("NF4 (double quant) · %1 bits/weight (linear layers) · %2 MiB of "
                                "weights")
                     .arg(bits, mib(nf4Bytes)));
        QVERIFY2(play->weightsText(tb::kTunedSide)
                     .startsWith(QStringLiteral("NF4 (double quant) · %1 bits/weight").arg(bits)),
                 qPrintable(play->weightsText(tb::kTunedSide)));

        // Off again: the column hides and the next answer is the base's and the run's alone.
        QTest::keyClick(box, Qt::Key_Up);
        QCOMPARE(box->currentIndex(), 0);
        QVERIFY(play->quantizedBaseColumn()->isHidden());
        tokens.clear();
        done.clear();
        QTest::mouseClick(generate, Qt::LeftButton);
        QVERIFY(done.wait(120000));
        for (const QList<QVariant>& t : tokens)
            QVERIFY(t.at(0).toInt() != tb::kQuantizedBaseSide);
        QVERIFY(play->quantizedBaseText().isEmpty());
        QCOMPARE(play->baseText(), QString::fromStdString(fp32Text));
    }

private:
    QTemporaryDir m_runs;
    QString m_run;
};

QTEST_MAIN(TestPlayground)
#include "test_playground.moc"
