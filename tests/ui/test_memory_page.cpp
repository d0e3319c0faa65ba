// The Memory page that teaches (label gui, offscreen): a config.json alone opens for the Model,
// Method and Memory pages while Train and Playground say what is missing; catalog models chosen
// from the Memory page's list and the Model page's menu; the comparison of every method and
// precision equal to core's estimates; QLoRA beside the other methods; the stepper; presentation
// mode; PNG and SVG export.
#include "catalog_chooser.h"
#include "main_window.h"
#include "memory_compare.h"
#include "memory_page.h"
#include "memory_stepper.h"
#include "method_page.h"
#include "model_page.h"
#include "playground_page.h"
#include "studio_state.h"
#include "test_util.h"
#include "train_page.h"
#include "train_run_panel.h"

#include "memory/estimator.h"
#include "model/catalog.h"
#include "model/config.h"
#include "model/config_tree.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "tokenizer/tokenizer.h"
#include "util/paths.h"

#include <QAbstractItemModelTester>
#include <QAbstractItemView>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QImage>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>
#include <vector>

namespace {

// Every item model of `root` under QAbstractItemModelTester (asserts on its own while alive).
std::vector<std::unique_ptr<QAbstractItemModelTester>> testModels(QWidget* root)
{
    std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
    QSet<QAbstractItemModel*> seen;
    auto add = [&](QAbstractItemModel* model) {
        if (model && !seen.contains(model)) {
            seen << model;
            testers.push_back(std::make_unique<QAbstractItemModelTester>(
                model, QAbstractItemModelTester::FailureReportingMode::QtTest));
        }
    };
    for (QAbstractItemView* view : root->findChildren<QAbstractItemView*>())
        add(view->model());
    for (QComboBox* box : root->findChildren<QComboBox*>())
        add(box->model());
    return testers;
}

QString catalogFolder(const char* id)
{
    return QFileInfo(QString::fromStdString(tb::findCatalogModel(id)->configPath)).absolutePath();
}

// Opens `path` on the Model page and waits for the state to take it.
bool openAndWait(tb::MainWindow& w, const QString& path)
{
    QSignalSpy spy(w.state(), &tb::StudioState::modelChanged);
    w.modelPage()->openModel(path);
    return spy.wait(15000);
}

int leafCount(const QStandardItemModel* model, const QModelIndex& parent = {})
{
    int n = 0;
    for (int r = 0; r < model->rowCount(parent); ++r) {
        const QModelIndex i = model->index(r, 0, parent);
        n += model->rowCount(i) == 0 ? 1 : leafCount(model, i);
    }
    return n;
}

// The run each comparison bar stands for, built here from its description (not from
// comparisonSetups), and core's items folded into the five components.
tb::TrainConfig setupRun(const tb::TrainConfig& run, const QString& key)
{
    tb::TrainConfig r = run;
    r.quant = {};
    const std::map<QString, std::pair<tb::Method, tb::Precision>> setups = {
        {QStringLiteral("full-fp32"), {tb::Method::Full, tb::Precision::Fp32}},
        {QStringLiteral("full-bf16"), {tb::Method::Full, tb::Precision::Bf16}},
        {QStringLiteral("partial"), {tb::Method::Partial, run.precision}},
        {QStringLiteral("lora-bf16"), {tb::Method::Lora, tb::Precision::Bf16}},
        {QStringLiteral("qlora-nf4"), {tb::Method::Lora, tb::Precision::Bf16}},
        {QStringLiteral("adapter"), {tb::Method::Adapter, run.precision}},
        {QStringLiteral("prompt"), {tb::Method::Prompt, run.precision}}};
    r.method = setups.at(key).first;
    r.precision = setups.at(key).second;
    if (key == QLatin1String("qlora-nf4")) {
        r.quant.kind = tb::QuantKind::Nf4;
        r.quant.doubleQuant = true;
    }
    return r;
}

std::array<qint64, 5> folded(const tb::MemoryEstimate& e)
{
    std::array<qint64, 5> out{};
    for (const tb::MemoryItem& item : e.items) {
        const std::string& k = item.key;
        const int c = k == "gradients"                                         ? 1
                      : k == "optimizer_states" || k == "master_weights"       ? 2
                      : k == "activations" || k == "logits" || k == "logprobs" ? 3
                      : k == "overhead"                                        ? 4
                                                                               : 0;
        out[size_t(c)] += item.bytes;
    }
    return out;
}

}  // namespace

class TestMemoryPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
    }

    // Opening a model reads its tokenizer on the worker into the folder cache that the Method and
    // Memory pages' counts ask on the GUI thread: spoiled afterwards with its time kept, the file
    // is not read again.
    void openingAModelReadsItsTokenizerOnTheWorker()
    {
        QTemporaryDir dir;
        const QString bundled = QString::fromStdString(tb::bundledModelDir());
        for (const char* f : {"config.json", "tokenizer.model", "tokenizer_config.json"})
            QVERIFY(QFile::copy(bundled + QLatin1Char('/') + QLatin1String(f),
                                dir.filePath(QLatin1String(f))));
        const std::string folder = dir.path().toStdString() + "/";  // spelled another way
        const tb::ModelSummary s = tb::summarizeModel(dir.path());
        QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
        QVERIFY(!s.tokenizer.isEmpty());
        const QString file = dir.filePath(QStringLiteral("tokenizer.model"));
        const auto time = std::filesystem::last_write_time(file.toStdString());
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write("not a sentencepiece model");
        }
        std::filesystem::last_write_time(file.toStdString(), time);
        const auto tokenizer = tb::folderTokenizer(folder);
        QVERIFY(tokenizer);
        QCOMPARE(qint64(tokenizer->vocabSize()), s.vocabSize);
        // A change of the file is seen: the spoiled file is read and named.
        std::filesystem::last_write_time(file.toStdString(), time + std::chrono::seconds(5));
        const std::string e = tbtest::errorOf([&] { tb::folderTokenizer(folder); });
        QVERIFY2(e.find("tokenizer.model") != std::string::npos, e.c_str());
    }

    // The cache holds the last few folders: another folder asked for in between (a worker
    // exporting a run trained on another base) does not evict the studio's model, and threads
    // asking for one folder at once share one load.
    void tokenizerCacheKeepsSeveralFolders()
    {
        QTemporaryDir a, b, c;
        const QString bundled = QString::fromStdString(tb::bundledModelDir());
        for (QTemporaryDir* dir : {&a, &b, &c})
            for (const char* f : {"config.json", "tokenizer.model", "tokenizer_config.json"})
                QVERIFY(QFile::copy(bundled + QLatin1Char('/') + QLatin1String(f),
                                    dir->filePath(QLatin1String(f))));
        const auto first = tb::folderTokenizer(a.path().toStdString());
        QVERIFY(first);
        const auto other = tb::folderTokenizer(b.path().toStdString());
        QVERIFY(other && other.get() != first.get());
        QCOMPARE(tb::folderTokenizer(a.path().toStdString()).get(), first.get());
        std::shared_ptr<const tb::Tokenizer> seen[4];
        std::vector<std::thread> threads;
        for (auto& s : seen)
            threads.emplace_back([&s, &c] { s = tb::folderTokenizer(c.path().toStdString()); });
        for (auto& t : threads)
            t.join();
        for (const auto& s : seen)
            QCOMPARE(s.get(), seen[0].get());
        QVERIFY(seen[0] && seen[0].get() != first.get());
    }

    // A folder with config.json alone: the Model page shows the architecture, the count and the
    // module tree from the config; Method and Memory work; Train and Playground say what is
    // missing; a full model afterwards clears it.
    void configOnlyModelOpens()
    {
        tb::MainWindow w;
        auto testers = testModels(&w);
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("llama"));
        QVERIFY(QDir().mkpath(folder));
        QVERIFY(QFile::copy(catalogFolder("llama-3.1-8b") + QStringLiteral("/config.json"),
                            folder + QStringLiteral("/config.json")));
        // The config.json itself opens its folder.
        QVERIFY(openAndWait(w, folder + QStringLiteral("/config.json")));
        const tb::ModelSummary& s = w.modelPage()->summary();
        QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
        QCOMPARE(s.path, folder);
        QCOMPARE(w.state()->modelPath(), folder);
        QCOMPARE(s.missing, (QStringList{QStringLiteral("tokenizer"), QStringLiteral("weights")}));
        QVERIFY(s.tensorsFromConfig);
        QCOMPARE(s.parameters, qint64(8030261248));
        QCOMPARE(s.architecture, QStringLiteral("llama"));
        const tb::ModelConfig model = *w.state()->modelConfig();
        QCOMPARE(leafCount(w.modelPage()->tensorModel()), int(tb::configTensors(model).size()));
        // Roles under the method come from core, as for a checkpoint: LoRA on q_proj, v_proj.
        w.methodPage()->chooseMethod(QStringLiteral("lora"));
        const auto q =
            w.modelPage()->tensorModel()->findItems(QStringLiteral("q_proj"), Qt::MatchRecursive);
        QCOMPARE(q.size(), 32);
        QCOMPARE(q.first()->child(0, 1)->text(), QStringLiteral("[4096, 4096] bfloat16"));
        QCOMPARE(q.first()->child(0, 3)->text(), QStringLiteral("LoRA"));
        // Method and Memory plan from the config.
        QCOMPARE(w.methodPage()->trainableParameters(),
                 qint64(tb::trainableParameterCount(model, w.state()->config())));
        QVERIFY(w.memoryPage()->estimate());
        QCOMPARE(w.memoryPage()->estimate()->parameters,
                 w.memoryPage()->estimate()->trainableParameters + 8030261248);
        // Train: Start disabled, the panel says what is missing, and a start is refused.
        tb::TrainRunPanel* panel = w.trainPage()->runPanel();
        QVERIFY(!w.trainPage()->startButton()->isEnabled());
        auto* missing = panel->findChild<QLabel*>(QStringLiteral("modelMissing"));
        QVERIFY(missing && !missing->isHidden());
        for (const char* part : {"no tokenizer", "no weights", "config alone"})
            QVERIFY2(missing->text().contains(QLatin1String(part)), qPrintable(missing->text()));
        QVERIFY(!panel->startRun(QStringLiteral("x")));
        QVERIFY(panel->logText().contains(QStringLiteral("Cannot start")));
        // Playground: Generate disabled and the reason shown.
        QVERIFY(!w.playgroundPage()->generateButton()->isEnabled());
        QVERIFY2(w.playgroundPage()->statusText().startsWith(QStringLiteral("Cannot generate")),
                 qPrintable(w.playgroundPage()->statusText()));
        // A full model folder again: nothing missing.
        QVERIFY(openAndWait(w, QString::fromStdString(tb::bundledModelDir())));
        QVERIFY(w.modelPage()->summary().missing.isEmpty());
        QVERIFY(!w.modelPage()->summary().tensorsFromConfig);
        QVERIFY(w.state()->modelMissingText().isEmpty());
        QVERIFY(w.trainPage()->startButton()->isEnabled());
        QVERIFY(missing->isHidden());
        QVERIFY(w.playgroundPage()->generateButton()->isEnabled());
        QVERIFY(w.playgroundPage()->statusText().isEmpty());
        // A config file of another name stands alone (no folder to look in).
        QVERIFY(openAndWait(w, QStringLiteral(TB_SOURCE_DIR "/tests/data/configs/gpt2.json")));
        QCOMPARE(w.modelPage()->summary().path,
                 QStringLiteral(TB_SOURCE_DIR "/tests/data/configs/gpt2.json"));
        QCOMPARE(w.modelPage()->summary().parameters, qint64(124439808));
        QCOMPARE(w.modelPage()->summary().missing.size(), 2);
    }

    // The Memory page's list and the Model page's menu open catalog models (on the Model page's
    // worker, like any folder).
    void catalogModelsOpen()
    {
        tb::MainWindow w;
        // The Memory page's models (the catalog list); the Model page's tree is tested above (the
        // tester's checks on every row of a 7B tree take seconds).
        auto testers = testModels(w.memoryPage());
        tb::CatalogChooser* chooser = w.memoryPage()->catalog();
        QCOMPARE(chooser->box()->count(), 25);  // the prompt row and 24 models
        QSignalSpy spy(w.state(), &tb::StudioState::modelChanged);
        chooser->choose(QStringLiteral("qwen2.5-7b"));
        QVERIFY(spy.wait(15000));
        QCOMPARE(w.state()->modelPath(), catalogFolder("qwen2.5-7b"));
        QCOMPARE(tb::parameterCount(*w.state()->modelConfig()), int64_t(7615616512));
        QCOMPARE(chooser->box()->currentData().toString(), QStringLiteral("qwen2.5-7b"));
        QVERIFY(w.memoryPage()->estimate());
        // The Model page's Open menu: folder, config.json, and the catalog's 24 entries.
        QMenu* catalog = nullptr;
        for (QAction* a : w.modelPage()->openMenu()->actions())
            if (a->menu())
                catalog = a->menu();
        QVERIFY(catalog);
        QCOMPARE(catalog->actions().size(), 24);
        for (QAction* a : catalog->actions())
            if (a->data().toString() == QLatin1String("gpt2-xl"))
                a->trigger();
        QVERIFY(spy.wait(15000));
        QCOMPARE(w.modelPage()->summary().parameters, qint64(1557611200));
        QCOMPARE(chooser->box()->currentData().toString(), QStringLiteral("gpt2-xl"));
        // A model outside the catalog: the list shows its prompt row again.
        QVERIFY(openAndWait(w, QString::fromStdString(tb::bundledModelDir())));
        QCOMPARE(chooser->box()->currentIndex(), 0);
    }

    // Every method and precision on one chart, each bar's components equal to core's estimate of
    // that setup; the device line; QLoRA's weights below LoRA's.
    void comparisonEqualsCore()
    {
        tb::StudioState state;
        tb::MemoryPage page(&state);
        auto testers = testModels(&page);
        const tb::ModelConfig model = tb::loadModelConfig(tb::resolveModelPath("llama-3.1-8b"));
        state.setModel(catalogFolder("llama-3.1-8b"), model, false,
                       {QStringLiteral("tokenizer"), QStringLiteral("weights")});
        state.updateConfig([](tb::TrainConfig& c) {
            c.batchSize = 1;
            c.data.maxLength = 2048;
            c.gradientCheckpointing = true;
        });
        page.setDeviceMemory(tb::parseByteSize("24GB"));
        page.setGpus(1, 0);
        tb::ComparisonChart* chart = page.comparison();
        const auto& bars = chart->bars();
        QStringList keys;
        for (const auto& b : bars)
            keys << b.key;
        QCOMPARE(keys.join(QLatin1Char(' ')),
                 QStringLiteral("full-fp32 full-bf16 partial lora-bf16 qlora-nf4 adapter prompt"));
        const tb::TrainConfig& run = state.config();
        int segments = 0;
        for (size_t i = 0; i < bars.size(); ++i) {
            const tb::TrainConfig r = setupRun(run, bars[i].key);
            tb::EstimateOptions o = tb::estimateOptionsFor(r, r.data.maxLength);
            o.deviceMemory = page.estimateOptions().deviceMemory;
            o.cudaOverhead = page.estimateOptions().cudaOverhead;
            o.advise = false;
            const tb::MemoryEstimate e = tb::estimateMemory(model, r, o);
            QVERIFY2(bars[i].error.isEmpty(), qPrintable(bars[i].error));
            QCOMPARE(bars[i].total, qint64(e.total));
            const auto want = folded(e);
            for (int c = 0; c < 5; ++c) {
                QCOMPARE(bars[i].bytes[size_t(c)], want[size_t(c)]);
                // Drawn as stacked: the bar's value in plot units times the unit, within 1e-9.
                QVERIFY(qAbs(chart->drawnBytes(int(i), c) - double(want[size_t(c)])) <=
                        1e-9 * double(want[size_t(c)]) + 0.5);
                segments += want[size_t(c)] > 0 ? 1 : 0;
            }
        }
        QCOMPARE(chart->segmentsDrawn(), segments);
        QVERIFY(chart->deviceLineShown());
        // QLoRA holds the frozen base in 4 bits: never more weight bytes than LoRA's bf16 base.
        QVERIFY(bars[4].bytes[0] <= bars[3].bytes[0]);
        // Full fine-tuning in bf16 (Tunebench's bf16-mixed) keeps fp32 weights: every weight
        // trains, so none is held in 16 bits (docs/memory.md, "Byte conventions").
        QCOMPARE(bars[0].bytes[0], bars[1].bytes[0]);
        QCOMPARE(bars[1].label, QStringLiteral("Full\nbf16"));
        // Arithmetic only: the seven estimates of a 70B model on the GUI thread.
        const tb::ModelConfig big = tb::loadModelConfig(tb::resolveModelPath("llama-3.1-70b"));
        QElapsedTimer clock;
        clock.start();
        const int rounds = 20;
        for (int k = 0; k < rounds; ++k)
            QCOMPARE(int(tb::compareSetups(big, run, page.estimateOptions()).size()), 7);
        const double perSetupMs = double(clock.nsecsElapsed()) / 1e6 / (rounds * 7);
        qInfo("comparison: %.3f ms per setup estimate (Llama 3.1 70B)", perSetupMs);
        QVERIFY(perSetupMs < 25);  // generous: the machine may be busy
        // Without a model the comparison is empty.
        state.setModel(QStringLiteral("/nonexistent"), std::nullopt, false);
        QVERIFY(chart->bars().empty());
        QCOMPARE(chart->segmentsDrawn(), 0);
    }

    // The quantised-base controls set the run's quant; QLoRA shows beside the other methods.
    void qloraBesideTheOthers()
    {
        tb::StudioState state;
        tb::MemoryPage page(&state);
        auto testers = testModels(&page);
        const tb::ModelConfig model = tb::loadModelConfig(tb::resolveModelPath("llama-3.1-8b"));
        state.setModel(catalogFolder("llama-3.1-8b"), model, false);
        state.updateConfig([](tb::TrainConfig& c) { c.method = tb::Method::Lora; });
        QCOMPARE(page.categories().size(), 6);
        QCOMPARE(page.categories().first(), QStringLiteral("LoRA\n(chosen)"));
        QCOMPARE(page.categories().last(), QStringLiteral("QLoRA\nnf4"));
        const double loraWeights = page.barBytes(QStringLiteral("weights"), 0);
        QVERIFY(!page.doubleQuantBox()->isEnabled());
        page.quantBox()->setCurrentIndex(
            page.quantBox()->findData(static_cast<int>(tb::QuantKind::Nf4)));
        QCOMPARE(state.config().quant.kind, tb::QuantKind::Nf4);
        QVERIFY(page.doubleQuantBox()->isEnabled());
        QTest::mouseClick(page.doubleQuantBox(), Qt::LeftButton);
        QVERIFY(state.config().quant.doubleQuant);
        // The chosen bar is QLoRA now, with core's estimate of the quantised run.
        QCOMPARE(page.categories().first(), QStringLiteral("QLoRA nf4\n(chosen)"));
        // No second QLoRA column; plain LoRA beside it instead.
        QCOMPARE(page.categories().size(), 6);
        QVERIFY(!page.categories().contains(QStringLiteral("QLoRA\nnf4")));
        QVERIFY(page.categories().contains(QStringLiteral("LoRA")));
        tb::EstimateOptions o =
            tb::estimateOptionsFor(state.config(), state.config().data.maxLength);
        o.deviceMemory = page.estimateOptions().deviceMemory;
        o.cudaOverhead = page.estimateOptions().cudaOverhead;
        QCOMPARE(page.estimate()->total, tb::estimateMemory(model, state.config(), o).total);
        QVERIFY(page.barBytes(QStringLiteral("weights"), 0) <= loraWeights);
        // int8 has no double quantisation; full fine-tuning's bar keeps an unquantised base.
        page.quantBox()->setCurrentIndex(
            page.quantBox()->findData(static_cast<int>(tb::QuantKind::Int8)));
        QCOMPARE(state.config().quant.kind, tb::QuantKind::Int8);
        QVERIFY(!state.config().quant.doubleQuant);
        QVERIFY(!page.doubleQuantBox()->isEnabled());
        const int full = int(page.categories().indexOf(QStringLiteral("Full")));
        QVERIFY(full > 0);
        tb::TrainConfig fullRun = state.config();
        fullRun.method = tb::Method::Full;
        fullRun.quant = {};
        tb::EstimateOptions fo = tb::estimateOptionsFor(fullRun, fullRun.data.maxLength);
        fo.cudaOverhead = o.cudaOverhead;
        QCOMPARE(page.barBytes(QStringLiteral("weights"), full),
                 double(tb::estimateMemory(model, fullRun, fo).weights));
        // Another page (a project) setting quant: the controls follow.
        state.updateConfig([](tb::TrainConfig& c) { c.quant = {tb::QuantKind::Fp4, true, false}; });
        QCOMPARE(page.quantBox()->currentData().toInt(), static_cast<int>(tb::QuantKind::Fp4));
        QVERIFY(page.doubleQuantBox()->isChecked());
    }

    // The stepper adds the components one at a time, each with its sentence.
    void stepperBuildsTheBars()
    {
        tb::StudioState state;
        tb::MemoryPage page(&state);
        page.show();
        const tb::ModelConfig model = tb::loadModelConfig(tb::resolveModelPath("qwen2.5-0.5b"));
        state.setModel(catalogFolder("qwen2.5-0.5b"), model, false);
        page.tabs()->setCurrentIndex(1);
        tb::MemoryStepper* stepper = page.stepper();
        tb::ComparisonChart* chart = page.comparison();
        QSet<QString> sentences;
        for (int step = 1; step <= tb::MemoryStepper::stepCount(); ++step) {
            QVERIFY(!tb::MemoryStepper::stepSentence(step).isEmpty());
            sentences << tb::MemoryStepper::stepSentence(step);
            QCOMPARE(tb::MemoryStepper::stepTitle(step), tb::teachingComponentTitle(step - 1));
        }
        QCOMPARE(sentences.size(), 5);
        QCOMPARE(stepper->stage(), 0);
        QVERIFY(!stepper->backButton()->isEnabled());
        const int all = chart->segmentsDrawn();
        auto nonzero = [&chart](int components) {
            int n = 0;
            for (const auto& b : chart->bars())
                for (int c = 0; c < components; ++c)
                    n += b.bytes[size_t(c)] > 0 ? 1 : 0;
            return n;
        };
        QCOMPARE(all, nonzero(5));
        for (int step = 1; step <= 5; ++step) {
            QTest::mouseClick(stepper->nextButton(), Qt::LeftButton);
            QCOMPARE(stepper->stage(), step);
            QCOMPARE(chart->stage(), step);
            QVERIFY(stepper->text().contains(tb::MemoryStepper::stepSentence(step)));
            QCOMPARE(chart->segmentsDrawn(), nonzero(step));
            // Shown components are drawn whole; the rest not at all.
            for (size_t b = 0; b < chart->bars().size(); ++b)
                for (int c = 0; c < 5; ++c)
                    QCOMPARE(chart->drawnBytes(int(b), c) > 0,
                             c < step && chart->bars()[b].bytes[size_t(c)] > 0);
        }
        QVERIFY(!stepper->nextButton()->isEnabled());
        QTest::mouseClick(stepper->backButton(), Qt::LeftButton);
        QCOMPARE(chart->stage(), 4);
        QTest::mouseClick(stepper->allButton(), Qt::LeftButton);
        QCOMPARE(chart->stage(), 0);
        QCOMPARE(chart->segmentsDrawn(), all);
    }

    // Presentation mode: every text of the page and both charts 1.8x, and back.
    void presentationEnlargesText()
    {
        tb::StudioState state;
        tb::MemoryPage page(&state);
        page.show();
        state.setModel(catalogFolder("gpt2"), tb::loadModelConfig(tb::resolveModelPath("gpt2")),
                       false);
        const double base = page.font().pointSizeF();
        const double tick = page.comparison()->textFont().pointSizeF();
        QTest::mouseClick(page.presentationBox(), Qt::LeftButton);
        QVERIFY(page.presentation());
        QCOMPARE(page.font().pointSizeF(), base * 1.8);
        QVERIFY(page.table()->isHidden());  // the chart gets the room
        QCOMPARE(page.comparison()->textFont().pointSizeF(), base * 1.8);
        QCOMPARE(page.chartFont().pointSizeF(), base * 1.8);
        QCOMPARE(
            page.stepper()->findChild<QLabel*>(QStringLiteral("stepSentence"))->font().pointSizeF(),
            base * 1.8);
        page.setPresentation(false);
        QVERIFY(!page.presentationBox()->isChecked());
        QCOMPARE(page.font().pointSizeF(), base);
        QVERIFY(!page.table()->isHidden());
        QCOMPARE(page.comparison()->textFont().pointSizeF(), tick);
    }

    // PNG of the asked size; SVG that parses as XML with one filled shape per bar segment in each
    // component's colour.
    void exportsPngAndSvg()
    {
        tb::StudioState state;
        tb::MemoryPage page(&state);
        page.show();
        state.setModel(catalogFolder("llama-3.2-1b"),
                       tb::loadModelConfig(tb::resolveModelPath("llama-3.2-1b")), false);
        page.setDeviceMemory(tb::parseByteSize("24GB"));
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("memory.png"));
        const QString svg = dir.filePath(QStringLiteral("memory.svg"));
        tb::ComparisonChart* chart = page.comparison();
        QVERIFY(chart->exportPng(png, 900, 540));
        QVERIFY(chart->exportSvg(svg, 900, 540));
        const QImage image(png);
        QCOMPARE(image.size(), QSize(900, 540));
        QFile file(svg);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&file);
        QString width, height;
        std::map<QString, int> shapesByFill;  // bar segments and legend swatches, by colour
        QStringList fills;                    // the fill of each open <g>
        while (!xml.atEnd()) {
            xml.readNext();
            if (xml.isStartElement()) {
                const auto a = xml.attributes();
                if (xml.name() == QLatin1String("svg")) {
                    width = a.value(QLatin1String("width")).toString();
                    height = a.value(QLatin1String("height")).toString();
                }
                if (xml.name() == QLatin1String("g"))
                    fills << (a.hasAttribute(QLatin1String("fill"))
                                  ? a.value(QLatin1String("fill")).toString()
                                  : (fills.isEmpty() ? QString() : fills.last()));
                if (xml.name() == QLatin1String("polygon") || xml.name() == QLatin1String("rect") ||
                    xml.name() == QLatin1String("path"))
                    ++shapesByFill[fills.isEmpty() ? QString() : fills.last()];
            } else if (xml.isEndElement() && xml.name() == QLatin1String("g")) {
                fills.removeLast();
            }
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QCOMPARE(width, QStringLiteral("317.5mm"));  // QSvgGenerator writes millimetres
        QVERIFY(!height.isEmpty());
        const QColor colors[5] = {tb::componentColor(0), tb::componentColor(1),
                                  tb::componentColor(2), tb::componentColor(4),
                                  tb::componentColor(6)};
        for (int c = 0; c < 5; ++c) {
            int segments = 0;
            for (const auto& b : chart->bars())
                segments += b.bytes[size_t(c)] > 0 ? 1 : 0;
            // Each segment is one filled shape, and the legend adds one swatch.
            QCOMPARE(shapesByFill[colors[c].name()], segments + 1);
        }
    }
};

QTEST_MAIN(TestMemoryPage)
#include "test_memory_page.moc"
