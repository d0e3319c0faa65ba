// tunebench-studio: the Qt desktop workbench; opens the bundled model (or the folder given) at start.
#include "main_window.h"
#include "model_page.h"

#include "util/paths.h"

#include <QApplication>
#include <QCloseEvent>
#include <QSettings>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationName(QStringLiteral("Tunebench Studio"));
    tb::MainWindow window;
    const QStringList args = QApplication::arguments();
    const QString model = args.size() > 1 ? args.at(1) : QString::fromStdString(tb::bundledModelDir());
    window.modelPage()->openModel(model);
    window.show();
    const int rc = QApplication::exec();
    QSettings().setValue(QStringLiteral("window/geometry"), window.saveGeometry());
    return rc;
}
