// The Train page's run panel: Start / Pause / Resume / Stop, progress and ETA, the divergence
// banner, the live plots fed by the TrainingController's batches, their export, and the run log.
// A launched run (several processes) adds a row per rank (RankProgress), the launcher's merged
// output in the log with a rank filter, and Stop pressed again forces.
#pragma once

#include <QElapsedTimer>
#include <QWidget>

#include <cstdint>
#include <deque>

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QTabWidget;

namespace tb {

class RankProgress;
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
    QString packingText() const;    // empty unless the run packs its examples
    QString precisionText() const;  // the run's precision path in words (core's RunPlan)
    QString logText() const;        // the lines the rank filter shows
    void log(const QString& line);
    // A launched run: its rows per rank, and the log's rank filter ("All ranks", "Launcher",
    // "Rank 0", ...); hidden for a run in this process.
    RankProgress* rankProgress() const { return m_ranks; }
    QComboBox* logFilter() const { return m_logFilter; }
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
    void showLaunched(int processes);  // 0: a run in this process
    void appendLog(int rank, const QString& line);
    void refilterLog();
    bool logShows(int rank) const;
    void updateButtons();
    void showMissing();

    StudioState* m_state;
    TrainingController* m_controller;
    QPushButton *m_start = nullptr, *m_pause = nullptr, *m_resume = nullptr, *m_stop = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_eta = nullptr;
    QLabel* m_packing = nullptr;    // packed runs: the packing efficiency of the plan
    QLabel* m_precision = nullptr;  // mixed-precision runs: the path core took
    QLabel* m_banner = nullptr;
    QLabel* m_missing = nullptr;  // the open model cannot train: what it lacks
    QCheckBox* m_logScale = nullptr;
    QSlider* m_smoothing = nullptr;
    TrainPlots* m_plots = nullptr;
    QTabWidget* m_tabs = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QComboBox* m_logFilter = nullptr;
    RankProgress* m_ranks = nullptr;
    struct LogLine {
        int rank;  // LaunchLine's rank, or kPanelLine for the panel's own lines
        QString text;
    };
    std::deque<LogLine> m_logLines;  // the newest lines, for the rank filter
    int64_t m_totalSteps = 0;
    QElapsedTimer m_clock;  // since the first step arrived (ETA)
    int64_t m_firstStep = 0;
};

}  // namespace tb
