// TrainingController: owns a core TrainingJob on the GUI thread. Job events arrive on the job's
// thread into an EventBuffer (mutex-guarded; one coalesced notification arms a ~40 ms timer) that
// drains and hands the pages one batch (so plots redraw at most ~25 times a second at any step
// rate).
#pragma once

#include "event_buffer.h"
#include "studio_state.h"
#include "train/job.h"

#include <QObject>

#include <memory>
#include <optional>
#include <vector>

namespace tb {

// Everything that happened since the last drain, in arrival order per kind.
struct JobEventBatch {
    std::optional<RunPlan> plan;  // the run's plan, once, before its first step
    std::vector<StepMetrics> steps;
    std::vector<EvalMetrics> evals;
    std::vector<GenerationEvalMetrics> generationEvals;  // eval.generate_every's metrics
    std::vector<MemoryReport> memoryReports;
    std::vector<Diagnosis> divergences;
    std::vector<std::string> messages;  // warnings and checkpoint notes, for the log
    std::optional<TrainSummary> finished;
    std::optional<std::string> failed;
};

class TrainingController : public QObject {
    Q_OBJECT
public:
    explicit TrainingController(StudioState* state, QObject* parent = nullptr);
    ~TrainingController() override;  // stops a running job and joins it

    // Validates the config through core (parseTrainConfig) and starts the job; false with a message
    // when the config is invalid or a job is active.
    bool start(const TrainConfig& config, QString* error = nullptr);
    void pause();
    void resume();
    void stop();
    bool active() const;  // running, paused or stopping
    StudioJobState state() const { return m_state->jobState(); }
    QString runDir() const { return m_runDir; }
    int drainIntervalMs() const { return m_events.intervalMs(); }
    int drains() const { return m_events.drains(); }
    // The callbacks the job reports to (callable from any thread, like the job's own): they only
    // add to the buffer. Tests feed synthetic events through it.
    JobEvents& events();

Q_SIGNALS:
    void started(const QString& runDir, qint64 totalSteps);
    void eventsArrived(const tb::JobEventBatch& batch);
    void ended(bool ok, const QString& message);

private:
    class Sink;
    void drain(JobEventBatch&& batch);

    StudioState* m_state;
    EventBuffer<JobEventBatch> m_events;
    std::unique_ptr<Sink> m_sink;
    std::unique_ptr<TrainingJob> m_job;
    QString m_runDir;
};

}  // namespace tb

Q_DECLARE_METATYPE(tb::JobEventBatch)
