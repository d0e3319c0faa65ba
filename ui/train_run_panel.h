// The Train page's run panel: Start / Pause / Resume / Stop, progress and ETA, the divergence
// banner, the live plots fed by the TrainingController's batches, their export, and the run log.
#pragma once

#include <QElapsedTimer>
#include <QWidget>

#include <cstdint>

class QCheckBox;
class QHBoxLayout;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QTabWidget;

namespace tb {

class StudioState;
class TrainingController;
class TrainPlots;
struct JobEventBatch;

class TrainRunPanel : public QWidget {
    Q_OBJECT
public:
    TrainRunPanel(StudioState* state, TrainingController* controller, QWidget* parent = nullptr);

    TrainPlots* plots() const { return m_plots; }
    QPushButton* startButton() const { return m_start; }
    QPushButton* pauseButton() const { return m_pause; }
    QPushButton* resumeButton() const { return m_resume; }
    QPushButton* stopButton() const { return m_stop; }
    QString bannerText() const;
    // What the open model lacks to train (a config alone: no tokenizer, no weights); empty when it
    // has everything. Start stays disabled while it is not empty.
    QString missingText() const;
    QString packingText() const;  // empty unless the run packs its examples
    QString logText() const;
    void log(const QString& line);
    // A tab beside the log (the page puts the run history there).
    void addTab(QWidget* widget, const QString& title);

    // Starts a run with the state's config under `name` (empty: method and time); false with the
    // reason logged.
    bool startRun(const QString& name);
    void exportPlots(const QString& dir);
    // The planned learning-rate curve for the config (while no run is active).
    void updatePlanned();

Q_SIGNALS:
    void
    startRequested();  // the Start button: the page brings the settings in, then calls startRun

private:
    QHBoxLayout* buildPlotBar();
    void onEvents(const JobEventBatch& batch);
    void showProgress(const JobEventBatch& batch);
    void logBatch(const JobEventBatch& batch);
    void updateButtons();
    void showMissing();

    StudioState* m_state;
    TrainingController* m_controller;
    QPushButton *m_start = nullptr, *m_pause = nullptr, *m_resume = nullptr, *m_stop = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_eta = nullptr;
    QLabel* m_packing = nullptr;  // packed runs: the packing efficiency of the plan
    QLabel* m_banner = nullptr;
    QLabel* m_missing = nullptr;  // the open model cannot train: what it lacks
    QCheckBox* m_logScale = nullptr;
    QSlider* m_smoothing = nullptr;
    TrainPlots* m_plots = nullptr;
    QTabWidget* m_tabs = nullptr;
    QPlainTextEdit* m_log = nullptr;
    int64_t m_totalSteps = 0;
    QElapsedTimer m_clock;  // since the first step arrived (ETA)
    int64_t m_firstStep = 0;
};

}  // namespace tb
