// The Train page: the settings form (TrainSettingsForm) on the left, the run panel (TrainRunPanel:
// controls, progress and ETA, banner, live plots, log) on the right, with the run history
// (RunHistory) beside the log.
#pragma once

#include <QWidget>

class QComboBox;
class QListWidget;
class QPushButton;

namespace tb {

class RunHistory;
class StudioState;
class TrainingController;
class TrainPlots;
class TrainRunPanel;
class TrainSettingsForm;

class TrainPage : public QWidget {
    Q_OBJECT
public:
    TrainPage(StudioState* state, TrainingController* controller, QWidget* parent = nullptr);

    TrainSettingsForm* settingsForm() const { return m_form; }
    TrainRunPanel* runPanel() const { return m_panel; }
    RunHistory* runHistory() const { return m_history; }

    TrainPlots* plots() const;
    QPushButton* startButton() const;
    QPushButton* pauseButton() const;
    QPushButton* resumeButton() const;
    QPushButton* stopButton() const;
    QListWidget* history() const;
    QString bannerText() const;
    QString logText() const;
    // Starts a run with the current settings (the Start button); false with the reason in the log.
    bool startRun();
    // Past runs in the output folder (folders with metrics.jsonl), rescanned.
    void refreshHistory();
    void exportPlots(const QString& dir);
    // Data source: JSONL files, or snapshots of the project's dataset store (listed on a worker).
    void useSnapshots(bool on);
    void refreshSnapshots();
    QComboBox* snapshotBox() const;

private:
    TrainSettingsForm* m_form = nullptr;
    TrainRunPanel* m_panel = nullptr;
    RunHistory* m_history = nullptr;
};

}  // namespace tb
