// The studio's main window: a sidebar of pages, a project menu (open, save, recent) and a status
// bar with the device, current memory and the job state.
#pragma once

#include <QMainWindow>

#include <functional>

class QIcon;
class QLabel;
class QListWidget;
class QMenu;
class QMessageBox;
class QStackedWidget;

namespace tb {

// The application icon compiled in from resources/tunebench.qrc (SVG plus the rendered PNG sizes).
QIcon appIcon();

// What a file given to the studio is: a project, a dataset store, or (anything else) a model
// folder.
enum class StartupFile { Project, Store, Model };
StartupFile startupFileKind(const QString& path);

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
    // Opens what `tunebench-studio FILE` (or a double-click) names: a .tunebench project, a
    // .tbstore store (as the project's store, on the Data page) or a model folder; false with the
    // reason. A store opens on a worker: what only opening shows comes as DataPage::storeFailed.
    bool openPath(const QString& path, QString* error = nullptr);
    // The About box (application icon, version, what Tunebench is), not yet shown; the caller owns
    // it.
    QMessageBox* createAboutBox();
    bool saveProject(const QString& path, QString* error = nullptr);
    QString projectPath() const { return m_projectPath; }
    // Asked when closing during training; returns true to stop the run and close (default: a
    // dialog).
    void setCloseQuestion(std::function<bool()> ask) { m_askClose = std::move(ask); }
    // Asked when closing with unsaved edits on the Data page; returns QMessageBox::Save, Discard
    // or Cancel (default: a dialog).
    void setUnsavedEditsQuestion(std::function<int()> ask) { m_askUnsaved = std::move(ask); }

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
    std::function<int()> m_askUnsaved;
    bool m_closeAfterStop = false;
    bool m_closeAfterExport = false;  // a close came while an export was being written
    // The unsaved-edits answer of the close under way: 0 not asked, -1 nothing to ask, else
    // QMessageBox::Save or Discard (applied once nothing else runs).
    int m_closeEdits = 0;
};

}  // namespace tb
