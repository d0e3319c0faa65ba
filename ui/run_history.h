// RunHistory: the Train page's list of past runs (this session's and the runs folder's), each with
// a check box that overlays its loss curve, its generation-eval metrics and, for a preference or
// reward run, its reward margins and accuracies (read from the run's metrics.jsonl by core) on the
// live plots.
#pragma once

#include "train_plots.h"

#include <QDateTime>
#include <QFutureWatcher>
#include <QHash>
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

public:
    // The curves of a run folder as read from its metrics.jsonl (errors and skipped lines in
    // `messages`), with the file's size and time it was read at.
    struct ReadCurve {
        QString dir;
        qint64 size = -1;
        QDateTime modified;
        RunCurve curve;
        bool ok = false;
        QStringList messages;
    };

private:
    struct ReadBatch {
        quint64 request = 0;
        std::vector<ReadCurve> runs;
    };
    // Overlays of the checked runs: a run whose metrics.jsonl has not changed since it was read
    // comes from the cache; the others are read on a worker (a long run's file is tens of MB), and
    // the curves go out when they are in. A newer check supersedes an older read.
    void updateOverlays();
    void showOverlays(const ReadBatch& batch);

    StudioState* m_state;
    QString m_scannedRoot;              // the runs folder of the last scan
    QHash<QString, ReadCurve> m_cache;  // run folder -> its curves as last read
    QFutureWatcher<ReadBatch> m_reader;
    quint64 m_request = 0;
};

}  // namespace tb
