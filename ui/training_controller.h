// TrainingController: owns a run on the GUI thread: a core TrainingJob in this process, or with
// several processes (StudioState::launch) a LaunchedRun, `tunebench train --nproc N` in a
// QProcess. Events arrive (on the job's thread, or from the launcher's output and the ranks' files)
// into one EventBuffer (mutex-guarded; one coalesced notification arms a ~40 ms timer) that drains
// and hands the pages one batch (so plots redraw at most ~25 times a second at any step rate).
#pragma once

#include "event_buffer.h"
#include "job_event_batch.h"
#include "studio_state.h"
#include "train/job.h"

#include <QObject>
#include <QStringList>

#include <memory>
#include <optional>
#include <vector>

namespace tb {

class LaunchedRun;

class TrainingController : public QObject {
    Q_OBJECT
public:
    explicit TrainingController(StudioState* state, QObject* parent = nullptr);
    ~TrainingController() override;  // stops a running job and joins it

    // Validates the config through core (parseTrainConfig) and starts the job; false with a message
    // when the config is invalid or a job is active. With StudioState::launch().processes > 1 it
    // writes the checked config into the run folder (launch-config.json) and starts the launcher
    // (launcherPath()) on it instead; dist.zero comes with the config.
    bool start(const TrainConfig& config, QString* error = nullptr);
    void pause();   // in-process runs only
    void resume();  // in-process runs only
    // In-process: stops after the current step. Launched: SIGINT to the launcher (every rank stops
    // after the same step and saves a checkpoint); again while it stops: forced (no checkpoint).
    void stop();
    bool active() const;                             // running, paused or stopping
    bool launched() const { return m_launchedRun; }  // the current (or last) run is launched
    int processes() const { return m_processes; }    // of the current (or last) run
    StudioJobState state() const { return m_state->jobState(); }
    QString runDir() const { return m_runDir; }
    int drainIntervalMs() const { return m_events.intervalMs(); }
    int drains() const { return m_events.drains(); }
    // The callbacks the job reports to (callable from any thread, like the job's own): they only
    // add to the buffer. Tests feed synthetic events through it.
    JobEvents& events();
    // The tunebench executable a launched run starts (default: beside the studio's own) and
    // KEY=VALUE pairs added to its environment (tests: a stand-in launcher, OMP_NUM_THREADS=1).
    QString launcherPath() const;
    void setLauncherPath(const QString& path) { m_launcherPath = path; }
    void setLaunchEnvironment(const QStringList& keyValues) { m_launchEnvironment = keyValues; }
    LaunchedRun* launchedRun() const { return m_launched.get(); }

Q_SIGNALS:
    void started(const QString& runDir, qint64 totalSteps);
    void eventsArrived(const tb::JobEventBatch& batch);
    void ended(bool ok, const QString& message);

private:
    class Sink;
    bool startLaunched(const TrainConfig& checked, QString* error);
    void drain(JobEventBatch&& batch);

    StudioState* m_state;
    EventBuffer<JobEventBatch> m_events;
    std::unique_ptr<Sink> m_sink;
    std::unique_ptr<TrainingJob> m_job;
    std::unique_ptr<LaunchedRun> m_launched;
    QString m_runDir;
    QString m_launcherPath;
    QStringList m_launchEnvironment;
    bool m_launchedRun = false;
    int m_processes = 1;
};

}  // namespace tb
