// tunebench-studio: the Qt desktop workbench; opens the bundled model and dataset (or the model
// folder or .tunebench project given) at start, so a new user can press Start at once.
// --screenshot FILE.png: render the window once the model is open, save it and quit.
// --screenshots DIR: the screenshot tour (ui/screenshot_tour.h): every page in a realistic state,
// saved to DIR.
#include "data_page.h"
#include "main_window.h"
#include "model_page.h"
#include "screenshot_tour.h"

#include "model/devices.h"
#include "util/heap.h"
#include "util/paths.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QStyleFactory>

#include <array>
#include <cstdio>
#include <memory>

int main(int argc, char** argv)
{
    tb::loadCudaBackend();        // before anything asks LibTorch about CUDA
    tb::keepLargeBlocksInHeap();  // training's large transient buffers (util/heap.h)
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationName(QStringLiteral("Tunebench Studio"));
    QApplication::setApplicationVersion(QStringLiteral(TB_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("tunebench-studio"));
    QApplication::setWindowIcon(tb::appIcon());
    // Fusion follows the system's light or dark palette and scales cleanly on high-DPI screens.
    if (QStyleFactory::keys().contains(QStringLiteral("Fusion")))
        QApplication::setStyle(QStringLiteral("Fusion"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Tunebench Studio: a workbench for fine-tuning language models"));
    parser.addHelpOption();
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                  QStringLiteral("Save the window to FILE and quit."),
                                  QStringLiteral("FILE"));
    QCommandLineOption screenshots(
        QStringLiteral("screenshots"),
        QStringLiteral("Visit every page (training, export, generation) and save each to DIR."),
        QStringLiteral("DIR"));
    parser.addOption(screenshot);
    parser.addOption(screenshots);
    parser.addPositionalArgument(
        QStringLiteral("path"),
        QStringLiteral("Model folder, .tunebench project or .tbstore dataset store (default: "
                       "bundled stories260k)."));
    parser.process(app);

    tb::MainWindow window;
    const QStringList args = parser.positionalArguments();
    const QString path =
        args.isEmpty() ? QString::fromStdString(tb::bundledModelDir()) : args.first();
    if (parser.isSet(screenshot) || parser.isSet(screenshots))
        window.resize(1280, 800);
    if (parser.isSet(screenshot))
        tb::saveWindowWhenOpen(&window, parser.value(screenshot));
    std::unique_ptr<tb::ScreenshotTour> tour;
    if (parser.isSet(screenshots)) {
        tour = std::make_unique<tb::ScreenshotTour>(&window, parser.value(screenshots));
        tour->begin();
    }
    const bool unattended = parser.isSet(screenshot) || parser.isSet(screenshots);
    // A store alone still wants a model: the bundled one, as when nothing is given.
    if (tb::startupFileKind(path) == tb::StartupFile::Store)
        window.modelPage()->openModel(QString::fromStdString(tb::bundledModelDir()));
    if (tb::startupFileKind(path) == tb::StartupFile::Store) {
        // The store opens on a worker: one that cannot be opened is reported when that is known.
        auto once = std::make_shared<std::array<QMetaObject::Connection, 2>>();
        const auto done = [once] {
            for (const QMetaObject::Connection& c : *once)
                QObject::disconnect(c);
        };
        (*once)[0] = QObject::connect(window.dataPage(), &tb::DataPage::storeOpened, &window, done);
        (*once)[1] = QObject::connect(
            window.dataPage(), &tb::DataPage::storeFailed, &window,
            [&window, done, unattended](const QString& message) {
                done();
                std::fprintf(stderr, "tunebench-studio: %s\n", qPrintable(message));
                if (unattended)
                    QCoreApplication::exit(1);
                else
                    QMessageBox::warning(&window, QStringLiteral("Tunebench Studio"), message);
            });
    }
    QString error;
    if (!window.openPath(path, &error)) {
        std::fprintf(stderr, "tunebench-studio: %s\n", qPrintable(error));
        if (unattended)
            return 1;
        if (tb::startupFileKind(path) == tb::StartupFile::Project)
            window.modelPage()->openModel(QString::fromStdString(tb::bundledModelDir()));
        window.show();
        QMessageBox::warning(&window, QStringLiteral("Tunebench Studio"), error);
    }
    // Runs and stores are saved in the user's data folder: say at once when that cannot work.
    if (const std::string problem = tb::userDataDirProblem(); !problem.empty()) {
        std::fprintf(stderr, "tunebench-studio: %s\n", problem.c_str());
        if (!unattended) {
            QString sentence = QString::fromStdString(problem);
            sentence[0] = sentence[0].toUpper();
            window.show();
            QMessageBox::warning(
                &window, QStringLiteral("Tunebench Studio"),
                QStringLiteral("%1.\n\nTraining runs and dataset stores cannot be saved there. "
                               "Make the folder writable, or start the studio with XDG_DATA_HOME "
                               "set to a writable folder.")
                    .arg(sentence));
        }
    }
    window.show();
    return QApplication::exec();
}
