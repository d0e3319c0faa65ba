// The Export page: a run's PEFT adapter or merged model folder through core's exportRun on a worker
// thread, with the engine's checks and their results (and, for a merged model, a logits comparison).
#pragma once

#include <QFutureWatcher>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;

namespace tb {

class StudioState;

struct ExportOutcome {
    bool ok = false;
    QString message;                          // the error, when not ok
    QList<QPair<QString, QString>> results;   // check or property -> value
    QStringList files;
};

class ExportPage : public QWidget {
    Q_OBJECT
public:
    explicit ExportPage(StudioState* state, QWidget* parent = nullptr);
    ~ExportPage() override;

    void setFormat(const QString& format);  // "peft" | "merged"
    void setOutputDir(const QString& dir);
    void exportSelected();
    const ExportOutcome& outcome() const { return m_outcome; }
    bool busy() const { return m_watcher.isRunning(); }

Q_SIGNALS:
    void exportFinished(bool ok);

private:
    void refreshRuns();
    void suggestOutput();
    void showOutcome();

    StudioState* m_state;
    QComboBox *m_run = nullptr, *m_format = nullptr;
    QLineEdit* m_out = nullptr;
    QCheckBox* m_force = nullptr;
    QPushButton* m_export = nullptr;
    QLabel* m_status = nullptr;
    QTreeWidget* m_results = nullptr;
    QFutureWatcher<ExportOutcome> m_watcher;
    ExportOutcome m_outcome;
    bool m_outEdited = false;
};

} // namespace tb
