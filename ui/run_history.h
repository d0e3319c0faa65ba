// RunHistory: the Train page's list of past runs (this session's and the runs folder's), each with
// a check box that overlays its loss curve, its generation-eval metrics and, for a preference or
// reward run, its reward margins and accuracies (read from the run's metrics.jsonl by core) on the
// live plots.
#pragma once

#include "train_plots.h"

#include <QListWidget>

#include <vector>

namespace tb {

class StudioState;

// A run's generation_eval lines as one curve per metric (in order of first appearance).
std::vector<MetricCurve> generationCurves(const std::vector<GenerationEvalMetrics>& evals);

class RunHistory : public QListWidget {
    Q_OBJECT
public:
    explicit RunHistory(StudioState* state, QWidget* parent = nullptr);

    // Rescans the session's runs and the runs folder (folders with metrics.jsonl); keeps the
    // checks.
    void refresh();

Q_SIGNALS:
    void overlaysChanged(const std::vector<tb::RunCurve>& curves);  // the checked runs' loss curves
    void message(const QString& line);                              // for the run log

private:
    void updateOverlays();

    StudioState* m_state;
    QString m_scannedRoot;  // the runs folder of the last scan
};

}  // namespace tb
