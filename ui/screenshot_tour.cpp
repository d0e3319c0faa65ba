// ScreenshotTour: one step per page, each waiting on the signal that says the page is ready.
#include "screenshot_tour.h"

#include "data_jobs.h"
#include "data_page.h"
#include "data_panels.h"
#include "eval_settings_panel.h"
#include "evaluate_page.h"
#include "export_page.h"
#include "main_window.h"
#include "method_page.h"
#include "model_page.h"
#include "playground_page.h"
#include "record_table_model.h"
#include "studio_state.h"
#include "train_page.h"
#include "train_plots.h"
#include "training_controller.h"

#include <QApplication>
#include <QDir>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>

#include <cstdio>
#include <utility>

namespace tb {

ScreenshotTour::ScreenshotTour(MainWindow* window, QString dir, QObject* parent)
    : QObject(parent), m_window(window), m_dir(std::move(dir))
{
    QDir().mkpath(m_dir);
}

void ScreenshotTour::begin()
{
    m_window->state()->updateConfig([this](TrainConfig& c) {
        c.outputDir = m_runs.path().toStdString();
        c.maxSteps = 150;
        c.evalEvery = 25;
        c.eval.generateEvery = 15;  // the Train page's generation-eval plot has points
        c.eval.sample = 8;
        c.eval.maxNewTokens = 32;
        c.eval.metrics = {"f1", "bleu", "rougeL"};
    });
    once(m_window->modelPage(), &ModelPage::modelOpened,
         [this] { later([this] { modelShot(); }); });
}

void ScreenshotTour::later(std::function<void()> f, int ms)
{
    QTimer::singleShot(ms, this, std::move(f));
}

void ScreenshotTour::shot(const QString& page, const QString& file)
{
    m_window->showPage(page);
    QApplication::processEvents();
    const QString path = m_dir + QLatin1Char('/') + file;
    const bool ok = m_window->grab().save(path);
    std::printf("%s %s\n", ok ? "wrote" : "FAILED", qPrintable(path));
    m_ok = m_ok && ok;
}

void ScreenshotTour::modelShot()
{
    m_window->methodPage()->chooseMethod(QStringLiteral("lora"));
    m_window->showPage(QStringLiteral("Model"));
    later([this] {
        shot(QStringLiteral("Model"), QStringLiteral("model.png"));
        dataShot();
    });
}

void ScreenshotTour::dataShot()
{
    // The example store in a throwaway folder, a few records reviewed by two annotators, token
    // statistics.
    DataPage* page = m_window->dataPage();
    // The table reads its ids on a worker: review once they are in.
    once(page, &DataPage::storeOpened, [this, page] {
        once(page->model(), &RecordTableModel::idsLoaded, [this, page] { reviewAndStats(page); });
    });
    // Before the page is shown, so its first visit does not open the user's own store.
    page->openBundledStore(m_runs.path() + QStringLiteral("/tiny.tbstore"));
    m_window->showPage(QStringLiteral("Data"));
}

void ScreenshotTour::reviewAndStats(DataPage* page)
{
    page->setAdvanceAfterDecision(true);
    // (annotator, decisions for the first ten records: a accept, r reject); they disagree on one.
    for (const auto& [name, decisions] :
         {std::pair{"ana", "aararaaara"}, std::pair{"ben", "aararaaaaa"}}) {
        page->setAnnotator(QString::fromLatin1(name));
        page->selectRow(0);
        for (int i = 0; decisions[i]; ++i) {
            page->reviewCurrent(QString(), i % 5 + 1);
            page->reviewCurrent(decisions[i] == 'a' ? QStringLiteral("accept")
                                                    : QStringLiteral("reject"));
        }
    }
    page->selectRow(3);
    page->sideTabs()->setCurrentWidget(page->statsPanel());
    // A max length inside the distribution shows the truncated count; the run's 96 comes back
    // after.
    const int runMaxLength = page->statsPanel()->maxLength();
    page->statsPanel()->setMaxLength(75);
    once(page->jobs(), &DataJobs::finished, [this, page, runMaxLength] {
        later([this, page, runMaxLength] {
            shot(QStringLiteral("Data"), QStringLiteral("data.png"));
            page->statsPanel()->setMaxLength(runMaxLength);
            methodShot();
        });
    });
    if (!page->statsPanel()->compute())
        fail("token statistics did not start");
}

void ScreenshotTour::methodShot()
{
    m_window->showPage(QStringLiteral("Method"));
    later([this] {
        shot(QStringLiteral("Method"), QStringLiteral("method.png"));
        m_window->showPage(QStringLiteral("Memory"));
        later([this] { trainShot(); });
    });
}

void ScreenshotTour::trainShot()
{
    shot(QStringLiteral("Memory"), QStringLiteral("memory.png"));
    m_window->showPage(QStringLiteral("Train"));
    TrainPage* train = m_window->trainPage();
    if (!train->startRun())
        return fail("the run did not start");
    // A run in progress: wait for ~60 steps, then picture it, then stop.
    auto conn = std::make_shared<QMetaObject::Connection>();
    *conn = QObject::connect(m_window->controller(), &TrainingController::eventsArrived, this,
                             [this, train, conn] {
                                 if (train->plots()->lossPoints() < 60)
                                     return;
                                 QObject::disconnect(*conn);
                                 shot(QStringLiteral("Train"), QStringLiteral("train.png"));
                                 once(m_window->controller(), &TrainingController::ended,
                                      [this] { later([this] { memoryAfterRun(); }); });
                                 m_window->controller()->stop();
                             });
}

void ScreenshotTour::memoryAfterRun()
{
    shot(QStringLiteral("Memory"), QStringLiteral("memory-measured.png"));
    m_window->showPage(QStringLiteral("Export"));
    once(m_window->exportPage(), &ExportPage::exportFinished,
         [this] { later([this] { exportShot(); }); });
    m_window->exportPage()->setFormat(QStringLiteral("merged"));
    m_window->exportPage()->exportSelected();
}

void ScreenshotTour::exportShot()
{
    shot(QStringLiteral("Export"), QStringLiteral("export.png"));
    m_window->showPage(QStringLiteral("Playground"));
    once(m_window->playgroundPage(), &PlaygroundPage::generationFinished,
         [this] { later([this] { playgroundShot(); }); });
    m_window->playgroundPage()->generate();
}

void ScreenshotTour::playgroundShot()
{
    shot(QStringLiteral("Playground"), QStringLiteral("playground.png"));
    evaluateShot();
}

void ScreenshotTour::evaluateShot()
{
    // The tour's run against the base model on the first cases of its validation split.
    const QStringList runs = m_window->state()->runs();
    if (runs.isEmpty())
        return fail("no run to evaluate");
    EvaluatePage* page = m_window->evaluatePage();
    EvalSettingsPanel* settings = page->settings();
    settings->setRunChecked(runs.last(), true);
    settings->setSource(EvalSettingsPanel::RunSplit);
    settings->limitBox()->setValue(24);
    settings->maxTokensBox()->setValue(32);
    settings->setMetrics({QStringLiteral("exact_match"), QStringLiteral("f1"),
                          QStringLiteral("bleu"), QStringLiteral("rougeL")});
    m_window->showPage(QStringLiteral("Evaluate"));
    once(page, &EvaluatePage::evaluationFinished, [this] {
        later([this] {
            shot(QStringLiteral("Evaluate"), QStringLiteral("evaluate.png"));
            QApplication::exit(m_ok ? 0 : 1);
        });
    });
    if (!page->evaluate())
        fail("the evaluation did not start");
}

void ScreenshotTour::fail(const char* why)
{
    std::printf("screenshot tour failed: %s\n", why);
    QApplication::exit(1);
}

void saveWindowWhenOpen(MainWindow* window, const QString& file)
{
    QObject::connect(window->modelPage(), &ModelPage::modelOpened, window, [window, file] {
        QTimer::singleShot(200, window, [window, file] {
            const bool ok = window->grab().save(file);
            QApplication::exit(ok ? 0 : 1);
        });
    });
}

}  // namespace tb
