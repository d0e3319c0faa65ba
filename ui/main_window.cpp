// Main window: sidebar navigation between pages; the pages beyond Model arrive with their core parts.
#include "main_window.h"

#include "model_page.h"

#include "model/model.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>

namespace tb {

namespace {
const char* const kPages[] = {"Model", "Data", "Method", "Memory", "Train", "Playground", "Export"};
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Tunebench Studio"));
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    m_sidebar = new QListWidget(central);
    m_sidebar->setFixedWidth(150);
    m_pages = new QStackedWidget(central);
    layout->addWidget(m_sidebar);
    layout->addWidget(m_pages, 1);
    setCentralWidget(central);

    for (const char* name : kPages) {
        m_sidebar->addItem(tr(name));
        if (QLatin1String(name) == QLatin1String("Model")) {
            m_modelPage = new ModelPage(m_pages);
            m_pages->addWidget(m_modelPage);
        } else {
            auto* placeholder = new QLabel(tr("The %1 page arrives with its engine.").arg(tr(name)), m_pages);
            placeholder->setAlignment(Qt::AlignCenter);
            m_pages->addWidget(placeholder);
        }
    }
    connect(m_sidebar, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    m_sidebar->setCurrentRow(0);

    m_device = new QLabel(tr("Device: %1").arg(QString::fromStdString(defaultDevice())), this);
    m_job = new QLabel(tr("Idle"), this);
    statusBar()->addPermanentWidget(m_device);
    statusBar()->addPermanentWidget(m_job);

    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    if (!settings.contains(QStringLiteral("window/geometry")))
        resize(1100, 720);
}

QStringList MainWindow::pageNames() const
{
    QStringList names;
    for (int i = 0; i < m_sidebar->count(); ++i)
        names << m_sidebar->item(i)->text();
    return names;
}

void MainWindow::showPage(const QString& name)
{
    const int row = pageNames().indexOf(name);
    if (row >= 0)
        m_sidebar->setCurrentRow(row);
}

} // namespace tb
