// The studio's main window: a sidebar of pages and a status bar with device and job state.
#pragma once

#include <QMainWindow>

class QLabel;
class QListWidget;
class QStackedWidget;

namespace tb {

class ModelPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ModelPage* modelPage() const { return m_modelPage; }
    QStringList pageNames() const;
    void showPage(const QString& name);

private:
    QListWidget* m_sidebar = nullptr;
    QStackedWidget* m_pages = nullptr;
    ModelPage* m_modelPage = nullptr;
    QLabel* m_device = nullptr;
    QLabel* m_job = nullptr;
};

} // namespace tb
