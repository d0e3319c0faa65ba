// TrainingJob: a fine-tuning run on its own thread (start, pause, resume, stop between optimizer
// steps), reporting through JobEvents. The job owns the thread and the control; the recipe
// (train/sft) runs the loop and returns its summary. Torch-free header: the studio and the CLI see
// only plain structs.
#pragma once

#include "train/control.h"
#include "train/metrics.h"
#include "train/train_config.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tb {

// Callbacks arrive on the job's thread; implementations must be thread-safe (the studio buffers
// them).
class JobEvents {
public:
    virtual ~JobEvents() = default;
    // Before the first step: the planned steps and the learning-rate schedule.
    virtual void onStarted(const RunPlan&) {}
    virtual void onStep(const StepMetrics&) {}
    virtual void onEval(const EvalMetrics&) {}
    virtual void onGenerationEval(const GenerationEvalMetrics&) {}
    virtual void onCheckpoint(int64_t /*step*/, const std::string& /*dir*/) {}
    virtual void onWarning(const std::string& /*message*/) {}
    virtual void onDiverged(const Diagnosis&) {}  // the job pauses itself after this
    virtual void onMemoryReport(const MemoryReport&) {}
    virtual void onFinished(const TrainSummary&) {}
    virtual void onFailed(const std::string& /*message*/) {}
};

class TrainingJob {
public:
    // A new run from a config, or (resumeDir non-empty) the continuation of runs/<name> from its
    // newest complete checkpoint.
    TrainingJob(TrainConfig config, JobEvents* events, std::string resumeDir = {});
    ~TrainingJob();  // stops and joins

    void start();  // spawns the thread
    void pause();  // takes effect between optimizer steps
    void resume();
    void stop();  // returns at once; the thread ends within one step and frees model and optimizer
    void wait();  // joins
    // Runs on the calling thread (the CLI); same behaviour as start() + wait().
    void runHere();

    JobState state() const { return m_control.state(); }
    const TrainSummary& summary() const { return m_summary; }
    const std::string& error() const { return m_error; }

private:
    void run();
    TrainConfig m_config;
    JobEvents* m_events;
    std::string m_resumeDir;
    std::thread m_thread;
    JobControl m_control;
    TrainSummary m_summary;  // written by the job's thread, read after it ends
    std::string m_error;
};

}  // namespace tb
