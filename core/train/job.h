// TrainingJob: a fine-tuning run on its own thread (start, pause, resume, stop between optimizer steps),
// reporting through JobEvents. Torch-free header: the studio and the CLI see only plain structs.
#pragma once

#include "train/train_config.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tb {

struct StepMetrics {
    int64_t step = 0;          // optimizer steps done (1-based)
    int64_t totalSteps = 0;
    double epoch = 0;          // fractional epoch
    int64_t tokensSeen = 0;    // real tokens of all micro-batches so far
    double loss = 0;           // mean loss per loss-carrying token of this step
    double lr = 0;
    double gradNorm = 0;       // before clipping
    double tokensPerSecond = 0;
    int64_t memoryCurrent = 0; // bytes of tensor memory after the step (CUDA allocated, or tracked CPU tensors)
    int64_t memoryPeak = 0;    // highest tensor memory during the step
    int64_t memoryReserved = 0;  // CUDA: bytes the caching allocator holds (allocated + cached); CPU: 0
    // Tensor memory after each phase of the step (first micro-batch for forward/backward), bytes.
    int64_t memoryAfterLoad = 0, memoryAfterForward = 0, memoryAfterBackward = 0, memoryAfterOptimizer = 0;
    int64_t memoryResident = 0;  // the process's resident memory (CPU), bytes
    double seconds = 0;        // since the job started
};

struct EvalMetrics {
    int64_t step = 0;
    double valLoss = 0;
    double valPerplexity = 0;
    std::optional<double> generalLoss;      // tuned model on the general holdout
    std::optional<double> generalLossBase;  // base model on the same holdout (forgetting = difference)
    int64_t memoryPeak = 0;                  // highest tensor memory during the evaluation, bytes
};

// Estimated (from config.json alone) vs measured memory after the first optimizer step, item by item.
struct MemoryReport {
    struct Item {
        std::string key;        // weights, gradients, optimizer_states, activations, total
        int64_t estimated = 0;  // bytes
        int64_t measured = 0;   // bytes; activations: tensors alive after the forward pass minus those after load
        bool exact = false;     // an exact match is expected (weights, gradients, optimizer states)
    };
    std::vector<Item> items;
};

struct Diagnosis {
    int64_t step = 0;
    std::string what;   // "loss is NaN", "loss spiked to 12.3 (4.1x the recent mean 3.0)"
    double value = 0;
    std::string cause;  // likely cause
    std::string advice; // what to try
};

struct TrainSummary {
    std::string runDir;
    int64_t steps = 0;
    double initialLoss = 0;
    double finalLoss = 0;
    std::optional<double> valLoss;
    std::optional<double> initialValLoss;  // the base model's (method at init) validation loss
    int64_t trainableParameters = 0;
    int64_t totalParameters = 0;
    double tokensPerSecond = 0;
    int64_t peakMemoryBytes = 0;
    std::string resumedFrom;  // checkpoint folder, when resumed
    bool stopped = false;     // stopped by the user before the planned steps
};

// Callbacks arrive on the job's thread; implementations must be thread-safe (the studio buffers them).
class JobEvents {
public:
    virtual ~JobEvents() = default;
    virtual void onStep(const StepMetrics&) {}
    virtual void onEval(const EvalMetrics&) {}
    virtual void onCheckpoint(int64_t step, const std::string& dir) {}
    virtual void onWarning(const std::string& message) {}
    virtual void onDiverged(const Diagnosis&) {}  // the job pauses itself after this
    virtual void onMemoryReport(const MemoryReport&) {}
    virtual void onFinished(const TrainSummary&) {}
    virtual void onFailed(const std::string& message) {}
};

enum class JobState { Idle, Running, Paused, Stopping, Finished, Failed };

class TrainingJob {
public:
    // A new run from a config, or (resumeDir non-empty) the continuation of runs/<name> from its newest
    // complete checkpoint.
    TrainingJob(TrainConfig config, JobEvents* events, std::string resumeDir = {});
    ~TrainingJob();  // stops and joins

    void start();   // spawns the thread
    void pause();   // takes effect between optimizer steps
    void resume();
    void stop();    // returns at once; the thread ends within one step and frees model and optimizer
    void wait();    // joins
    // Runs on the calling thread (the CLI); same behaviour as start() + wait().
    void runHere();

    JobState state() const { return m_state.load(); }
    const TrainSummary& summary() const { return m_summary; }
    const std::string& error() const { return m_error; }

private:
    void run();
    TrainConfig m_config;
    JobEvents* m_events;
    std::string m_resumeDir;
    std::thread m_thread;
    std::atomic<JobState> m_state{JobState::Idle};
    std::atomic<bool> m_stopRequested{false};
    std::atomic<bool> m_pauseRequested{false};
    TrainSummary m_summary;
    std::string m_error;
    friend class Trainer;
};

} // namespace tb
