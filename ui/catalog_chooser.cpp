// Catalog list and menu: core's modelCatalog() entries, by title, handing back their folders.
#include "catalog_chooser.h"

#include "model/catalog.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>

#include <exception>

namespace tb {

namespace {

constexpr int kFolderRole = Qt::UserRole + 1;

// The catalog, or none when its index cannot be read (a broken install: the list stays empty).
std::vector<CatalogModel> entries()
{
    try {
        return modelCatalog();
    } catch (const std::exception&) {
        return {};
    }
}

QString folderKey(const QString& path)
{
    const QString canonical = QFileInfo(path).canonicalFilePath();
    return canonical.isEmpty() ? QDir::cleanPath(path) : canonical;
}

}  // namespace

CatalogChooser::CatalogChooser(QWidget* parent) : QWidget(parent)
{
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_box = new QComboBox(this);
    m_box->addItem(tr("Plan for a model from the catalog…"), QString());
    for (const CatalogModel& m : entries()) {
        m_box->addItem(QString::fromStdString(m.title), QString::fromStdString(m.id));
        m_box->setItemData(m_box->count() - 1,
                           QFileInfo(QString::fromStdString(m.configPath)).absolutePath(),
                           kFolderRole);
        m_box->setItemData(m_box->count() - 1, QString::fromStdString(m.repo), Qt::ToolTipRole);
    }
    m_box->setToolTip(tr("Real models' config.json, shipped with Tunebench: the memory plan needs "
                         "nothing else (no download)"));
    row->addWidget(new QLabel(tr("Model:"), this));
    row->addWidget(m_box, 1);
    connect(m_box, &QComboBox::activated, this, [this](int index) {
        const QString id = m_box->itemData(index).toString();
        if (!id.isEmpty())
            choose(id);
    });
}

QString CatalogChooser::folderOf(const QString& id)
{
    const auto m = findCatalogModel(id.toStdString());
    return m ? QFileInfo(QString::fromStdString(m->configPath)).absolutePath() : QString();
}

void CatalogChooser::choose(const QString& id)
{
    const int index = m_box->findData(id);
    if (index <= 0)
        return;
    m_box->setCurrentIndex(index);
    Q_EMIT modelChosen(m_box->itemData(index, kFolderRole).toString());
}

void CatalogChooser::showModel(const QString& path)
{
    const QString key = folderKey(path);
    for (int i = 1; i < m_box->count(); ++i)
        if (folderKey(m_box->itemData(i, kFolderRole).toString()) == key) {
            m_box->setCurrentIndex(i);
            return;
        }
    m_box->setCurrentIndex(0);
}

QMenu* catalogMenu(QWidget* parent, const std::function<void(const QString&)>& open)
{
    auto* menu = new QMenu(QObject::tr("From the catalog (config only)"), parent);
    for (const CatalogModel& m : entries()) {
        const QString folder = QFileInfo(QString::fromStdString(m.configPath)).absolutePath();
        QAction* a = menu->addAction(
            QObject::tr("%1  (%2)")
                .arg(QString::fromStdString(m.title), QString::fromStdString(m.repo)),
            menu, [open, folder] { open(folder); });
        a->setData(QString::fromStdString(m.id));
    }
    return menu;
}

}  // namespace tb
