// The Train page's settings form: run shape, processes (TrainLaunchBox), optimizer and schedule,
// data source and output, the generation-based evaluation during training (eval.*), read from and
// written to StudioState's config (never rewriting itself in answer to its own change).
#pragma once

#include <QFutureWatcher>
#include <QStringList>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLineEdit;
class QListWidget;
class QShowEvent;
class QSpinBox;

namespace tb {

class StudioState;
class TrainLaunchBox;

// The snapshot ids of a dataset store, listed on a worker (train and validation, oldest first).
struct SnapshotList {
    quint64 request = 0;
    QStringList train, validation;
    QString error;
};

class TrainSettingsForm : public QWidget {
    Q_OBJECT
public:
    explicit TrainSettingsForm(StudioState* state, QWidget* parent = nullptr);
    ~TrainSettingsForm() override;  // waits for a snapshot listing in flight

    // Widgets -> config (origin: this form). Changes call it; the run panel calls it before a
    // start.
    void toState();
    QString runName() const;  // the Name field, trimmed; empty: automatic

    // Data source: JSONL files, or snapshots of the project's dataset store (listed from the
    // store).
    void useSnapshots(bool on);
    // Lists the store's snapshots on a worker; a newer request supersedes one still in flight.
    void refreshSnapshots();
    // A listing was asked for and its answer has not been shown yet.
    bool listingSnapshots() const { return m_snapshotShown != m_snapshotRequest; }
    QComboBox* snapshotBox() const { return m_snapshot; }

    // Processes, GPUs and the ZeRO stage of the run.
    TrainLaunchBox* launchBox() const { return m_launch; }
    QSpinBox* maxStepsBox() const { return m_maxSteps; }
    QSpinBox* batchBox() const { return m_batch; }
    QLineEdit* trainFileEdit() const { return m_trainFile; }
    // eval.generate_every (0: off), eval.sample, eval.max_new_tokens, eval.metrics (checked).
    QSpinBox* generateEveryBox() const { return m_generateEvery; }
    QSpinBox* generateSampleBox() const { return m_generateSample; }
    QSpinBox* generateTokensBox() const { return m_generateTokens; }
    QListWidget* generateMetricsList() const { return m_generateMetrics; }
    // How many times the config was written into the widgets (tests: never in answer to our own
    // change).
    int widgetRewrites() const { return m_rewrites; }

Q_SIGNALS:
    void snapshotsListed();             // the boxes show the newest listing
    void message(const QString& line);  // for the run log

protected:
    void showEvent(QShowEvent* event) override;

private:
    void buildRunGroup(QFormLayout* form);
    void buildOptimizerGroup(QFormLayout* form);
    void buildDataGroup(QFormLayout* form);
    void buildGenerationGroup(QFormLayout* form);
    void connectChanges();
    void showSourceRows();
    void fromState();  // config -> widgets
    void showSnapshots(const SnapshotList& list);
    bool snapshotMode() const;

    StudioState* m_state;
    bool m_updating = false;
    int m_rewrites = 0;
    QLineEdit* m_name = nullptr;
    QSpinBox *m_maxSteps = nullptr, *m_batch = nullptr, *m_accum = nullptr, *m_warmup = nullptr,
             *m_evalEvery = nullptr, *m_saveEvery = nullptr, *m_seed = nullptr,
             *m_maxLength = nullptr;
    QDoubleSpinBox *m_lr = nullptr, *m_minLr = nullptr, *m_weightDecay = nullptr, *m_clip = nullptr;
    QComboBox *m_schedule = nullptr, *m_optimizer = nullptr;
    QLineEdit *m_trainFile = nullptr, *m_valFile = nullptr, *m_outputDir = nullptr;
    QComboBox *m_source = nullptr, *m_snapshot = nullptr, *m_valSnapshot = nullptr;
    QFormLayout* m_dataForm = nullptr;
    TrainLaunchBox* m_launch = nullptr;
    QSpinBox *m_generateEvery = nullptr, *m_generateSample = nullptr, *m_generateTokens = nullptr;
    QListWidget* m_generateMetrics = nullptr;
    QFutureWatcher<SnapshotList> m_snapshotWatcher;
    quint64 m_snapshotRequest = 0;  // the newest listing asked for; older results are dropped
    quint64 m_snapshotShown = 0;    // the request whose answer the boxes show
};

}  // namespace tb
