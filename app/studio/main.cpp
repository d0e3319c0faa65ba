// tunebench-studio: the Qt desktop workbench; opens the bundled model (or the folder given) at start.
// --screenshot FILE.png: render the window once the model is open, save it and quit (docs, CI).
#include "main_window.h"
#include "model_page.h"

#include "util/paths.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QSettings>
#include <QTimer>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationName(QStringLiteral("Tunebench Studio"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Tunebench Studio: a workbench for fine-tuning language models"));
    parser.addHelpOption();
    QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Save the window to FILE and quit."),
                                  QStringLiteral("FILE"));
    parser.addOption(screenshot);
    parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("Model folder (default: bundled stories260k)."));
    parser.process(app);

    tb::MainWindow window;
    const QStringList args = parser.positionalArguments();
    const QString model = args.isEmpty() ? QString::fromStdString(tb::bundledModelDir()) : args.first();
    if (parser.isSet(screenshot)) {
        const QString file = parser.value(screenshot);
        window.resize(1100, 720);
        QObject::connect(window.modelPage(), &tb::ModelPage::modelOpened, &window, [&window, file] {
            QTimer::singleShot(200, &window, [&window, file] {
                const bool ok = window.grab().save(file);
                QApplication::exit(ok ? 0 : 1);
            });
        });
    }
    window.modelPage()->openModel(model);
    window.show();
    const int rc = QApplication::exec();
    if (!parser.isSet(screenshot))
        QSettings().setValue(QStringLiteral("window/geometry"), window.saveGeometry());
    return rc;
}
