// LaunchedRun: a data-parallel run the studio started as `tunebench train --nproc N` in a QProcess
// (never blocking the GUI thread). The launcher's merged output arrives line by line; a timer on
// the GUI thread follows rank 0's metrics.jsonl, every other rank's ranks/rank-R.jsonl and run.json
// by their growth. Everything goes into the controller's EventBuffer, the one streaming pattern, so
// the Train page drains a launched run exactly as an in-process one.
#pragma once

#include "event_buffer.h"
#include "job_event_batch.h"
#include "launch_command.h"
#include "launch_output.h"

#include <QObject>
#include <QProcess>
#include <QTimer>

#include <vector>

namespace tb {

class LaunchedRun : public QObject {
    Q_OBJECT
public:
    explicit LaunchedRun(EventBuffer<JobEventBatch>* events, QObject* parent = nullptr);
    // A launcher still running gets SIGINT, up to 30 s to stop its ranks, then SIGKILL (its ranks
    // follow through their parent-death signal).
    ~LaunchedRun() override;

    // Starts `command` with the studio's environment plus command.environment and
    // `extraEnvironment` (KEY=VALUE), following `runDir` for `processes` ranks; optim draws the
    // planned schedule. False with the reason when the program is missing; a start that fails later
    // reports `failed`.
    bool start(const LaunchCommand& command, const QStringList& extraEnvironment,
               const QString& runDir, int processes, const OptimOptions& optim, QString* error);
    // Stop: the first call sends SIGINT to the launcher (every rank stops after the same step and
    // saves a checkpoint), the second SIGINT again (the launcher sends SIGTERM: no checkpoint), a
    // third SIGKILL to the launcher.
    void stop();
    int stopRequests() const { return m_stops; }
    bool running() const { return m_process.state() != QProcess::NotRunning; }
    qint64 processId() const { return m_process.processId(); }
    int pollIntervalMs() const { return m_poll.interval(); }
    const QString& runDir() const { return m_runDir; }

private:
    void readChannel(bool fromStderr);
    void addLines(const QList<QByteArray>& lines, bool fromStderr);
    void pollFiles();
    void onFinished(int exitCode, QProcess::ExitStatus status);
    TrainSummary summary() const;

    EventBuffer<JobEventBatch>* m_events;
    QProcess m_process;
    QTimer m_poll;
    LineSplitter m_stdout, m_stderr;
    std::vector<JsonlTail> m_tails;  // index: rank
    QString m_runDir;
    OptimOptions m_optim;
    int64_t m_plannedSteps = 0;
    bool m_planSent = false;
    LaunchFailure m_failure;
    std::optional<StepMetrics> m_first, m_last;  // rank 0's, for the summary
    int m_stops = 0;
    bool m_ended = false;
};

}  // namespace tb
