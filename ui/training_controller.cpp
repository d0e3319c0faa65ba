// TrainingController: a JobEvents sink (or a LaunchedRun) feeding an EventBuffer; the drain updates
// the job state and hands the batch on.
#include "training_controller.h"

#include "launched_run.h"
#include "model/devices.h"
#include "util/error.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>

#include <exception>
#include <utility>

namespace tb {

// Receives the job's callbacks on its thread; only adds to the controller's buffer.
class TrainingController::Sink : public JobEvents {
public:
    explicit Sink(EventBuffer<JobEventBatch>* events) : m_events(events) {}
    void onStarted(const RunPlan& p) override
    {
        add([&](JobEventBatch& b) { b.plan = p; });
    }
    void onStep(const StepMetrics& m) override
    {
        add([&](JobEventBatch& b) { b.steps.push_back(m); });
    }
    void onEval(const EvalMetrics& m) override
    {
        add([&](JobEventBatch& b) { b.evals.push_back(m); });
    }
    void onGenerationEval(const GenerationEvalMetrics& g) override
    {
        add([&](JobEventBatch& b) { b.generationEvals.push_back(g); });
    }
    void onCheckpoint(int64_t step, const std::string& dir) override
    {
        add([&](JobEventBatch& b) {
            b.messages.push_back("step " + std::to_string(step) + ": checkpoint " + dir);
        });
    }
    void onWarning(const std::string& message) override
    {
        add([&](JobEventBatch& b) { b.messages.push_back("warning: " + message); });
    }
    void onDiverged(const Diagnosis& d) override
    {
        add([&](JobEventBatch& b) { b.divergences.push_back(d); });
    }
    void onMemoryReport(const MemoryReport& r) override
    {
        add([&](JobEventBatch& b) { b.memoryReports.push_back(r); });
    }
    void onFinished(const TrainSummary& s) override
    {
        add([&](JobEventBatch& b) { b.finished = s; });
    }
    void onFailed(const std::string& message) override
    {
        add([&](JobEventBatch& b) { b.failed = message; });
    }

private:
    template <class F> void add(F&& f) { m_events->add(std::forward<F>(f)); }
    EventBuffer<JobEventBatch>* m_events;
};

TrainingController::TrainingController(StudioState* state, QObject* parent)
    : QObject(parent), m_state(state),
      m_events(this, [this](JobEventBatch&& b) { drain(std::move(b)); }),
      m_sink(std::make_unique<Sink>(&m_events))
{
    qRegisterMetaType<tb::JobEventBatch>();
}

TrainingController::~TrainingController()
{
    if (m_job) {
        m_job->stop();
        m_job->wait();
    }
    m_launched.reset();  // interrupts a launcher still running and waits for its ranks
}

QString TrainingController::launcherPath() const
{
    return m_launcherPath.isEmpty() ? tunebenchBeside(QCoreApplication::applicationDirPath())
                                    : m_launcherPath;
}

JobEvents& TrainingController::events()
{
    return *m_sink;
}

bool TrainingController::active() const
{
    const StudioJobState s = m_state->jobState();
    return s == StudioJobState::Running || s == StudioJobState::Paused ||
           s == StudioJobState::Stopping;
}

bool TrainingController::start(const TrainConfig& config, QString* error)
{
    if (active()) {
        if (error)
            *error = tr("A run is already in progress.");
        return false;
    }
    TrainConfig checked;
    try {
        // Core's validation: the same messages as a run file would get, naming the key.
        checked = parseTrainConfig(toJson(config),
                                   config.sourcePath.empty() ? "studio" : config.sourcePath);
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromUtf8(e.what());
        return false;
    }
    if (m_job) {
        m_job->wait();
        m_job.reset();
    }
    m_launched.reset();
    m_events.discard();
    m_runDir = QDir::cleanPath(QString::fromStdString(checked.outputDir + "/" + checked.name));
    if (m_state->launch().processes > 1)
        return startLaunched(checked, error);
    m_launchedRun = false;
    m_processes = 1;
    m_job = std::make_unique<TrainingJob>(checked, m_sink.get());
    m_state->setJobState(StudioJobState::Running);
    m_job->start();
    Q_EMIT started(m_runDir, checked.maxSteps);
    return true;
}

bool TrainingController::startLaunched(const TrainConfig& checked, QString* error)
{
    const LaunchSettings& launch = m_state->launch();
    const QString problem = launchProblem(launch, cudaDeviceCount(), checked.device);
    if (!problem.isEmpty()) {
        if (error)
            *error = problem;
        return false;
    }
    // The ranks read the config core has checked (absolute paths), from the run folder.
    const QString configPath = launchConfigPath(m_runDir);
    if (!writeLaunchConfig(checked, configPath, error))
        return false;
    auto run = std::make_unique<LaunchedRun>(&m_events);
    if (!run->start(buildLaunchCommand(launch, launcherPath(), configPath), m_launchEnvironment,
                    m_runDir, launch.processes, checked.optim, error)) {
        QFile::remove(configPath);
        QDir().rmdir(m_runDir);  // only when nothing else is in it
        return false;
    }
    m_launched = std::move(run);
    m_launchedRun = true;
    m_processes = launch.processes;
    m_state->setJobState(StudioJobState::Running);
    Q_EMIT started(m_runDir, checked.maxSteps);
    return true;
}

void TrainingController::pause()
{
    if (m_job && m_state->jobState() == StudioJobState::Running) {
        m_job->pause();
        m_state->setJobState(StudioJobState::Paused);
    }
}

void TrainingController::resume()
{
    if (m_job && m_state->jobState() == StudioJobState::Paused) {
        m_job->resume();
        m_state->setJobState(StudioJobState::Running);
    }
}

void TrainingController::stop()
{
    if (m_job && active()) {
        m_job->stop();
        m_state->setJobState(StudioJobState::Stopping);
    } else if (m_launched && active()) {
        m_launched->stop();  // again while stopping: forced
        m_state->setJobState(StudioJobState::Stopping);
    }
}

void TrainingController::drain(JobEventBatch&& batch)
{
    // The guard paused the job itself; a Stop pressed meanwhile stays the state (the job ends).
    if (!batch.divergences.empty() && !m_launchedRun &&
        m_state->jobState() == StudioJobState::Running)
        m_state->setJobState(StudioJobState::Paused);
    if (!batch.steps.empty())
        m_state->setMemoryNow(batch.steps.back().memoryCurrent, tr("training"));
    const bool ended = batch.finished || batch.failed;
    Q_EMIT eventsArrived(batch);
    if (!ended)
        return;
    if (m_job) {
        m_job->wait();  // the thread reported last; joining returns at once and its memory is freed
        m_job.reset();
    }
    m_state->addRun(m_runDir);
    if (batch.failed) {
        m_state->setJobState(StudioJobState::Failed);
        Q_EMIT this->ended(false, QString::fromStdString(*batch.failed));
    } else {
        m_state->setJobState(StudioJobState::Finished);
        Q_EMIT this->ended(true, batch.finished->stopped
                                     ? tr("Stopped at step %1.").arg(batch.finished->steps)
                                     : tr("Finished %1 steps.").arg(batch.finished->steps));
    }
}

}  // namespace tb
