// SftRecipe: supervised fine-tuning, the loop of a run read top to bottom. It composes the
// components of train/ (setup, batching, losses, optimizer, schedule, loss scaler, divergence
// guard, checkpoint, run store) and knows nothing of threads: TrainingJob runs it and owns its
// control. Launched as one rank of several (dist/dist_env.h), it trains data-parallel: the same
// loop, with a global batch split across ranks and gradients summed by dist/grad_sync.h (its
// parts in sft_dist.cpp). Internal to core.
#pragma once

#include "dist/dist_env.h"
#include "dist/grad_sync.h"
#include "dist/process_group.h"
#include "eval/evaluate.h"
#include "train/checkpoint.h"
#include "train/control.h"
#include "train/divergence_guard.h"
#include "train/job.h"
#include "train/loss_scaler.h"
#include "train/optimizer.h"
#include "train/run_store.h"
#include "train/setup.h"

#include <memory>
#include <optional>
#include <string>

namespace tb {

class SftRecipe {
public:
    // resumeDir empty: a new run in output_dir/name; else the continuation of that run.
    SftRecipe(const TrainConfig& config, std::string resumeDir, JobControl& control,
              JobEvents* events);
    TrainSummary run();

private:
    void setUp();
    void restore(const CheckpointLoad& checkpoint);
    bool step();  // one optimizer step; false when the divergence guard stopped it
    struct Accumulated {
        double loss = 0;     // mean token loss of the step
        int64_t tokens = 0;  // real tokens of its micro-batches
        int64_t width = 0;   // the first micro-batch's padded length
    };
    Accumulated accumulateGradients();
    void emitStep(double loss, double lr, double gradNorm, int64_t tokens, double seconds);
    // The held-out losses at `step`, recorded; nullopt (nothing recorded) when there is nothing
    // held out or a Stop came while they were computed.
    std::optional<EvalMetrics> evaluate(int64_t step);
    // Mean loss per loss-carrying token; nullopt when a Stop came between two of its batches
    // (a whole validation set can take minutes).
    std::optional<double> meanLoss(const SequenceSet& set);
    void save();
    void measureStops();  // the summary's stop rate on held-out conversations
    // eval.generate_every: the metrics of greedy answers on the fixed sample of validation cases.
    void generationEval(int64_t step);
    std::unique_ptr<Model> modelFacade() const;  // the module being trained behind Model
    void reportMemory(int64_t seq);
    std::vector<int64_t> nextMicroBatch();
    std::vector<int64_t> orderOfEpoch(int64_t epoch) const;  // epochOrder or lengthGroupedOrder
    int64_t memoryNow() const;
    void warn(const std::string& message);
    void record(const nlohmann::json& line) const;  // metrics.jsonl: rank 0 writes
    void zeroGrad();

    // Data parallelism (sft_dist.cpp); single-process runs have no group and skip these.
    void connect();  // joins the group when this process is one rank of a launched run
    // Resuming on another world size: batch_size per rank so the global batch stays the run's.
    void keepGlobalBatch(const nlohmann::json& runInfo);
    void openStore();       // rank 0 opens the run folder; the others learn which one
    void checkAgreement();  // every rank trains the same run config, model and data
    void setUpOptimizer();  // whole parameters, or this rank's ZeRO shard of them
    bool stopAgreed();      // a rank asked to stop (Ctrl-C): every rank stops after this step
    void restoreOptimizer(const CheckpointLoad& checkpoint);
    void saveSharded();  // every rank's optimizer shard in the one checkpoint
    int worldSize() const { return m_group ? m_group->size() : 1; }
    bool writer() const { return !m_group || m_group->rank() == 0; }

    TrainConfig m_config;  // a copy: resuming sets the trainable tokens the run recorded
    std::string m_resumeDir;
    JobControl& m_control;
    JobEvents* m_events;
    std::unique_ptr<RunStore> m_store;
    PreparedModel m_model;
    PreparedData m_data;
    std::optional<DistEnv> m_distEnv;
    std::unique_ptr<DistGroup> m_group;  // before m_sync and the optimizer: they use it
    std::unique_ptr<GradSync> m_sync;
    int m_shardedSaves = 0;
    std::unique_ptr<Optimizer> m_optimizer;
    DynamicLossScaler m_scaler;  // fp16 only
    DivergenceGuard m_guard;
    TrainerPosition m_position;
    std::vector<int64_t> m_order;  // this epoch's sequence order
    // The global micro-batch the run's length-grouped order is cut for: world x batch_size when
    // it started, kept when it resumes on another world size, so the order stays the same one.
    int64_t m_orderBatch = 0;
    int64_t m_totalSteps = 0;
    std::optional<double> m_lastValLoss;
    int64_t m_lastValStep = 0;
    std::string m_device;  // for memory snapshots: "cpu", "cuda:0"
    // Tensor memory (bytes) after loading and after each phase of the first micro-batch of a step,
    // named as in StepMetrics.
    int64_t m_memoryAfterLoad = 0, m_memoryAfterForward = 0, m_memoryAfterBackward = 0,
            m_memoryAfterOptimizer = 0, m_memoryPeak = 0;
    int64_t m_gradientBytes = 0;
    std::vector<eval::EvalCase> m_evalCases;  // eval.sample of the validation split (seeded)
    TrainSummary m_summary;
    double m_trainSeconds = 0;
    int64_t m_trainTokens = 0;
};

}  // namespace tb
