// RunHistory: the Train page's list of past runs (this session's and the runs folder's), each with
// a check box that overlays its loss curve (read from the run's metrics.jsonl by core) on the live
// loss plot.
#pragma once

#include "train_plots.h"

#include <QListWidget>

#include <vector>

namespace tb {

class StudioState;

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
