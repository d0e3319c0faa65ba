// The studio's main window: a sidebar of pages, a project menu (open, save, recent) and a status
// bar with the device, current memory and the job state.
#pragma once

#include <QMainWindow>

#include <functional>

class QLabel;
class QListWidget;
class QMenu;
class QStackedWidget;

namespace tb {

class DataPage;
class EvaluatePage;
class ExportPage;
class MemoryPage;
class MethodPage;
class ModelPage;
class PlaygroundPage;
class StudioState;
class TrainingController;
class TrainPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    StudioState* state() const { return m_state; }
    TrainingController* controller() const { return m_controller; }
    ModelPage* modelPage() const { return m_modelPage; }
    DataPage* dataPage() const { return m_dataPage; }
    MethodPage* methodPage() const { return m_methodPage; }
    MemoryPage* memoryPage() const { return m_memoryPage; }
    TrainPage* trainPage() const { return m_trainPage; }
    PlaygroundPage* playgroundPage() const { return m_playgroundPage; }
    EvaluatePage* evaluatePage() const { return m_evaluatePage; }
    ExportPage* exportPage() const { return m_exportPage; }
    QStringList pageNames() const;
    void showPage(const QString& name);
    QString statusText() const;

    bool openProject(const QString& path, QString* error = nullptr);
    bool saveProject(const QString& path, QString* error = nullptr);
    QString projectPath() const { return m_projectPath; }
    // Asked when closing during training; returns true to stop the run and close (default: a
    // dialog).
    void setCloseQuestion(std::function<bool()> ask) { m_askClose = std::move(ask); }

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void rememberRecent(const QString& path);
    void rebuildRecentMenu();
    void updateTitle();

    StudioState* m_state = nullptr;
    TrainingController* m_controller = nullptr;
    QListWidget* m_sidebar = nullptr;
    QStackedWidget* m_pages = nullptr;
    ModelPage* m_modelPage = nullptr;
    DataPage* m_dataPage = nullptr;
    MethodPage* m_methodPage = nullptr;
    MemoryPage* m_memoryPage = nullptr;
    TrainPage* m_trainPage = nullptr;
    PlaygroundPage* m_playgroundPage = nullptr;
    EvaluatePage* m_evaluatePage = nullptr;
    ExportPage* m_exportPage = nullptr;
    QLabel* m_device = nullptr;
    QLabel* m_memory = nullptr;
    QLabel* m_job = nullptr;
    QMenu* m_recent = nullptr;
    QString m_projectPath;
    std::function<bool()> m_askClose;
    bool m_closeAfterStop = false;
};

}  // namespace tb
