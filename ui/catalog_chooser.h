// Choosing a model from the catalog of real configs shipped with Tunebench (model/catalog.h): a
// list for the Memory page and a menu for the Model page's Open button; both hand back the chosen
// config's folder, which the Model page opens on its worker like any other.
#pragma once

#include <QWidget>

#include <functional>

class QComboBox;
class QMenu;

namespace tb {

class CatalogChooser : public QWidget {
    Q_OBJECT
public:
    explicit CatalogChooser(QWidget* parent = nullptr);
    QComboBox* box() const { return m_box; }
    // The folder of catalog entry `id` ("" when there is none); choose() emits modelChosen for it.
    static QString folderOf(const QString& id);
    void choose(const QString& id);
    // Shows the entry of the open model (a catalog folder), or the prompt row for any other.
    void showModel(const QString& path);

Q_SIGNALS:
    void modelChosen(const QString& folder);

private:
    QComboBox* m_box = nullptr;
};

// A "From the catalog" menu under `parent`: one action per entry (title and repository), each
// calling `open` with the entry's folder.
QMenu* catalogMenu(QWidget* parent, const std::function<void(const QString&)>& open);

}  // namespace tb
