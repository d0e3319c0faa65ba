// The Export page: a run's PEFT adapter, merged model folder or GGUF file through core's exportRun
// on a worker thread, with the engine's checks and their results (a merged model's logits
// comparison, a GGUF file's re-read header).
#pragma once

#include <QFutureWatcher>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QStandardItemModel;
class QTreeView;

namespace tb {

class StudioState;

struct ExportOutcome {
    bool ok = false;
    QString message;                         // the error, when not ok
    QList<QPair<QString, QString>> results;  // check or property -> value
    QStringList files;
};

class ExportPage : public QWidget {
    Q_OBJECT
public:
    explicit ExportPage(StudioState* state, QWidget* parent = nullptr);
    ~ExportPage() override;

    void setFormat(const QString& format);    // "peft" | "merged" | "gguf"
    void setGgufDtype(const QString& dtype);  // "f32" | "f16" | "bf16"
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
    QComboBox *m_run = nullptr, *m_format = nullptr, *m_dtype = nullptr;
    QLabel* m_outLabel = nullptr;
    QLineEdit* m_out = nullptr;
    QCheckBox* m_force = nullptr;
    QPushButton* m_export = nullptr;
    QLabel* m_status = nullptr;
    QStandardItemModel* m_results = nullptr;  // check -> result; "Files" with the written files
    QTreeView* m_resultsView = nullptr;
    QFutureWatcher<ExportOutcome> m_watcher;
    ExportOutcome m_outcome;
    bool m_outEdited = false;
};

}  // namespace tb
