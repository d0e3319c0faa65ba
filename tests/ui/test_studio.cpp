// Studio (label gui, offscreen): the pages over core, and one test driving the whole flow on the
// bundled model and dataset: LoRA, memory numbers equal core's, train with live plots, pause,
// resume, stop, export, generate in the Playground; the event loop stays responsive while training
// runs. Then the studio's guarantees: a page never rewrites itself in answer to its own change,
// snapshots are listed on a worker (the newest request wins), generation streams in batches, and a
// drain replots once. Last, runs of several processes: the Processes box, a stand-in launcher
// (known values: plots, per-rank rows, merged log and its filter, stop, failure) and two real
// ranks of `tunebench train --nproc 2` on the bundled model.
#include "data_page_util.h"
#include "gpt2_folder.h"
#include "stand_in_launcher.h"
#include "test_util.h"

#include "data_page.h"
#include "export_page.h"
#include "generation_controller.h"
#include "launch_command.h"
#include "launched_run.h"
#include "main_window.h"
#include "memory_page.h"
#include "method_page.h"
#include "model_page.h"
#include "model_switch.h"
#include "playground_page.h"
#include "project.h"
#include "rank_progress.h"
#include "record_editor.h"
#include "studio_state.h"
#include "train_launch_box.h"
#include "train_page.h"
#include "train_plots.h"
#include "train_run_panel.h"
#include "train_settings_form.h"
#include "training_controller.h"

#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "export/gguf.h"
#include "memory/estimator.h"
#include "model/model.h"
#include "peft/defaults.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "tokenizer/tokenizer.h"
#include "train/metrics.h"
#include "train/train_config.h"
#include "util/file_util.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace {

const QString kModel = QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k");
constexpr double kMiB = 1024.0 * 1024.0;

// A window with the bundled model open and runs going to `runs`, small and quick.
std::unique_ptr<tb::MainWindow> openWindow(const QString& runs)
{
    auto w = std::make_unique<tb::MainWindow>();
    QSignalSpy spy(w->state(), &tb::StudioState::modelChanged);
    w->modelPage()->openModel(kModel);
    if (!spy.wait(15000))
        return nullptr;
    w->state()->updateConfig([&runs](tb::TrainConfig& c) {
        c.outputDir = runs.toStdString();
        c.data.trainFile = TB_SOURCE_DIR "/datasets/tiny/train.jsonl";
        c.data.valFile = TB_SOURCE_DIR "/datasets/tiny/val.jsonl";
        c.batchSize = 4;
        c.data.maxLength = 64;
        c.maxSteps = 5000;  // stopped by the test long before
        c.evalEvery = 40;
    });
    return w;
}

// Every item model of the window under QAbstractItemModelTester (asserts on its own while alive):
// the views' models (tables, trees, lists) and the combo boxes'.
std::vector<std::unique_ptr<QAbstractItemModelTester>> testModels(QWidget* root)
{
    std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
    QSet<QAbstractItemModel*> seen;
    for (QAbstractItemView* view : root->findChildren<QAbstractItemView*>())
        if (view->model() && !seen.contains(view->model())) {
            seen << view->model();
            testers.push_back(std::make_unique<QAbstractItemModelTester>(
                view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest));
        }
    for (QComboBox* box : root->findChildren<QComboBox*>())
        if (box->model() && !seen.contains(box->model())) {
            seen << box->model();
            testers.push_back(std::make_unique<QAbstractItemModelTester>(
                box->model(), QAbstractItemModelTester::FailureReportingMode::QtTest));
        }
    return testers;
}

// Toggles a GPU of the Processes box as the keyboard does: current row, then Space.
void toggleGpu(tb::TrainLaunchBox* box, int row)
{
    box->gpuList()->setCurrentRow(row);
    QTest::keyClick(box->gpuList()->viewport(), Qt::Key_Space);
}

// The Processes box on 2 (this machine's CPU: no GPU list), with the up arrow.
void chooseTwoProcesses(tb::MainWindow* w)
{
    tb::TrainLaunchBox* box = w->trainPage()->settingsForm()->launchBox();
    box->setCudaDevices(0);
    QTest::keyClick(box->processesBox(), Qt::Key_Up);
}

QString fileText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).trimmed() : QString();
}

// A run's rank file (ranks/rank-R.jsonl) or metrics.jsonl: the step records' memory_bytes in MiB.
std::vector<std::pair<double, double>> memoryOfSteps(const QString& path)
{
    std::vector<std::pair<double, double>> out;
    std::istringstream lines(tb::readFile(path.toStdString()));
    for (std::string line; std::getline(lines, line);) {
        const auto j = nlohmann::json::parse(line);
        if (j.value("type", "") == "step")
            out.emplace_back(double(j["step"].get<int64_t>()),
                             double(j["memory_bytes"].get<int64_t>()) / kMiB);
    }
    return out;
}

// A store of `records` records made at `path` and shown on the window's Data page, with an
// annotator set so that edits can be saved; empty when it did not open, else the error.
QString openAnnotatedStore(tb::MainWindow& w, const QString& path, int records)
{
    tbtest::makeStore(path.toStdString(), records);
    QString error;
    if (!tbtest::openStoreAndWait(*w.dataPage(), path, false, &error))
        return error.isEmpty() ? QStringLiteral("not opened") : error;
    if (!tbtest::waitIds(*w.dataPage()))
        return QStringLiteral("no ids");
    w.dataPage()->setAnnotator(QStringLiteral("ann"));
    return {};
}

// A Data job that holds the store until it is cancelled, then counts itself in `stopped`.
bool startHoldingJob(tb::DataJobs* jobs, std::atomic<int>& stopped)
{
    return jobs->run(QStringLiteral("Hold"),
                     [&stopped](tb::DataStore&, const tb::CurateProgress& progress) {
                         while (progress("holding", 0.5))
                             std::this_thread::sleep_for(std::chrono::milliseconds(5));
                         ++stopped;
                         return tb::DataJobs::Finish{};
                     });
}

}  // namespace

class TestStudio : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
    }
    void pages()
    {
        tb::MainWindow w;
        w.show();
        QCOMPARE(w.pageNames(),
                 (QStringList{QStringLiteral("Model"), QStringLiteral("Data"),
                              QStringLiteral("Method"), QStringLiteral("Memory"),
                              QStringLiteral("Train"), QStringLiteral("Playground"),
                              QStringLiteral("Evaluate"), QStringLiteral("Export")}));
        w.showPage(QStringLiteral("Memory"));
        auto* list = w.findChild<QListWidget*>();
        QVERIFY(list);
        QCOMPARE(list->currentRow(), 3);
        QVERIFY(w.statusText().contains(QStringLiteral("Device:")));
        QVERIFY(w.statusText().contains(QStringLiteral("Idle")));
    }
    void opensBundledModelInBackground()
    {
        tb::MainWindow w;
        QSignalSpy spy(w.modelPage(), &tb::ModelPage::modelOpened);
        w.modelPage()->openModel(kModel);
        QVERIFY(spy.wait(10000));
        const auto& s = w.modelPage()->summary();
        QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
        QCOMPARE(s.architecture, QStringLiteral("llama"));
        QCOMPARE(s.parameters, qint64(260032));
        QCOMPARE(s.tokenizer, QStringLiteral("sentencepiece"));
        QVERIFY(w.modelPage()->infoModel()->rowCount() >= 8);
        QStandardItemModel* tensors = w.modelPage()->tensorModel();
        QVERIFY(tensors->rowCount() >= 1);
        QAbstractItemModelTester infoTester(w.modelPage()->infoModel(),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester tensorTester(
            tensors, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // The module tree marks what trains: LoRA on q_proj -> that weight "LoRA", the embeddings
        // frozen.
        w.methodPage()->chooseMethod(QStringLiteral("lora"));
        const auto items = tensors->findItems(QStringLiteral("q_proj"), Qt::MatchRecursive);
        QVERIFY(!items.isEmpty());
        auto role = [](QStandardItem* module) {
            return module->child(0, 3)->text();
        };  // its weight's role
        QCOMPARE(role(items.first()), QStringLiteral("LoRA"));
        w.methodPage()->chooseMethod(QStringLiteral("full"));
        QCOMPARE(role(items.first()), QStringLiteral("trains"));
    }
    void reportsBadFolder()
    {
        tb::ModelPage page;
        QSignalSpy spy(&page, &tb::ModelPage::modelOpened);
        page.openModel(QStringLiteral("/nonexistent/model"));
        QVERIFY(spy.wait(10000));
        QVERIFY(page.summary().error.contains(QStringLiteral("/nonexistent/model")));
    }
    void showsSlidingWindow()
    {
        // A config.json alone of a Qwen2 whose last layers slide: the Model page names the window
        // and its layers beside the context.
        QTemporaryDir dir;
        auto c = nlohmann::json::parse(
            tb::readFile(TB_SOURCE_DIR "/tests/data/configs/qwen2.5-0.5b.json"));
        c["use_sliding_window"] = true;
        c["sliding_window"] = 512;
        c["max_window_layers"] = 22;
        const QString file = dir.filePath(QStringLiteral("config.json"));
        tb::writeFileAtomic(file.toStdString(), c.dump());
        tb::ModelPage page;
        QSignalSpy spy(&page, &tb::ModelPage::modelOpened);
        page.openModel(file);
        QVERIFY(spy.wait(10000));
        QVERIFY2(page.summary().error.isEmpty(), qPrintable(page.summary().error));
        QStringList rows;
        for (auto* model : page.findChildren<QStandardItemModel*>())
            for (int r = 0; r < model->rowCount(); ++r)
                if (model->columnCount() == 2 && model->item(r, 1))
                    rows << model->item(r, 0)->text() + QStringLiteral(": ") +
                                model->item(r, 1)->text();
        QVERIFY2(rows.contains(QStringLiteral("Context length: 32768")),
                 qPrintable(rows.join(QStringLiteral("\n"))));
        QVERIFY2(rows.contains(QStringLiteral("Sliding window: 512 positions, layers 22-23")),
                 qPrintable(rows.join(QStringLiteral("\n"))));
    }
    void methodCountsComeFromCore()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        auto testers = testModels(w.get());
        const tb::ModelConfig model = *w->state()->modelConfig();
        for (const char* m : {"full", "partial", "lora", "adapter", "prompt"}) {
            w->methodPage()->chooseMethod(QString::fromLatin1(m));
            QCOMPARE(QString::fromLatin1(tb::methodName(w->state()->config().method)),
                     QString::fromLatin1(m));
            const qint64 expected = tb::trainableParameterCount(model, w->state()->config());
            QCOMPARE(w->methodPage()->trainableParameters(), expected);
            QVERIFY(qAbs(w->methodPage()->trainablePercent() -
                         100.0 * double(expected) / 260032.0) < 1e-9);
        }
        w->methodPage()->chooseMethod(QStringLiteral("lora"));
        const qint64 before = w->methodPage()->trainableParameters();
        // The stop token's row (trainable tokens, tied: 64) does not scale with the rank.
        const qint64 rows = tb::trainableTokenParameters(
            model, static_cast<int64_t>(tb::trainableTokenIds(model, w->state()->config()).size()));
        QCOMPARE(rows, qint64(64));
        w->methodPage()->loraRankBox()->setValue(16);
        QCOMPARE(w->state()->config().lora.rank, 16);
        QCOMPARE(w->methodPage()->trainableParameters() - rows, 2 * (before - rows));
        QCOMPARE(w->methodPage()->comparison()->rowCount(), 5);
    }
    void memoryPageEqualsCoreEstimator()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        auto testers = testModels(w.get());
        w->methodPage()->chooseMethod(QStringLiteral("lora"));
        tb::MemoryPage* page = w->memoryPage();
        page->setGpus(2, 1);
        page->setDeviceMemory(tb::parseByteSize("24GB"));
        auto check = [&](bool expectFits) {
            const tb::TrainConfig& run = w->state()->config();
            tb::EstimateOptions o = tb::estimateOptionsFor(run, run.data.maxLength);
            o.gpus = 2;
            o.zero = 1;
            o.deviceMemory = page->estimateOptions().deviceMemory;
            const tb::MemoryEstimate e = tb::estimateMemory(*w->state()->modelConfig(), run, o);
            QVERIFY(page->estimate());
            QCOMPARE(page->estimate()->total, e.total);
            QCOMPARE(page->estimate()->items.size(), e.items.size());
            for (size_t i = 0; i < e.items.size(); ++i) {
                QCOMPARE(page->table()->item(int(i), 1)->data(Qt::UserRole).toLongLong(),
                         e.items[i].bytes);
                // The chosen method's bars are column 0.
                QVERIFY2(qAbs(page->barBytes(QString::fromStdString(e.items[i].key), 0) -
                              double(e.items[i].bytes)) < 0.5,
                         e.items[i].key.c_str());
            }
            QCOMPARE(page->categories().size(), 6);  // the chosen, four other methods, QLoRA
            // Inference for comparison: the row after the total, and the verdict's ratio.
            const int inferenceRow = int(e.items.size()) + 1;
            QCOMPARE(page->table()->item(inferenceRow, 1)->data(Qt::UserRole).toLongLong(),
                     e.inference);
            QVERIFY2(page->verdictText().contains(QStringLiteral("Inference with the same model")),
                     qPrintable(page->verdictText()));
            QStringList advice;
            for (const auto& a : e.advice)
                advice << QString::fromStdString(a);
            QCOMPARE(page->adviceShown(), advice);
            QCOMPARE(bool(e.fits), true);
            QCOMPARE(*e.fits, expectFits);
        };
        check(true);
        QVERIFY(page->verdictText().startsWith(QStringLiteral("Fits")));
        w->state()->updateConfig([](tb::TrainConfig& c) {
            c.batchSize = 32;
            c.gradientCheckpointing = true;
            c.precision = tb::Precision::Bf16;
        });
        check(true);
        // A device too small: does not fit, and the advice shown is core's.
        page->setDeviceMemory(tb::parseByteSize("2MiB"));
        check(false);
        QVERIFY(page->verdictText().startsWith(QStringLiteral("Does not fit")));
    }
    void projectRoundTrip()
    {
        QTemporaryDir dir;
        auto w = openWindow(dir.path() + QStringLiteral("/runs"));
        QVERIFY(w);
        w->methodPage()->chooseMethod(QStringLiteral("adapter"));
        w->state()->setRuns({dir.path() + QStringLiteral("/runs/a")});
        const QString storePath = dir.filePath(QStringLiteral("p.tbstore"));
        tb::DataStore::open(storePath.toStdString());
        w->state()->setStorePath(storePath);
        const QString file = dir.path() + QStringLiteral("/p.tunebench");
        QString error;
        QVERIFY2(w->saveProject(file, &error), qPrintable(error));
        tb::Project p;
        QVERIFY2(tb::readProject(file, &p, &error), qPrintable(error));
        QCOMPARE(p.modelPath, kModel);
        QCOMPARE(p.storePath, storePath);
        QVERIFY(p.config.method == tb::Method::Adapter);
        QCOMPARE(p.runs, QStringList{dir.path() + QStringLiteral("/runs/a")});
        tb::MainWindow other;
        QSignalSpy spy(other.state(), &tb::StudioState::modelChanged);
        QVERIFY2(other.openProject(file, &error), qPrintable(error));
        QVERIFY(spy.wait(10000));
        QVERIFY(other.state()->config().method == tb::Method::Adapter);
        QCOMPARE(other.state()->config().batchSize, 4);
        QCOMPARE(other.state()->storePath(), storePath);
        QVERIFY(!tb::readProject(dir.path() + QStringLiteral("/missing.tunebench"), &p, &error));
        QVERIFY(error.contains(QStringLiteral("missing.tunebench")));
    }
    // Opening a GPT-2 folder after the bundled Llama resets what depends on the architecture
    // (LoRA targets, partial modules, the chat template, a max length past its context) in one
    // change, says so on the Model page and the status bar, and LoRA works on it at once; a
    // project reopened with its own model keeps its own choices.
    void modelSwitchResetsArchitectureOptions()
    {
        QTemporaryDir dir;
        auto w = openWindow(dir.filePath(QStringLiteral("runs")));
        QVERIFY(w);
        nlohmann::json tokenizerConfig = nlohmann::json::parse(
            tb::readFile(TB_SOURCE_DIR "/tests/data/tokenizers/gpt2/tokenizer_config.json"));
        tokenizerConfig["chat_template"] =
            "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
            "{% endfor %}";
        const QString gpt2 = dir.filePath(QStringLiteral("gpt2"));
        QVERIFY(tbtest::writeRandomGpt2(gpt2, tokenizerConfig.dump()));
        QCOMPARE(tb::Model::load(gpt2.toStdString(), {"fp32", "cpu"})->parameterCount(),
                 tb::parameterCount(tb::loadModelConfig(gpt2.toStdString())));
        w->methodPage()->chooseMethod(QStringLiteral("lora"));
        w->state()->updateConfig([](tb::TrainConfig& c) {
            c.lora.targets = {"q_proj", "v_proj"};
            c.partial.modules = {"lm_head"};
        });
        QVERIFY(w->modelPage()->noteLabel()->isHidden());

        QSignalSpy changed(w->state(), &tb::StudioState::configChanged);
        QSignalSpy opened(w->state(), &tb::StudioState::modelChanged);
        w->modelPage()->openModel(gpt2);
        QVERIFY(opened.wait(15000));
        QCOMPARE(changed.size(), 1);  // the model and its resets: one change
        const tb::TrainConfig& c = w->state()->config();
        QCOMPARE(c.lora.targets, std::vector<std::string>{"c_attn"});
        QVERIFY(c.partial.modules.empty());
        QVERIFY(!c.data.chatTemplate);  // the model's own (ChatML)
        QCOMPARE(c.data.maxLength, 32);
        QCOMPARE(c.model, gpt2.toStdString());
        const QString note = QStringLiteral(
            "Opened gpt2 (GPT-2): LoRA targets q_proj, v_proj → c_attn; partial also trains "
            "lm_head → nothing; chat template alpaca → model's own; max length 64 → 32 "
            "(its context)");
        QCOMPARE(w->state()->modelNote(), note);
        QCOMPARE(w->modelPage()->noteLabel()->text(), note);
        QVERIFY(!w->modelPage()->noteLabel()->isHidden());
        QCOMPARE(w->statusBar()->currentMessage(), note);

        // The Method page: LoRA counts (not n/a), c_attn ticked; the Memory page: a LoRA bar.
        const tb::ModelConfig model = *w->state()->modelConfig();
        const qint64 lora = tb::trainableParameterCount(model, c);
        // rank 8 on c_attn (16 -> 48), plus the tied EOS row the run trains (trainable_tokens).
        QCOMPARE(lora, qint64(8 * (16 + 48) * 2 + 16));
        const auto& row = w->methodPage()->comparison()->rows()[size_t(tb::Method::Lora)];
        QVERIFY2(row.error.isEmpty(), qPrintable(row.error));
        QCOMPARE(row.trainable, lora);
        QCOMPARE(w->methodPage()->trainableParameters(), lora);
        QStringList ticked;
        for (QCheckBox* box : w->methodPage()->findChildren<QCheckBox*>())
            if (box->isChecked() && box->text().contains(QLatin1Char('_')))
                ticked << box->text();
        QCOMPARE(ticked, QStringList{QStringLiteral("c_attn")});
        tb::MemoryPage* memory = w->memoryPage();
        QVERIFY(memory->estimate());
        QCOMPARE(memory->estimate()->trainableParameters, lora);
        QCOMPARE(memory->categories().first(), QStringLiteral("LoRA\n(chosen)"));
        QVERIFY(memory->barBytes(QStringLiteral("gradients"), 0) > 0);

        // The user's own targets on this model survive reopening it and a project round trip.
        for (QCheckBox* box : w->methodPage()->findChildren<QCheckBox*>())
            if (box->text() == QLatin1String("c_fc"))
                box->setChecked(true);
        const std::vector<std::string> mine = {"c_attn", "c_fc"};
        QCOMPARE(w->state()->config().lora.targets, mine);
        w->modelPage()->openModel(gpt2);
        QVERIFY(opened.wait(15000));
        QCOMPARE(w->state()->config().lora.targets, mine);
        QVERIFY(w->state()->modelNote().isEmpty());
        QVERIFY(w->modelPage()->noteLabel()->isHidden());
        const QString file = dir.filePath(QStringLiteral("gpt2.tunebench"));
        QString error;
        QVERIFY2(w->saveProject(file, &error), qPrintable(error));
        tb::MainWindow other;  // starts on the bundled model's defaults
        QSignalSpy otherOpened(other.state(), &tb::StudioState::modelChanged);
        QVERIFY2(other.openProject(file, &error), qPrintable(error));
        QVERIFY(otherOpened.wait(15000));
        QCOMPARE(other.state()->modelPath(), gpt2);
        QCOMPARE(other.state()->config(), w->state()->config());
        QVERIFY(other.state()->modelNote().isEmpty());
        QCOMPARE(other.methodPage()->trainableParameters(),
                 tb::trainableParameterCount(model, w->state()->config()));
    }
    // The reset lists only what changed, with the placement and blocks it puts back.
    void modelSwitchListsOnlyWhatChanged()
    {
        const tb::ModelConfig llama = tb::loadModelConfig(kModel.toStdString());
        tb::TrainConfig c;
        c.lora.targets = tb::defaultLoraTargets(llama.architecture);
        c.data.chatTemplate = tb::ChatTemplateFamily::Alpaca;
        QVERIFY(tb::resetForModel(c, llama, false, tb::ChatTemplateFamily::Alpaca).empty());
        c.partial.trainableBlocks = 3;
        c.adapter.kind = tb::AdapterKind::Pfeiffer;
        c.adapter.size = 8;
        const auto resets = tb::resetForModel(c, llama, true, std::nullopt);
        QCOMPARE(resets.size(), size_t(4));
        QCOMPARE(resets[0], (tb::ConfigReset{QStringLiteral("partial trainable blocks"),
                                             QStringLiteral("3"), QStringLiteral("1")}));
        QCOMPARE(resets[1].after, QStringLiteral("houlsby"));
        QCOMPARE(resets[2].after, QStringLiteral("auto"));
        QCOMPARE(resets[3].after, QStringLiteral("model's own"));
        QCOMPARE(c.partial, tb::PartialOptions{});
        QVERIFY(c.adapter.kind == tb::AdapterKind::Houlsby && c.adapter.size == 0);
        QVERIFY(!c.data.chatTemplate);
        QCOMPARE(tb::modelSwitchNote(QStringLiteral("m"), llama, {}),
                 QStringLiteral("Opened m (Llama): every option already fits it, nothing reset"));
        // Prompt tuning's virtual tokens take places in the context before the text: the max
        // length left is the context less them (what training accepts).
        tb::ModelConfig small = llama;
        small.maxPositions = 64;
        c.method = tb::Method::Prompt;
        c.prompt.numTokens = 20;
        c.data.maxLength = 64;
        const auto prompt = tb::resetForModel(c, small, true, std::nullopt);
        QCOMPARE(prompt.size(), size_t(1));
        QCOMPARE(prompt[0].after, QStringLiteral("44 (its context of 64 less 20 virtual tokens)"));
        QCOMPARE(c.data.maxLength, 44);
        c.method = tb::Method::Lora;
        QVERIFY(tb::resetForModel(c, small, true, std::nullopt).empty());  // 44 fits 64
    }
    void wholeFlow()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        w->show();
        auto testers = testModels(w.get());
        w->methodPage()->chooseMethod(QStringLiteral("lora"));
        QVERIFY(w->memoryPage()->estimate());
        QCOMPARE(w->memoryPage()->estimate()->trainableParameters,
                 w->methodPage()->trainableParameters());

        // Start; measure the event loop's longest gap while training runs.
        w->showPage(QStringLiteral("Train"));
        tb::TrainPage* train = w->trainPage();
        QVERIFY(train->plots()->plannedPoints() > 0);
        QElapsedTimer clock;
        qint64 last = 0, worst = 0;
        QTimer tick;
        tick.setInterval(5);
        connect(&tick, &QTimer::timeout, this, [&] {
            const qint64 now = clock.elapsed();
            worst = std::max(worst, now - last);
            last = now;
        });
        QTest::mouseClick(train->startButton(), Qt::LeftButton);
        QVERIFY2(w->controller()->active(), qPrintable(train->logText()));
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Running);
        QTRY_VERIFY_WITH_TIMEOUT(train->plots()->lossPoints() >= 5, 30000);
        clock.start();
        tick.start();
        const int drainsBefore = w->controller()->drains();
        QTRY_VERIFY_WITH_TIMEOUT(train->plots()->lossPoints() >= 40, 30000);
        tick.stop();
        QVERIFY(train->plots()->memoryPoints() > 0);
        QVERIFY(train->plots()->lrPoints() > 0);
        QVERIFY2(worst < 250,
                 qPrintable(QStringLiteral("event loop blocked for %1 ms").arg(worst)));
        // Redraws are batched: at most one drain (and replot) per ~40 ms, whatever the step rate.
        const int drains = w->controller()->drains() - drainsBefore;
        QVERIFY2(drains <= clock.elapsed() / 35 + 2,
                 qPrintable(QStringLiteral("%1 drains in %2 ms").arg(drains).arg(clock.elapsed())));
        qInfo("training: %d steps plotted, %d drains in %lld ms, longest event-loop gap %lld ms",
              train->plots()->lossPoints(), drains, clock.elapsed(), worst);
        // The measured memory from the first step sits beside the estimate.
        QTRY_VERIFY_WITH_TIMEOUT(w->memoryPage()->categories().size() == 8, 10000);

        QTest::mouseClick(train->pauseButton(), Qt::LeftButton);
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Paused);
        QTest::qWait(300);
        const int paused = train->plots()->lossPoints();
        QTest::qWait(400);
        QCOMPARE(train->plots()->lossPoints(), paused);
        QTest::mouseClick(train->resumeButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(train->plots()->lossPoints() > paused + 5, 20000);
        QSignalSpy ended(w->controller(), &tb::TrainingController::ended);
        QTest::mouseClick(train->stopButton(), Qt::LeftButton);
        QVERIFY(ended.wait(30000));
        QCOMPARE(ended.first().at(0).toBool(), true);
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Finished);
        QCOMPARE(w->state()->runs().size(), 1);
        QVERIFY(train->history()->count() >= 1);
        QTemporaryDir plots;
        train->exportPlots(plots.path());
        QVERIFY(QFileInfo(plots.path() + QStringLiteral("/loss.png")).size() > 0);
        QVERIFY(QFileInfo(plots.path() + QStringLiteral("/metrics.csv")).size() > 0);
        // Overlay the finished run's curve from its metrics.jsonl.
        train->history()->item(0)->setCheckState(Qt::Checked);

        // Export a PEFT adapter.
        w->showPage(QStringLiteral("Export"));
        QSignalSpy exported(w->exportPage(), &tb::ExportPage::exportFinished);
        w->exportPage()->setFormat(QStringLiteral("peft"));
        w->exportPage()->setOutputDir(runs.path() + QStringLiteral("/adapter"));
        w->exportPage()->exportSelected();
        QVERIFY(exported.wait(30000));
        QVERIFY2(exported.first().at(0).toBool(), qPrintable(w->exportPage()->outcome().message));
        QVERIFY(QFileInfo::exists(runs.path() + QStringLiteral("/adapter/adapter_config.json")));
        // The same run as a GGUF file (f16): the page re-reads the header it wrote.
        exported.clear();
        w->exportPage()->setFormat(QStringLiteral("gguf"));
        w->exportPage()->setGgufDtype(QStringLiteral("f16"));
        w->exportPage()->setOutputDir(runs.path() + QStringLiteral("/gguf/run.gguf"));
        w->exportPage()->exportSelected();
        QVERIFY(exported.wait(30000));
        QVERIFY2(exported.first().at(0).toBool(), qPrintable(w->exportPage()->outcome().message));
        QVERIFY(QFileInfo(runs.path() + QStringLiteral("/gguf/run.gguf")).size() > 0);
        bool reread = false;
        for (const auto& [check, result] : w->exportPage()->outcome().results)
            reread = reread || (check.startsWith(QStringLiteral("Re-read header (GGUF v3")) &&
                                result.contains(QStringLiteral("valid")));
        QVERIFY(reread);
        // And as a llama.cpp LoRA adapter: the header must say it is one.
        exported.clear();
        w->exportPage()->setFormat(QStringLiteral("gguf-lora"));
        w->exportPage()->setGgufDtype(QStringLiteral("f32"));
        w->exportPage()->setOutputDir(runs.path() + QStringLiteral("/gguf/adapter.gguf"));
        w->exportPage()->exportSelected();
        QVERIFY(exported.wait(30000));
        QVERIFY2(exported.first().at(0).toBool(), qPrintable(w->exportPage()->outcome().message));
        const QString adapterFile = runs.path() + QStringLiteral("/gguf/adapter.gguf");
        QCOMPARE(tb::readGgufSummary(adapterFile.toStdString()).metadata.at("general.type"),
                 std::string("adapter"));

        // Playground: base and fine-tuned side by side, streamed.
        w->showPage(QStringLiteral("Playground"));
        tb::PlaygroundPage* play = w->playgroundPage();
        QCOMPARE(play->runBox()->currentData().toString(), w->state()->runs().first());
        QSignalSpy tokens(play, &tb::PlaygroundPage::tokenArrived);
        QSignalSpy done(play, &tb::PlaygroundPage::generationFinished);
        play->generate();
        QVERIFY(done.wait(30000));
        QVERIFY2(!done.first().at(0).toString().startsWith(QStringLiteral("Error")),
                 qPrintable(done.first().at(0).toString()));
        QVERIFY(tokens.size() > 2);
        bool base = false, tuned = false;
        for (const auto& args : tokens)
            (args.at(0).toInt() == 0 ? base : tuned) = true;
        QVERIFY(base && tuned);
        QVERIFY(!play->baseText().isEmpty() && !play->tunedText().isEmpty());

        // Closing while an export is written waits for it (the page cannot drop a half-written
        // folder), without holding the GUI thread: the window closes when it is complete.
        exported.clear();
        w->showPage(QStringLiteral("Export"));
        w->exportPage()->setFormat(QStringLiteral("merged"));
        w->exportPage()->setOutputDir(runs.path() + QStringLiteral("/merged-on-close"));
        w->exportPage()->exportSelected();
        if (w->exportPage()->busy()) {
            QVERIFY(!w->close());
            QVERIFY(w->isVisible());
            QVERIFY(w->statusBar()->currentMessage().contains(QStringLiteral("export")));
            QVERIFY(exported.wait(60000));
            QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), 10000);
        } else {  // finished before the close could meet it: the close goes through at once
            QVERIFY(w->close());
        }
        QVERIFY(QFileInfo::exists(runs.path() + QStringLiteral("/merged-on-close/config.json")));
    }
    // The Train page reads a snapshot of the project's store; the finished run records its id and
    // hash.
    void trainsFromStoreSnapshot()
    {
        QTemporaryDir dir;
        const std::string storePath = dir.filePath(QStringLiteral("project.tbstore")).toStdString();
        std::string sha;
        {
            auto store = tb::DataStore::open(storePath);
            std::vector<tb::NewRecord> records;
            for (int i = 0; i < 12; ++i) {
                tb::NewRecord r;
                r.kind = "alpaca";
                r.fields = {{"instruction", "Count to " + std::to_string(i)},
                            {"output", "Done " + std::to_string(i)}};
                records.push_back(r);
            }
            for (int64_t id : store->addRecords(records, 0, "test"))
                store->review(id, "ana", "accept");
            sha = tb::createSnapshot(*store, {}).sha256;
        }
        auto w = openWindow(dir.path() + QStringLiteral("/runs"));
        QVERIFY(w);
        w->state()->updateConfig([](tb::TrainConfig& c) {
            c.maxSteps = 3;
            c.evalEvery = 0;
            c.data.chatTemplate = tb::ChatTemplateFamily::Alpaca;
        });
        w->state()->setStorePath(QString::fromStdString(storePath));
        tb::TrainPage* train = w->trainPage();
        QSignalSpy listed(train->settingsForm(), &tb::TrainSettingsForm::snapshotsListed);
        train->useSnapshots(true);
        QVERIFY(listed.wait(10000));  // listed on a worker (snapshotsListedOnAWorker)
        QCOMPARE(train->snapshotBox()->currentText(), QStringLiteral("train-v1"));
        QCOMPARE(w->state()->config().data.store, storePath);
        QCOMPARE(w->state()->config().data.snapshot, std::string("train-v1"));
        QVERIFY(w->state()->config().data.trainFile.empty());
        QSignalSpy ended(w->controller(), &tb::TrainingController::ended);
        QVERIFY(train->startRun());
        QVERIFY(ended.wait(60000));
        QVERIFY2(ended.first().at(0).toBool(), qPrintable(ended.first().at(1).toString()));
        QFile info(w->controller()->runDir() + QStringLiteral("/run.json"));
        QVERIFY(info.open(QIODevice::ReadOnly));
        const auto j = nlohmann::json::parse(info.readAll().toStdString());
        QCOMPARE(j["data"]["snapshots"]["train"]["id"], nlohmann::json("train-v1"));
        QCOMPARE(j["data"]["snapshots"]["train"]["sha256"], nlohmann::json(sha));
        // Back to files: the config forgets the store.
        train->useSnapshots(false);
        QVERIFY(w->state()->config().data.store.empty());
        QVERIFY(!w->state()->config().data.trainFile.empty());
    }
    // Plots take their colours from the palette: under a dark palette every plot's canvas is dark.
    void plotsFollowThePalette()
    {
        const QPalette saved = QApplication::palette();
        QPalette dark = saved;
        dark.setColor(QPalette::Base, QColor(0x20, 0x22, 0x26));
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x31));
        dark.setColor(QPalette::Text, QColor(0xe8, 0xe8, 0xe8));
        QApplication::setPalette(dark);
        {
            tb::MainWindow w;
            w.resize(1200, 800);
            w.show();
            int plots = 0;
            for (QWidget* child : w.findChildren<QWidget*>()) {
                if (QByteArray(child->metaObject()->className()) != "QCustomPlot")
                    continue;
                child->resize(400, 300);
                const QImage image = child->grab().toImage();
                QCOMPARE(image.pixelColor(2, image.height() - 3).rgb(),
                         QColor(0x20, 0x22, 0x26).rgb());
                ++plots;
            }
            QVERIFY(plots >=
                    6);  // four training plots, the memory chart and the token-length histogram
        }
        QApplication::setPalette(saved);
    }
    void closingDuringTrainingStopsCleanly()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        w->show();
        QVERIFY(w->trainPage()->startRun());
        QTRY_VERIFY_WITH_TIMEOUT(w->trainPage()->plots()->lossPoints() > 0, 30000);
        // Edits typed on the Data page: answering Discard, then No to stopping the run, keeps
        // both (the edits were dropped before the run's question).
        const QString error =
            openAnnotatedStore(*w, runs.filePath(QStringLiteral("edits.tbstore")), 2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        w->dataPage()->selectRow(0);
        w->dataPage()
            ->editor()
            ->fieldEditor(QStringLiteral("output"))
            ->setPlainText(QStringLiteral("typed during training"));
        QVERIFY(w->dataPage()->hasUnsavedEdits());
        int editsAsked = 0;
        w->setUnsavedEditsQuestion([&editsAsked] {
            ++editsAsked;
            return int(QMessageBox::Discard);
        });
        int asked = 0;
        w->setCloseQuestion([&asked] {
            ++asked;
            return false;
        });
        QVERIFY(!w->close());
        QCOMPARE(asked, 1);
        QCOMPARE(editsAsked, 1);
        QVERIFY(w->controller()->active());
        QVERIFY(w->dataPage()->hasUnsavedEdits());
        QCOMPARE(w->dataPage()->editor()->fieldEditor(QStringLiteral("output"))->toPlainText(),
                 QStringLiteral("typed during training"));
        w->setCloseQuestion([&asked] {
            ++asked;
            return true;
        });
        w->close();
        QCOMPARE(asked, 2);
        QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), 30000);
        QCOMPARE(editsAsked, 2);  // once for this close, not again when the run had stopped
        QVERIFY(!w->dataPage()->hasUnsavedEdits());
        QVERIFY(!w->controller()->active());
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Finished);
    }
    // Closing with a record's fields typed and not saved asks: Cancel keeps the window and the
    // typing, Save writes them to the store and closes, Discard closes without writing.
    void closingWithUnsavedEditsAsks()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        const QString path = runs.filePath(QStringLiteral("edits.tbstore"));
        const QString error = openAnnotatedStore(*w, path, 3);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        w->show();
        int asked = 0;
        int answer = QMessageBox::Cancel;
        w->setUnsavedEditsQuestion([&] {
            ++asked;
            return answer;
        });
        QVERIFY(w->close());  // nothing typed: no question
        QCOMPARE(asked, 0);
        w->show();
        const auto check = tb::DataStore::open(path.toStdString(), false);
        const auto typeInto = [&](int row, const QString& text) {
            w->dataPage()->selectRow(row);
            w->dataPage()->editor()->fieldEditor(QStringLiteral("output"))->setPlainText(text);
            return w->dataPage()->currentRecordId();
        };
        const qint64 first = typeInto(0, QStringLiteral("typed before closing"));
        QVERIFY(!w->close());
        QCOMPARE(asked, 1);
        QVERIFY(w->isVisible());
        QVERIFY(w->dataPage()->hasUnsavedEdits());
        answer = QMessageBox::Save;
        QVERIFY(w->close());
        QCOMPARE(asked, 2);
        QCOMPARE(check->record(first).fields["output"].get<std::string>(),
                 std::string("typed before closing"));

        w->show();
        const qint64 second = typeInto(1, QStringLiteral("typed and dropped"));
        const auto kept = check->record(second).fields["output"];
        answer = QMessageBox::Discard;
        QVERIFY(w->close());
        QCOMPARE(asked, 3);
        QVERIFY(!w->dataPage()->hasUnsavedEdits());
        QCOMPARE(check->record(second).fields["output"], kept);

        // A data job running: the close cancels it and the window stays, saying so, until the
        // job has stopped (it would otherwise hide while the process kept the store).
        w->show();
        std::atomic<int> checks{0};
        QVERIFY(startHoldingJob(w->dataPage()->jobs(), checks));
        QVERIFY(!w->close());
        QVERIFY(w->isVisible());
        QVERIFY2(w->statusBar()->currentMessage().contains(QStringLiteral("Closing when Hold")),
                 qPrintable(w->statusBar()->currentMessage()));
        QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), 10000);
        QCOMPARE(checks.load(), 1);
        QVERIFY(!w->dataPage()->jobs()->busy());

        // Save while a data job holds the store: the job is cancelled, and the edits are saved
        // once it has stopped (saving first was refused while the job ran, so the close never
        // went through).
        w->show();
        const qint64 third = typeInto(2, QStringLiteral("typed while a job ran"));
        QVERIFY(startHoldingJob(w->dataPage()->jobs(), checks));
        answer = QMessageBox::Save;
        QVERIFY(!w->close());
        QCOMPARE(asked, 4);
        QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), 10000);
        QCOMPARE(asked, 4);  // asked once for the whole close
        QCOMPARE(checks.load(), 2);
        QCOMPARE(check->record(third).fields["output"].get<std::string>(),
                 std::string("typed while a job ran"));
    }
    // One owner, no echo: the Train page's own change reaches the state (configChanged, origin: the
    // form) but the form does not rewrite its widgets, so an edit in progress elsewhere on it
    // survives; a change from another page does update it. The Method page keeps its own
    // uncommitted edit the same way.
    void pagesDoNotRewriteThemselvesOnTheirOwnChange()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        tb::TrainSettingsForm* form = w->trainPage()->settingsForm();
        QSignalSpy changed(w->state(), &tb::StudioState::configChanged);
        const int rewrites = form->widgetRewrites();
        const QString typing = QStringLiteral("/typed/but/not/committed.jsonl");
        form->trainFileEdit()->setText(typing);  // no editingFinished: not in the config yet
        form->trainFileEdit()->setCursorPosition(3);
        form->maxStepsBox()->setValue(123);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.first().at(0).value<QObject*>(), static_cast<QObject*>(form));
        QCOMPARE(w->state()->config().maxSteps, int64_t(123));
        QCOMPARE(form->widgetRewrites(), rewrites);
        QCOMPARE(form->trainFileEdit()->text(), typing);
        QCOMPARE(form->trainFileEdit()->cursorPosition(), 3);

        // Another page (Memory: micro-batch 2^3) updates the form.
        changed.clear();
        w->memoryPage()->batchSlider()->setValue(3);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.first().at(0).value<QObject*>(), static_cast<QObject*>(w->memoryPage()));
        QCOMPARE(w->state()->config().batchSize, 8);
        QCOMPARE(form->batchBox()->value(), 8);
        QCOMPARE(form->widgetRewrites(), rewrites + 1);
        // And a change from outside every page (no origin).
        w->state()->updateConfig([](tb::TrainConfig& c) { c.maxSteps = 77; });
        QCOMPARE(form->maxStepsBox()->value(), 77);
        QCOMPARE(form->widgetRewrites(), rewrites + 2);

        // The Method page: its LoRA rank change leaves its other fields alone (here a text field's
        // cursor, which rewriting it would move to the end).
        w->methodPage()->chooseMethod(QStringLiteral("lora"));
        w->methodPage()->promptInitEdit()->setText(QStringLiteral("half typed"));
        w->methodPage()->promptInitEdit()->setCursorPosition(4);
        changed.clear();
        w->methodPage()->loraRankBox()->setValue(12);
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.first().at(0).value<QObject*>(), static_cast<QObject*>(w->methodPage()));
        QCOMPARE(w->state()->config().lora.rank, 12);
        QCOMPARE(w->methodPage()->promptInitEdit()->text(), QStringLiteral("half typed"));
        QCOMPARE(w->methodPage()->promptInitEdit()->cursorPosition(), 4);
    }
    // The snapshot list comes from a worker: nothing is read on the GUI thread, and of several
    // requests in flight only the newest is shown.
    void snapshotsListedOnAWorker()
    {
        QTemporaryDir dir;
        const std::string storePath = dir.filePath(QStringLiteral("project.tbstore")).toStdString();
        {
            auto store = tb::DataStore::open(storePath);
            std::vector<tb::NewRecord> records(6);
            for (size_t i = 0; i < records.size(); ++i) {
                records[i].kind = "alpaca";
                records[i].fields = {{"instruction", "Say " + std::to_string(i)},
                                     {"output", std::to_string(i)}};
            }
            for (int64_t id : store->addRecords(records, 0, "test"))
                store->review(id, "ana", "accept");
            tb::createSnapshot(*store, {});
        }
        auto w = openWindow(dir.path() + QStringLiteral("/runs"));
        QVERIFY(w);
        tb::TrainSettingsForm* form = w->trainPage()->settingsForm();
        QSignalSpy listed(form, &tb::TrainSettingsForm::snapshotsListed);
        w->state()->setStorePath(
            QString::fromStdString(storePath));  // a listing (files mode still)
        form->useSnapshots(true);                // another
        form->refreshSnapshots();                // and the newest
        QVERIFY(form->listingSnapshots());
        QCOMPARE(form->snapshotBox()->count(), 0);  // not read here: it is on its way
        QVERIFY(listed.wait(10000));
        QTest::qWait(200);
        QCOMPARE(listed.size(), 1);  // the older requests were superseded
        QCOMPARE(form->snapshotBox()->count(), 1);
        QCOMPARE(form->snapshotBox()->currentText(), QStringLiteral("train-v1"));
        QCOMPARE(w->state()->config().data.snapshot, std::string("train-v1"));
        // A second snapshot frozen elsewhere shows up, newest first, on the next listing.
        {
            auto store = tb::DataStore::open(storePath);
            tb::createSnapshot(*store, {});
        }
        form->refreshSnapshots();
        QVERIFY(listed.wait(10000));
        QCOMPARE(form->snapshotBox()->count(), 2);
        QCOMPARE(form->snapshotBox()->itemText(0), QStringLiteral("train-v2"));
        QCOMPARE(form->snapshotBox()->currentText(),
                 QStringLiteral("train-v1"));  // the config's choice stays
    }
    // A long generation streams in ~40 ms batches (far fewer drains than tokens), and the text
    // shown is exactly core's generate() for the same prompt and options.
    void playgroundStreamsInBatches()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        tb::PlaygroundPage* play = w->playgroundPage();
        play->runBox()->setCurrentIndex(0);       // base only
        play->templateBox()->setCurrentIndex(0);  // raw text
        play->greedyBox()->setChecked(true);
        play->maxTokensBox()->setValue(400);
        const QString prompt =
            QStringLiteral("Once upon a time, there was a little girl named Lily.");
        play->setPrompt(prompt);
        QSignalSpy tokens(play, &tb::PlaygroundPage::tokenArrived);
        QSignalSpy done(play, &tb::PlaygroundPage::generationFinished);
        const int drainsBefore = play->controller()->drains();
        play->generate();
        QVERIFY(play->busy());
        QVERIFY(done.wait(60000));
        QVERIFY2(!done.first().at(0).toString().startsWith(QStringLiteral("Error")),
                 qPrintable(done.first().at(0).toString()));
        QVERIFY(!play->busy());
        const int drains = play->controller()->drains() - drainsBefore;
        qInfo("generation: %lld tokens in %d drains", qlonglong(tokens.size()), drains);
        QVERIFY2(tokens.size() >= 50, qPrintable(QString::number(tokens.size())));
        QVERIFY2(
            drains * 4 <= tokens.size(),
            qPrintable(QStringLiteral("%1 drains for %2 tokens").arg(drains).arg(tokens.size())));
        QCOMPARE(play->tokensStreamed(), int(tokens.size()));

        const auto model = tb::Model::load(kModel.toStdString(), {"fp32", "auto"});
        const auto tokenizer = tb::loadTokenizer(kModel.toStdString());
        tb::GenerateOptions options;
        options.maxNewTokens = 400;
        options.greedy = true;
        const tb::GenerateResult expected = model->generate(
            tokenizer->encode(prompt.toStdString(), true), options, tokenizer.get());
        QCOMPARE(play->baseText(), QString::fromStdString(expected.text));
        // The model was loaded on the worker and handed over in a batch: the next generation reuses
        // it.
        done.clear();
        play->generate();
        QVERIFY(done.wait(60000));
        QCOMPARE(play->baseText(), QString::fromStdString(expected.text));
    }
    // A drain's plan, steps and evals redraw the plots once (one rescale, one queued replot).
    void oneReplotPerDrain()
    {
        tb::MainWindow w;
        tb::TrainPlots* plots = w.trainPage()->plots();
        QTRY_VERIFY(!plots->replotPending());
        tb::JobEventBatch batch;
        batch.plan = tb::RunPlan{};
        batch.plan->totalSteps = 100;
        batch.plan->schedule = std::vector<double>(100, 1e-3);
        for (int i = 1; i <= 30; ++i) {
            tb::StepMetrics m;
            m.step = i;
            m.totalSteps = 100;
            m.loss = 3.0 - 0.01 * i;
            m.lr = 1e-3;
            batch.steps.push_back(m);
        }
        for (int step : {10, 20, 30}) {
            tb::EvalMetrics e;
            e.step = step;
            e.valLoss = 2.9;
            batch.evals.push_back(e);
        }
        for (int drain = 0; drain < 3; ++drain) {
            const int before = plots->replots();
            Q_EMIT w.controller()->eventsArrived(batch);
            QCOMPARE(plots->replots(), before);  // deferred to the event loop
            QVERIFY(plots->replotPending());
            QTRY_VERIFY(!plots->replotPending());
            QCOMPARE(plots->replots() - before, 1);
            batch.plan.reset();
        }
        QCOMPARE(plots->lossPoints(), 90);
        QCOMPARE(plots->valPoints(), 9);
        QCOMPARE(plots->plannedPoints(), 100);
    }
    // The same during a real run: never more replots than drains (plus the start's clear and plan).
    void liveRunReplotsAtMostOncePerDrain()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        w->state()->updateConfig([](tb::TrainConfig& c) {
            c.maxSteps = 60;
            c.evalEvery = 20;
        });
        tb::TrainPlots* plots = w->trainPage()->plots();
        QTRY_VERIFY(!plots->replotPending());
        const int replotsBefore = plots->replots(), drainsBefore = w->controller()->drains();
        QSignalSpy ended(w->controller(), &tb::TrainingController::ended);
        QVERIFY(w->trainPage()->startRun());
        QVERIFY(ended.wait(60000));
        QTRY_VERIFY(!plots->replotPending());
        const int replots = plots->replots() - replotsBefore,
                  drains = w->controller()->drains() - drainsBefore;
        qInfo("run: %d drains, %d replots", drains, replots);
        QCOMPARE(plots->lossPoints(), 60);
        QVERIFY2(replots <= drains + 1,
                 qPrintable(QStringLiteral("%1 replots for %2 drains").arg(replots).arg(drains)));
    }
    // The Processes box: the keyboard reaches StudioState (processes, GPUs, the config's
    // dist.zero); the checked GPUs bound the processes and become CUDA_VISIBLE_DEVICES.
    void processesAndGpusOnTheTrainPage()
    {
        tb::MainWindow w;
        w.show();
        w.showPage(QStringLiteral("Train"));
        tb::TrainLaunchBox* box = w.trainPage()->settingsForm()->launchBox();
        tb::StudioState* state = w.state();
        box->setCudaDevices(0);
        QCOMPARE(state->launch().processes, 1);
        QVERIFY(!box->gpuList()->isVisible());  // no CUDA device: no GPU list
        QVERIFY(!box->zeroBox()->isEnabled());  // one process ignores ZeRO
        QSignalSpy launchChanged(state, &tb::StudioState::launchChanged);
        QSignalSpy configChanged(state, &tb::StudioState::configChanged);
        QTest::keyClick(box->processesBox(), Qt::Key_Up);
        QCOMPARE(state->launch().processes, 2);
        QCOMPARE(launchChanged.size(), 1);
        QCOMPARE(launchChanged.first().at(0).value<QObject*>(), box);  // its own change
        QVERIFY(box->zeroBox()->isEnabled());
        QTest::keyClick(box->zeroBox(), Qt::Key_Down);
        QTest::keyClick(box->zeroBox(), Qt::Key_Down);
        QCOMPARE(state->config().dist.zero, 2);
        QCOMPARE(configChanged.size(), 2);
        // A change from outside (a project, the CLI's config) reaches the box.
        state->updateConfig([](tb::TrainConfig& c) { c.dist.zero = 1; });
        QCOMPARE(box->zeroBox()->currentData().toInt(), 1);
        state->setLaunch({1, {}});
        QCOMPARE(box->processesBox()->value(), 1);
        QTest::keyClick(box->processesBox(), Qt::Key_Up);

        // Four GPUs, all checked: up to four processes (the two chosen stay); unchecking 1 and 3
        // leaves two.
        box->setCudaDevices(4);
        QVERIFY(box->gpuList()->isVisible());
        QCOMPARE(box->gpuList()->count(), 4);
        QCOMPARE(box->processesBox()->maximum(), 4);
        QCOMPARE(state->launch().processes, 2);
        QCOMPARE(state->launch().gpus, (QList<int>{0, 1, 2, 3}));
        toggleGpu(box, 1);
        toggleGpu(box, 3);
        QCOMPARE(state->launch().gpus, (QList<int>{0, 2}));
        QCOMPARE(box->processesBox()->maximum(), 2);
        for (int i = 0; i < 3; ++i)
            QTest::keyClick(box->processesBox(), Qt::Key_Up);
        QCOMPARE(state->launch().processes, 2);  // bounded by the checked GPUs
        const tb::LaunchCommand command = tb::buildLaunchCommand(
            state->launch(), w.controller()->launcherPath(), QStringLiteral("/r/c.json"));
        QCOMPARE(command.environment, QStringList{QStringLiteral("CUDA_VISIBLE_DEVICES=0,2")});
        QCOMPARE(command.program, QCoreApplication::applicationDirPath() +
                                      QStringLiteral("/tunebench"));  // beside the executable
        toggleGpu(box, 2);                                            // one GPU left: one process
        QCOMPARE(box->processesBox()->maximum(), 1);
        QCOMPARE(state->launch().processes, 1);
        QCOMPARE(state->launch().gpus, QList<int>{0});
        QVERIFY(!box->zeroBox()->isEnabled());
        box->setCudaDevices(0);
    }
    // Two processes through a stand-in launcher with known values: Start starts it with the run
    // config it wrote; the plots get rank 0's losses and one memory series per rank; the rows per
    // rank, the merged log and its rank filter; Pause is off for a launched run.
    void launchedRunStreamsIntoThePage()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        w->show();
        w->showPage(QStringLiteral("Train"));
        w->controller()->setLauncherPath(tbtest::writeStandInLauncher(runs.path()));
        w->controller()->setLaunchEnvironment({QStringLiteral("OMP_NUM_THREADS=1")});
        tb::TrainPage* train = w->trainPage();
        chooseTwoProcesses(w.get());
        QTest::keyClick(train->settingsForm()->launchBox()->zeroBox(), Qt::Key_Down);  // ZeRO 1
        QSignalSpy ended(w->controller(), &tb::TrainingController::ended);
        QTest::mouseClick(train->startButton(), Qt::LeftButton);
        QVERIFY2(w->controller()->launched(), qPrintable(train->logText()));
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Running);
        QVERIFY(!train->pauseButton()->isEnabled());
        QVERIFY(train->stopButton()->isEnabled());
        QVERIFY(train->runPanel()->rankProgress()->isVisible());
        QVERIFY(train->runPanel()->logFilter()->isVisible());
        QVERIFY(ended.wait(30000));
        QVERIFY2(ended.first().at(0).toBool(), qPrintable(ended.first().at(1).toString()));
        QCOMPARE(ended.first().at(1).toString(), QStringLiteral("Finished 6 steps."));
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Finished);
        const QString runDir = w->controller()->runDir();
        QVERIFY(w->state()->runs().contains(runDir));

        // What the launcher got: the command, the environment, the config core checked.
        QCOMPARE(fileText(runDir + QStringLiteral("/argv.txt")),
                 QStringLiteral("train --nproc 2 --config ") + runDir +
                     QStringLiteral("/launch-config.json"));
        QCOMPARE(fileText(runDir + QStringLiteral("/omp.txt")), QStringLiteral("1"));
        const tb::TrainConfig sent = tb::loadTrainConfig(
            QString(runDir + QStringLiteral("/launch-config.json")).toStdString());
        QCOMPARE(sent.dist.zero, 1);
        QCOMPARE(QString::fromStdString(sent.outputDir + "/" + sent.name), runDir);
        QCOMPARE(sent.batchSize, 4);  // per rank, as the form shows it

        // The plots: rank 0's losses in order, the plan from run.json, one memory series per rank.
        tb::TrainPlots* plots = train->plots();
        QTRY_VERIFY(!plots->replotPending());
        std::vector<std::pair<double, double>> losses, memory0, memory1;
        for (int s = 1; s <= 6; ++s) {
            losses.emplace_back(s, tbtest::kStandInLosses[s - 1]);
            memory0.emplace_back(s, 10.0 + s);
            memory1.emplace_back(s, 11.0 + s);
        }
        QCOMPARE(plots->lossSeries(), losses);  // exact: the same decimal text, parsed once
        QCOMPARE(plots->lrPoints(), 6);
        QCOMPARE(plots->plannedPoints(), 6);
        QCOMPARE(plots->rankMemoryGraphs(), 2);
        QCOMPARE(plots->rankMemorySeries(0), memory0);
        QCOMPARE(plots->rankMemorySeries(1), memory1);
        QCOMPARE(train->runPanel()->rankProgress()->rowCount(), 2);
        QCOMPARE(train->runPanel()->rankProgress()->stepOf(0), qint64(6));
        QCOMPARE(train->runPanel()->rankProgress()->stepOf(1), qint64(6));

        // The merged log keeps the prefixes; the filter shows one rank, or the launcher.
        const QString all = train->logText();
        QVERIFY2(all.contains(QStringLiteral("step 6/6  loss 1.25")), qPrintable(all));
        QVERIFY(all.contains(QStringLiteral("[rank 1] tunebench: warning: rank 1 note 6")));
        QComboBox* filter = train->runPanel()->logFilter();
        filter->setCurrentIndex(filter->findData(1));
        QVERIFY(train->logText().contains(
            QStringLiteral("[rank 1] tunebench: warning: rank 1 note 3")));
        QVERIFY(!train->logText().contains(QStringLiteral("step 3/6")));
        QVERIFY(train->logText().contains(QStringLiteral("Finished 6 steps.")));  // the page's own
        filter->setCurrentIndex(filter->findData(0));
        QVERIFY(train->logText().contains(QStringLiteral("step 3/6")));
        QVERIFY(!train->logText().contains(QStringLiteral("[rank 1]")));
        filter->setCurrentIndex(0);
        QCOMPARE(train->logText(), all);
    }
    // Stop sends SIGINT: the launcher stops after the current step (every step it recorded is
    // plotted), and Stop again is the forced stop. A failing rank ends the run with the launcher's
    // message; a missing launcher does not start.
    void launchedRunStopsAndFails()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        w->show();
        w->showPage(QStringLiteral("Train"));
        w->controller()->setLauncherPath(tbtest::writeStandInLauncher(runs.path()));
        tb::TrainPage* train = w->trainPage();
        chooseTwoProcesses(w.get());
        QSignalSpy ended(w->controller(), &tb::TrainingController::ended);
        QTest::mouseClick(train->startButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(train->plots()->lossPoints() >= 1, 10000);
        QTest::mouseClick(train->stopButton(), Qt::LeftButton);
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Stopping);
        QCOMPARE(w->controller()->launchedRun()->stopRequests(), 1);
        QVERIFY(train->stopButton()->isEnabled());
        QCOMPARE(train->stopButton()->text(), QStringLiteral("Force stop"));
        QVERIFY(ended.wait(10000));
        QVERIFY2(ended.first().at(0).toBool(), qPrintable(ended.first().at(1).toString()));
        const int stoppedAt =
            int(tb::readRunMetrics(w->controller()->runDir().toStdString()).steps.size());
        QVERIFY2(stoppedAt >= 1 && stoppedAt < 6, qPrintable(QString::number(stoppedAt)));
        QCOMPARE(ended.first().at(1).toString(),
                 QStringLiteral("Stopped at step %1.").arg(stoppedAt));
        QCOMPARE(train->plots()->lossPoints(), stoppedAt);
        QVERIFY(train->logText().contains(QStringLiteral("[launch] Ctrl-C")));
        QCOMPARE(train->stopButton()->text(), QStringLiteral("Stop"));

        ended.clear();
        w->controller()->setLaunchEnvironment({QStringLiteral("FAKE_FAIL=1")});
        QTest::mouseClick(train->startButton(), Qt::LeftButton);
        QVERIFY(ended.wait(10000));
        QCOMPARE(ended.first().at(0).toBool(), false);
        QCOMPARE(ended.first().at(1).toString(),
                 QStringLiteral("rank 1 exited with status 1: [rank 1] tunebench: dist: rank 0 did "
                                "not answer within 60 s"));
        QCOMPARE(w->state()->jobState(), tb::StudioJobState::Failed);
        QVERIFY(train->logText().contains(QStringLiteral("Failed: rank 1 exited with status 1")));
        QCOMPARE(train->plots()->lossPoints(), 2);

        w->controller()->setLauncherPath(runs.path() + QStringLiteral("/no-such-tunebench"));
        QTest::mouseClick(train->startButton(), Qt::LeftButton);
        QVERIFY(!w->controller()->active());
        QVERIFY(train->logText().contains(QStringLiteral("Cannot start: ") + runs.path() +
                                          QStringLiteral("/no-such-tunebench not found")));
        QVERIFY(!QFileInfo::exists(w->controller()->runDir()));  // no folder left behind
    }
    // The real thing: two ranks of `tunebench train --nproc 2` (Gloo, one thread each) on the
    // bundled model with lora-tiny.json's settings for 3 steps; the plots hold rank 0's losses of
    // metrics.jsonl and each rank's memory of its own file; run.json says world_size 2.
    void launchedRunOfTwoRealProcesses()
    {
        QTemporaryDir runs;
        auto w = openWindow(runs.path());
        QVERIFY(w);
        w->show();
        w->showPage(QStringLiteral("Train"));
        tb::TrainConfig c = tb::loadTrainConfig(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json");
        c.outputDir = runs.path().toStdString();
        c.maxSteps = 3;
        c.evalEvery = 0;
        w->state()->setConfig(c);
        w->controller()->setLaunchEnvironment({QStringLiteral("OMP_NUM_THREADS=1")});
        chooseTwoProcesses(w.get());
        tb::TrainPage* train = w->trainPage();
        QSignalSpy ended(w->controller(), &tb::TrainingController::ended);
        QTest::mouseClick(train->startButton(), Qt::LeftButton);
        QVERIFY2(w->controller()->launched(), qPrintable(train->logText()));
        QVERIFY(ended.wait(300000));
        QVERIFY2(ended.first().at(0).toBool(),
                 qPrintable(ended.first().at(1).toString() + QLatin1Char('\n') + train->logText()));
        const QString runDir = w->controller()->runDir();
        const tb::RunMetrics metrics = tb::readRunMetrics(runDir.toStdString());
        QCOMPARE(metrics.steps.size(), size_t(3));
        QTRY_VERIFY(!train->plots()->replotPending());
        std::vector<std::pair<double, double>> losses;
        for (const tb::StepMetrics& m : metrics.steps)
            losses.emplace_back(double(m.step), m.loss);
        QCOMPARE(train->plots()->lossSeries(), losses);  // exact: the same JSON text
        QCOMPARE(train->plots()->rankMemoryGraphs(), 2);
        QCOMPARE(train->plots()->rankMemorySeries(0),
                 memoryOfSteps(runDir + QStringLiteral("/metrics.jsonl")));
        const auto rank1 = memoryOfSteps(runDir + QStringLiteral("/ranks/rank-1.jsonl"));
        QCOMPARE(rank1.size(), size_t(3));
        QVERIFY(rank1.back().second > 0);
        QCOMPARE(train->plots()->rankMemorySeries(1), rank1);
        const auto info = nlohmann::json::parse(
            tb::readFile(QString(runDir + QStringLiteral("/run.json")).toStdString()));
        QCOMPARE(info["dist"]["world_size"], nlohmann::json(2));
        QCOMPARE(info["dist"]["backend"], nlohmann::json("gloo"));
        QVERIFY2(train->logText().contains(QStringLiteral("step 3/3")),
                 qPrintable(train->logText()));
        QCOMPARE(train->runPanel()->rankProgress()->stepOf(1), qint64(3));
    }
};

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
