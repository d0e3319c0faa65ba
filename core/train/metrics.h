// The records a training run reports, each one struct with one to/from-JSON pair: the same JSON
// lines in metrics.jsonl, the CLI's output and the studio's run history. Torch-free: the studio
// sees these.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// The statistics of a preference objective over a step's pairs (or a validation set's), named as
// TRL logs them: metrics.jsonl's step and eval lines carry "rewards/chosen", "rewards/rejected",
// "rewards/margins", "rewards/accuracies", "logps/chosen", "logps/rejected" (and our
// "logps/accuracies") and, for ORPO,
// "nll_loss", "log_odds_ratio"; a reward model's lines carry "rewards/*" (its scores) and
// "rewards/accuracies".
struct PreferenceStats {
    double rewardsChosen = 0, rewardsRejected = 0;  // mean implicit (or scalar) reward per pair
    double rewardsMargins = 0;                      // mean chosen - rejected
    double rewardsAccuracies = 0;                   // share of pairs with chosen > rejected
    double logpsChosen = 0, logpsRejected = 0;      // mean log-probability of each answer
    // Share of pairs whose chosen answer the model itself finds likelier (log-probability, or the
    // reward model's score): the model's own preference, reference-free ("logps/accuracies").
    double logpsAccuracies = 0;
    std::optional<double> nllLoss;       // ORPO: the SFT term on the chosen answers
    std::optional<double> logOddsRatio;  // ORPO: mean log odds ratio
    int64_t pairs = 0;                   // pairs these means are over
};
nlohmann::json toJson(const PreferenceStats& p);  // the keys above, flat
// The keys above from a step or eval line; nullopt when it has none (an SFT run).
std::optional<PreferenceStats> preferenceStatsFromJson(const nlohmann::json& line);

// One optimizer step. metrics.jsonl: {"type": "step", "step", "epoch", "tokens_seen" (runs written
// before 2026-12 say "tokens"; both are read), "loss", "lr",
// "grad_norm", "tokens_per_s", "memory_bytes", "memory_peak_bytes", "memory_reserved_bytes",
// "memory_phases": {"load", "forward", "backward", "optimizer_step"}, "resident_bytes"}.
struct StepMetrics {
    int64_t step = 0;        // optimizer steps done (1-based)
    int64_t totalSteps = 0;  // planned (not in the JSON line: run.json's planned_steps)
    double epoch = 0;        // fractional epoch
    int64_t tokensSeen = 0;  // real tokens of all micro-batches so far
    double loss = 0;         // mean loss per loss-carrying token of this step
    double lr = 0;
    double gradNorm = 0;  // before clipping
    double tokensPerSecond = 0;
    int64_t memoryCurrent =
        0;  // bytes of tensor memory after the step (CUDA allocated, or tracked CPU tensors)
    int64_t memoryPeak = 0;  // highest tensor memory during the step
    int64_t memoryReserved =
        0;  // CUDA: bytes the caching allocator holds (allocated + cached); CPU: 0
    // Tensor memory after each phase of the step (first micro-batch for forward/backward), bytes.
    int64_t memoryAfterLoad = 0, memoryAfterForward = 0, memoryAfterBackward = 0,
            memoryAfterOptimizer = 0;
    int64_t memoryResident = 0;                 // the process's resident memory (CPU), bytes
    double seconds = 0;                         // since the job started (not in the JSON line)
    std::optional<PreferenceStats> preference;  // preference and reward objectives
};

// One evaluation. metrics.jsonl: {"type": "eval", "step", "val_loss", "val_perplexity" (both
// absent when only a general holdout was evaluated), "memory_peak_bytes", and "general_loss",
// "general_loss_base" when there is a general holdout}.
struct EvalMetrics {
    int64_t step = 0;
    std::optional<double> valLoss;        // unset when there is no validation split
    std::optional<double> valPerplexity;  // unset with valLoss and for preference objectives
    std::optional<double> generalLoss;    // tuned model on the general holdout
    std::optional<double>
        generalLossBase;     // base model on the same holdout (forgetting = difference)
    int64_t memoryPeak = 0;  // highest tensor memory during the evaluation, bytes
    // Preference and reward objectives: the validation pairs' statistics (valLoss is then the
    // objective's mean loss per pair, valPerplexity unset).
    std::optional<PreferenceStats> preference;
};

// Generation-based evaluation during training (eval.generate_every): the metrics of greedy answers
// on a fixed seeded sample of the validation split. metrics.jsonl: {"type": "generation_eval",
// "step", "cases", "seconds", "metrics": {NAME: score}} in the metric's units (eval/metric.h).
struct GenerationEvalMetrics {
    int64_t step = 0;
    int64_t cases = 0;
    double seconds = 0;
    std::vector<std::pair<std::string, double>> metrics;  // in eval.metrics order
};

// Estimated (from config.json alone) vs measured memory after the first optimizer step, item by
// item. metrics.jsonl: {"type": "memory", "step", "seq", <key>: {"estimated", "measured"} ...}.
struct MemoryReport {
    struct Item {
        std::string key;        // weights, gradients, optimizer_states, activations, total
        int64_t estimated = 0;  // bytes
        int64_t measured =
            0;  // bytes; activations: tensors alive after the forward pass minus those after load
        bool exact = false;  // an exact match is expected (weights, gradients, optimizer states)
    };
    int64_t step = 0;
    int64_t seq = 0;  // tokens per sequence of the first micro-batch
    std::vector<Item> items;
};

// Why the divergence guard stopped an update. metrics.jsonl: {"type": "diverged", "step", "what",
// "value"}.
struct Diagnosis {
    int64_t step = 0;
    std::string what;  // "loss is NaN", "loss spiked to 12.3 (4.1x the recent mean 3.0)"
    double value = 0;
    std::string cause;   // likely cause (not in the JSON line)
    std::string advice;  // what to try (not in the JSON line)
};

// How well packing (data.packing) filled its bins: real tokens over token slots (bins x
// max_length). One JSON form: run.json's data.packing, `train --json`'s "packing" and `data render
// --packed`: {"bins", "examples", "tokens", "slots", "efficiency"}.
struct PackingStats {
    int64_t bins = 0;
    int64_t examples = 0;    // examples packed (those with at least one token)
    int64_t tokens = 0;      // real tokens
    int64_t tokenSlots = 0;  // bins x max_length; JSON "slots"
    double efficiency() const
    {
        return tokenSlots > 0 ? static_cast<double>(tokens) / static_cast<double>(tokenSlots) : 0.0;
    }
};

// What a run will do, known before its first step: the studio draws the schedule from it.
struct RunPlan {
    std::string runDir;
    int64_t totalSteps = 0;        // planned optimizer steps
    int64_t startStep = 0;         // steps already done (a resumed run)
    std::vector<double> schedule;  // learning rate of each step, 0-based
    int64_t trainSequences = 0, valSequences = 0;
    int64_t trainableParameters = 0, totalParameters = 0;
    std::string device;                   // "cpu", "cuda:0"
    std::optional<PackingStats> packing;  // packed training sets only
    std::string precisionPath;            // how the run computes (mixedPrecisionPath's words)
};

struct TrainSummary {
    std::string runDir;
    int64_t steps = 0;
    double initialLoss = 0;
    double finalLoss = 0;
    std::optional<double> valLoss;
    int64_t valLossStep = 0;  // the step valLoss was measured at (before the stop, when stopped)
    std::optional<double> initialValLoss;  // the base model's (method at init) validation loss
    int64_t trainableParameters = 0;
    int64_t totalParameters = 0;
    double tokensPerSecond = 0;
    int64_t peakMemoryBytes = 0;
    std::string resumedFrom;              // checkpoint folder, when resumed
    bool stopped = false;                 // stopped by the user before the planned steps
    std::optional<PackingStats> packing;  // packed training sets only
    // Of up to 16 held-out conversations, how many greedy answers ended with a stop token within
    // their budget (train/stop_rate.h); 0 prompts: not measured (a stopped run, no conversations).
    int64_t stopPrompts = 0;
    int64_t stopStopped = 0;
    // Preference and reward objectives: the share of validation pairs whose chosen answer gets the
    // higher reward, before the first update and at the end (JSON "val_accuracy",
    // "initial_val_accuracy").
    std::optional<double> valAccuracy, initialValAccuracy;
};

nlohmann::json toJson(const StepMetrics& m);
StepMetrics
stepMetricsFromJson(const nlohmann::json& line);  // throws tb::Error naming a missing key
nlohmann::json toJson(const EvalMetrics& e);
EvalMetrics evalMetricsFromJson(const nlohmann::json& line);
nlohmann::json toJson(const GenerationEvalMetrics& g);
GenerationEvalMetrics generationEvalFromJson(const nlohmann::json& line);
nlohmann::json toJson(const MemoryReport& r);
nlohmann::json toJson(const Diagnosis& d);
Diagnosis diagnosisFromJson(const nlohmann::json& line);  // cause and advice stay empty
nlohmann::json toJson(const TrainSummary& s);             // the CLI's `train --json` object
nlohmann::json toJson(const PackingStats& p);
PackingStats
packingStatsFromJson(const nlohmann::json& j);  // throws tb::Error naming a missing key

// The human-readable lines of a run's progress, the same on the console and in the studio's log.
std::string formatStepLine(const StepMetrics& m);
std::string formatEvalLine(const EvalMetrics& e);
std::string formatGenerationEvalLine(const GenerationEvalMetrics& g);
std::string formatMemoryReport(const MemoryReport& r);
std::string formatDiagnosis(const Diagnosis& d);
// "packed 480 examples into 130 bins: efficiency 93.1% (11620 of 12480 token slots)"
std::string formatPacking(const PackingStats& p);

// A run directory's metrics.jsonl, read without writing anything. Lines of other types and a torn
// last line are skipped; totalSteps comes from run.json's planned_steps when present.
struct RunMetrics {
    std::vector<StepMetrics> steps;
    std::vector<EvalMetrics> evals;
    std::vector<GenerationEvalMetrics> generationEvals;
    std::vector<Diagnosis> diagnoses;
    // Lines whose values do not fit their type, skipped: "<file>:<line>: <why>".
    std::vector<std::string> warnings;
};
// The run's metrics.jsonl; a line of valid JSON whose values do not fit its type is skipped with
// a warning, so one hand-edited line does not cost the run's curves.
RunMetrics readRunMetrics(const std::string& runDir);

}  // namespace tb
