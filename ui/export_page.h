// The Export page: a run's PEFT adapter, merged model folder or GGUF file (a reward model's
// transformers sequence classifier) through core's exportRun on a worker thread, with the engine's
// checks and their results (a merged model's logits comparison, a GGUF file's re-read header).
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

    // "peft" | "merged" | "gguf" | "gguf-lora" | "gguf-base" | "reward" (a reward run's
    // transformers sequence classifier); a format the selected run cannot use is ignored.
    void setFormat(const QString& format);
    void setGgufDtype(const QString& dtype);  // "f32" | "f16" | "bf16"
    void setOutputDir(const QString& dir);
    void exportSelected();
    const ExportOutcome& outcome() const { return m_outcome; }
    bool busy() const { return m_watcher.isRunning(); }
    QComboBox* formatBox() const { return m_format; }
    QString formatNote() const;  // the reward-run explanation; empty otherwise
    bool formatEnabled(const QString& format) const;
    // Whether runDir trained a reward model (run.json's config.objective is "reward").
    static bool rewardRun(const QString& runDir);

Q_SIGNALS:
    void exportFinished(bool ok);

private:
    void refreshRuns();
    void showFormats();  // the formats the selected run can use
    void suggestOutput();
    void showOutcome();

    StudioState* m_state;
    QComboBox *m_run = nullptr, *m_format = nullptr, *m_dtype = nullptr;
    QLabel* m_outLabel = nullptr;
    QLabel* m_note = nullptr;  // a reward run: what its export is and why the others are off
    bool m_reward = false;
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
