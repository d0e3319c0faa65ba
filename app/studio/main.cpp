// tunebench-studio: the Qt desktop workbench; opens the bundled model and dataset (or the model folder or
// .tunebench project given) at start, so a new user can press Start at once.
// --screenshot FILE.png: render the window once the model is open, save it and quit.
// --screenshots DIR: visit every page in a realistic state (a run in progress on the Train page, an export,
// a generation, reviewed records on the Data page) and write DIR/{model,data,method,memory,train,playground,
// export}.png (docs).
#include "data_jobs.h"
#include "data_page.h"
#include "data_panels.h"
#include "export_page.h"
#include "main_window.h"
#include "memory_page.h"
#include "method_page.h"
#include "model_page.h"
#include "playground_page.h"
#include "record_table_model.h"
#include "studio_state.h"
#include "train_page.h"
#include "train_plots.h"
#include "training_controller.h"

#include "util/paths.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QStyleFactory>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <functional>

namespace {

// Drives the pages one after another, saving a picture of each; quits when done (exit 1 on a failure).
class ScreenshotTour : public QObject {
public:
    ScreenshotTour(tb::MainWindow* w, QString dir) : m_w(w), m_dir(std::move(dir)) { QDir().mkpath(m_dir); }

    void begin()
    {
        m_w->state()->updateConfig([this](tb::TrainConfig& c) {
            c.outputDir = m_runs.path().toStdString();
            c.maxSteps = 150;
            c.evalEvery = 25;
        });
        once(m_w->modelPage(), &tb::ModelPage::modelOpened, [this] { later([this] { modelShot(); }); });
    }

private:
    template <class Sender, class Signal, class F> void once(Sender* s, Signal signal, F f)
    {
        auto conn = std::make_shared<QMetaObject::Connection>();
        *conn = QObject::connect(s, signal, this, [conn, f] {
            QObject::disconnect(*conn);
            f();
        });
    }
    void later(std::function<void()> f, int ms = 300) { QTimer::singleShot(ms, this, std::move(f)); }
    void shot(const QString& page, const QString& file)
    {
        m_w->showPage(page);
        QApplication::processEvents();
        const QString path = m_dir + QLatin1Char('/') + file;
        const bool ok = m_w->grab().save(path);
        std::printf("%s %s\n", ok ? "wrote" : "FAILED", qPrintable(path));
        m_ok = m_ok && ok;
    }
    void modelShot()
    {
        m_w->methodPage()->chooseMethod(QStringLiteral("lora"));
        m_w->showPage(QStringLiteral("Model"));
        later([this] {
            shot(QStringLiteral("Model"), QStringLiteral("model.png"));
            dataShot();
        });
    }
    void dataShot()
    {
        // The example store in a throwaway folder, a few records reviewed by two annotators, token statistics.
        tb::DataPage* page = m_w->dataPage();
        // The table reads its ids on a worker: review once they are in.
        once(page, &tb::DataPage::storeOpened,
             [this, page] { once(page->model(), &tb::RecordTableModel::idsLoaded, [this, page] { reviewAndStats(page); }); });
        // Before the page is shown, so its first visit does not open the user's own store.
        page->openBundledStore(m_runs.path() + QStringLiteral("/tiny.tbstore"));
        m_w->showPage(QStringLiteral("Data"));
    }
    void reviewAndStats(tb::DataPage* page)
    {
        page->setAdvanceAfterDecision(true);
        // (annotator, decisions for the first ten records: a accept, r reject); they disagree on one.
        for (const auto& [name, decisions] : {std::pair{"ana", "aararaaara"}, std::pair{"ben", "aararaaaaa"}}) {
            page->setAnnotator(QString::fromLatin1(name));
            page->selectRow(0);
            for (int i = 0; decisions[i]; ++i) {
                page->reviewCurrent(QString(), i % 5 + 1);
                page->reviewCurrent(decisions[i] == 'a' ? QStringLiteral("accept") : QStringLiteral("reject"));
            }
        }
        page->selectRow(3);
        page->sideTabs()->setCurrentWidget(page->statsPanel());
        // A max length inside the distribution shows the truncated count; the run's 96 comes back after.
        const int runMaxLength = page->statsPanel()->maxLength();
        page->statsPanel()->setMaxLength(75);
        once(page->jobs(), &tb::DataJobs::finished, [this, page, runMaxLength] {
            later([this, page, runMaxLength] {
                shot(QStringLiteral("Data"), QStringLiteral("data.png"));
                page->statsPanel()->setMaxLength(runMaxLength);
                methodShot();
            });
        });
        page->statsPanel()->compute();
    }
    void methodShot()
    {
        m_w->showPage(QStringLiteral("Method"));
        later([this] {
            shot(QStringLiteral("Method"), QStringLiteral("method.png"));
            m_w->showPage(QStringLiteral("Memory"));
            later([this] { trainShot(); });
        });
    }
    void trainShot()
    {
        shot(QStringLiteral("Memory"), QStringLiteral("memory.png"));
        m_w->showPage(QStringLiteral("Train"));
        if (!m_w->trainPage()->startRun())
            return fail();
        // A run in progress: wait for ~60 steps, then picture it, then stop.
        auto conn = std::make_shared<QMetaObject::Connection>();
        *conn = QObject::connect(m_w->controller(), &tb::TrainingController::eventsArrived, this, [this, conn] {
            if (m_w->trainPage()->plots()->lossPoints() < 60)
                return;
            QObject::disconnect(*conn);
            shot(QStringLiteral("Train"), QStringLiteral("train.png"));
            once(m_w->controller(), &tb::TrainingController::ended, [this] { later([this] { memoryAfterRun(); }); });
            m_w->controller()->stop();
        });
    }
    void memoryAfterRun()
    {
        shot(QStringLiteral("Memory"), QStringLiteral("memory-measured.png"));
        m_w->showPage(QStringLiteral("Export"));
        once(m_w->exportPage(), &tb::ExportPage::exportFinished, [this] {
            later([this] {
                shot(QStringLiteral("Export"), QStringLiteral("export.png"));
                m_w->showPage(QStringLiteral("Playground"));
                once(m_w->playgroundPage(), &tb::PlaygroundPage::generationFinished, [this] {
                    later([this] {
                        shot(QStringLiteral("Playground"), QStringLiteral("playground.png"));
                        QApplication::exit(m_ok ? 0 : 1);
                    });
                });
                m_w->playgroundPage()->generate();
            });
        });
        m_w->exportPage()->setFormat(QStringLiteral("merged"));
        m_w->exportPage()->exportSelected();
    }
    void fail()
    {
        std::printf("screenshot tour failed\n");
        QApplication::exit(1);
    }

    tb::MainWindow* m_w;
    QString m_dir;
    QTemporaryDir m_runs;
    bool m_ok = true;
};

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationName(QStringLiteral("Tunebench Studio"));
    // Fusion follows the system's light or dark palette and scales cleanly on high-DPI screens.
    if (QStyleFactory::keys().contains(QStringLiteral("Fusion")))
        QApplication::setStyle(QStringLiteral("Fusion"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Tunebench Studio: a workbench for fine-tuning language models"));
    parser.addHelpOption();
    QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Save the window to FILE and quit."),
                                  QStringLiteral("FILE"));
    QCommandLineOption screenshots(QStringLiteral("screenshots"),
                                   QStringLiteral("Visit every page (training, export, generation) and save each to DIR."),
                                   QStringLiteral("DIR"));
    parser.addOption(screenshot);
    parser.addOption(screenshots);
    parser.addPositionalArgument(QStringLiteral("path"),
                                 QStringLiteral("Model folder or .tunebench project (default: bundled stories260k)."));
    parser.process(app);

    tb::MainWindow window;
    const QStringList args = parser.positionalArguments();
    const QString path = args.isEmpty() ? QString::fromStdString(tb::bundledModelDir()) : args.first();
    const bool tour = parser.isSet(screenshot) || parser.isSet(screenshots);
    if (tour)
        window.resize(1280, 800);
    if (parser.isSet(screenshot)) {
        const QString file = parser.value(screenshot);
        QObject::connect(window.modelPage(), &tb::ModelPage::modelOpened, &window, [&window, file] {
            QTimer::singleShot(200, &window, [&window, file] {
                const bool ok = window.grab().save(file);
                QApplication::exit(ok ? 0 : 1);
            });
        });
    }
    std::unique_ptr<ScreenshotTour> driver;
    if (parser.isSet(screenshots)) {
        driver = std::make_unique<ScreenshotTour>(&window, parser.value(screenshots));
        driver->begin();
    }
    QString error;
    if (path.endsWith(QStringLiteral(".tunebench"))) {
        if (!window.openProject(path, &error)) {
            std::fprintf(stderr, "%s\n", qPrintable(error));
            return 1;
        }
    } else {
        window.modelPage()->openModel(path);
    }
    window.show();
    return QApplication::exec();
}
