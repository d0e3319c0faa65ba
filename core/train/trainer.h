// Trainer: the explicit fine-tuning loop behind TrainingJob (data, model, method, optimizer, schedule,
// evaluation, checkpoints, divergence guard). Internal to core.
#pragma once

#include "model/causal_lm.h"
#include "tokenizer/tokenizer.h"
#include "train/dataset.h"
#include "train/job.h"
#include "train/loss_scaler.h"
#include "train/optimizer.h"
#include "train/run_store.h"

#include <deque>
#include <memory>

namespace tb {

// Loads the base model of a run in fp32 on the run's device, with the run's method applied.
struct PreparedModel {
    std::shared_ptr<CausalLM> module;
    std::unique_ptr<Tokenizer> tokenizer;
    torch::Device device{torch::kCPU};
};
PreparedModel prepareModel(const TrainConfig& config);

// Tokenized train / validation / general sets of a run.
struct PreparedData {
    SequenceSet train, val, general;
    int64_t rejectedRows = 0;
    std::vector<std::string> warnings;
    std::string hash;  // SHA-256 over the data files, or of the snapshots' contents
    nlohmann::json snapshots = nlohmann::json::object();  // role -> {id, sha256, records} when from a store
};
PreparedData prepareData(const TrainConfig& config, const Tokenizer& tokenizer);

// Mean loss per loss-carrying token: logits [batch, seq, vocab], labels [batch, seq] (-100 = no loss),
// summed and divided by `normaliser` (the loss tokens of the whole optimizer step).
torch::Tensor tokenLoss(const torch::Tensor& logits, const torch::Tensor& labels, double normaliser);

// The tensors of one file of a checkpoint ("trainable", "optimizer", "rng"); throws when absent.
const std::vector<TensorBlob>& tensorFile(const CheckpointLoad& checkpoint, const std::string& name);
// Copies checkpointed trainable tensors into the parameters of the same names (shapes checked).
void loadTrainableTensors(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                          const std::vector<TensorBlob>& blobs, const std::string& where);

class Trainer {
public:
    Trainer(TrainingJob& job);
    void run();

private:
    void setUp();
    void restore(const CheckpointLoad& checkpoint);
    // One optimizer step over grad_accum micro-batches; returns false when the divergence guard fired.
    bool step();
    EvalMetrics evaluate(int64_t step);
    double meanLoss(const SequenceSet& set);
    void save();
    nlohmann::json positionState() const;
    std::vector<int64_t> nextMicroBatch();
    bool waitWhilePaused();
    void emitStep(double loss, double lr, double gradNorm, int64_t tokens, double seconds);
    int64_t memoryNow() const;
    void reportMemory(int64_t width);  // estimated vs measured after the first step
    // Summed token loss of one batch / normaliser, through the full logits or the chunked loss.
    torch::Tensor batchLoss(const torch::Tensor& ids, const torch::Tensor& labels, double normaliser);

    TrainingJob& m_job;
    const TrainConfig& m_config;
    JobEvents* m_events;
    std::unique_ptr<RunStore> m_store;
    PreparedModel m_model;
    PreparedData m_data;
    std::unique_ptr<Optimizer> m_optimizer;
    int64_t m_totalSteps = 0;
    int64_t m_step = 0;         // optimizer steps done
    int64_t m_epoch = 0;
    int64_t m_cursor = 0;       // next sequence index within the epoch order
    std::vector<int64_t> m_order;
    int64_t m_tokensSeen = 0;
    std::deque<double> m_recentLosses;
    std::optional<double> m_initialLoss;
    double m_lastLoss = 0;
    std::optional<double> m_lastValLoss;
    std::optional<double> m_initialValLoss;
    std::optional<double> m_generalBase;
    int64_t m_peakMemory = 0;
    std::string m_deviceName;     // for memory snapshots: "cpu", "cuda:0"
    int64_t m_gradientBytes = 0;
    int64_t m_memLoad = 0, m_memForward = 0, m_memBackward = 0, m_memOptimizer = 0, m_memStepPeak = 0;
    DynamicLossScaler m_scaler;  // fp16 only
    double m_trainSeconds = 0;
    int64_t m_trainTokens = 0;
};

// Resident memory of this process (bytes), from /proc/self/status.
int64_t residentBytes();

} // namespace tb
