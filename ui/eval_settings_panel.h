// The Evaluate page's settings: the base model (the project's), the runs to compare (the session's
// and the runs folder's), the held-out data (a run's validation split, a JSONL file or a snapshot
// of the project's dataset store), the metrics and the generation settings; it builds the
// EvalController's request.
#pragma once

#include "eval_controller.h"

#include <QFutureWatcher>
#include <QStringList>
#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace tb {

class StudioState;

class EvalSettingsPanel : public QWidget {
    Q_OBJECT
public:
    enum Source { RunSplit, JsonlFile, StoreSnapshot };

    explicit EvalSettingsPanel(StudioState* state, QWidget* parent = nullptr);
    ~EvalSettingsPanel() override;  // waits for a snapshot listing in flight

    // The request for the current choices; nullopt with the reason in *error when incomplete.
    std::optional<EvalRequest> request(QString* error = nullptr) const;

    // Runs: the session's and the runs folder's (folders with run.json), checks kept.
    void refreshRuns();
    QStringList checkedRuns() const;
    void setRunChecked(const QString& runDir, bool on);
    QStringList runs() const;  // every listed run folder
    void setSource(Source source);
    void setDataFile(const QString& path);
    void setMetrics(const QStringList& names);  // checks exactly these
    void refreshSnapshots();                    // lists the store's snapshots on a worker

    QListWidget* runList() const { return m_runs; }
    QListWidget* metricList() const { return m_metrics; }
    QComboBox* sourceBox() const { return m_source; }
    QComboBox* snapshotBox() const { return m_snapshot; }
    QSpinBox* limitBox() const { return m_limit; }
    QSpinBox* maxTokensBox() const { return m_maxTokens; }
    QSpinBox* batchBox() const { return m_batch; }
    QSpinBox* resamplesBox() const { return m_resamples; }
    QCheckBox* greedyBox() const { return m_greedy; }
    QDoubleSpinBox* temperatureBox() const { return m_temperature; }
    QComboBox* quantizedBaseBox() const { return m_quantBase; }

Q_SIGNALS:
    void snapshotsListed();
    void message(const QString& line);

private:
    void buildModelGroup(QFormLayout* form);
    void buildDataGroup(QFormLayout* form);
    void buildMetricGroup(QFormLayout* form);
    void buildGenerationGroup(QFormLayout* form);
    void showSourceRows();
    void showModel();

    StudioState* m_state;
    QLabel* m_model = nullptr;
    QListWidget* m_runs = nullptr;
    QComboBox* m_quantBase = nullptr;  // also the base quantised (a comparison's extra system)
    QComboBox *m_source = nullptr, *m_snapshot = nullptr;
    QLineEdit* m_file = nullptr;
    QWidget* m_fileRow = nullptr;
    QSpinBox* m_limit = nullptr;
    QFormLayout* m_dataForm = nullptr;
    QListWidget* m_metrics = nullptr;
    QLineEdit* m_glossary = nullptr;
    QSpinBox *m_maxTokens = nullptr, *m_batch = nullptr, *m_resamples = nullptr, *m_seed = nullptr;
    QCheckBox* m_greedy = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QFutureWatcher<QStringList> m_snapshotWatcher;
};

}  // namespace tb
