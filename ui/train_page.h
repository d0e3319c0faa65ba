// The Train page: hyperparameters, the planned learning-rate schedule, Start / Pause / Resume / Stop with
// progress and ETA, live plots fed by the TrainingController, the divergence banner, a log and run history.
#pragma once

#include <QElapsedTimer>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;

namespace tb {

class StudioState;
class TrainingController;
class TrainPlots;
struct JobEventBatch;

class TrainPage : public QWidget {
    Q_OBJECT
public:
    TrainPage(StudioState* state, TrainingController* controller, QWidget* parent = nullptr);

    TrainPlots* plots() const { return m_plots; }
    QPushButton* startButton() const { return m_start; }
    QPushButton* pauseButton() const { return m_pause; }
    QPushButton* resumeButton() const { return m_resume; }
    QPushButton* stopButton() const { return m_stop; }
    QListWidget* history() const { return m_history; }
    QString bannerText() const;
    QString logText() const;
    // Starts a run with the current settings (the Start button); false with the reason in the log.
    bool startRun();
    // Past runs in the output folder (folders with metrics.jsonl), rescanned.
    void refreshHistory();
    void exportPlots(const QString& dir);
    // Data source: JSONL files, or snapshots of the project's dataset store (listed from the store).
    void useSnapshots(bool on);
    void refreshSnapshots();
    QComboBox* snapshotBox() const { return m_snapshot; }

private:
    void buildSettings(QWidget* box);
    void showEvent(QShowEvent* event) override;
    void showSourceRows();
    void fromState();
    void toState();
    void updatePlanned();
    void updateButtons();
    void onEvents(const JobEventBatch& batch);
    void updateOverlays();
    void log(const QString& line);

    StudioState* m_state;
    TrainingController* m_controller;
    bool m_updating = false;
    QLineEdit* m_name = nullptr;
    QSpinBox *m_maxSteps = nullptr, *m_batch = nullptr, *m_accum = nullptr, *m_warmup = nullptr,
             *m_evalEvery = nullptr, *m_saveEvery = nullptr, *m_seed = nullptr, *m_maxLength = nullptr;
    QDoubleSpinBox *m_lr = nullptr, *m_minLr = nullptr, *m_weightDecay = nullptr, *m_clip = nullptr;
    QComboBox *m_schedule = nullptr, *m_optimizer = nullptr;
    QLineEdit *m_trainFile = nullptr, *m_valFile = nullptr, *m_outputDir = nullptr;
    QComboBox *m_source = nullptr, *m_snapshot = nullptr, *m_valSnapshot = nullptr;
    QFormLayout* m_dataForm = nullptr;
    QPushButton *m_start = nullptr, *m_pause = nullptr, *m_resume = nullptr, *m_stop = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_eta = nullptr;
    QLabel* m_banner = nullptr;
    QCheckBox* m_logScale = nullptr;
    QSlider* m_smoothing = nullptr;
    TrainPlots* m_plots = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QListWidget* m_history = nullptr;
    qint64 m_totalSteps = 0;
    QElapsedTimer m_clock;  // since the first step arrived (ETA)
    int64_t m_firstStep = 0;
};

} // namespace tb
