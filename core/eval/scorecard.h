// Scorecard: the same held-out cases answered by a base model and one or more tuned models; per
// metric each system's score with its interval, and each tuned model's difference from the base
// with a paired bootstrap 95% interval and whether it excludes zero; forgetting on the general
// holdout; written as scorecard.json and a Markdown report.
#pragma once

#include "eval/bootstrap.h"
#include "eval/evaluate.h"
#include "model/model.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tb::eval {

struct ScorecardSystem {
    std::string label;  // "base", "base (nf4)", a run's name
    EvalResult result;
    // Loss per token on the general holdout (forgetting): the run's last logged value; for the
    // base, the run's logged base value. nullopt when the run has no general holdout.
    std::optional<double> generalLoss;
    // How the evaluated model held its weights (dtype, quantisation, bytes); nullopt: not known.
    std::optional<WeightFootprint> weights;
};

struct ScorecardCell {
    CorpusScore score;
    std::optional<PairedDelta> delta;  // tuned systems: b - base with its paired interval
};

struct Scorecard {
    std::vector<std::string> metrics;               // rows, in the requested order
    std::vector<ScorecardSystem> systems;           // systems[0] is the base
    std::vector<std::vector<ScorecardCell>> cells;  // [metric][system]
    std::vector<bool> higherIsBetter;               // per metric
    std::vector<bool> directional;                  // per metric: false for length
    std::string dataSha256;
    int64_t examples = 0;
    int resamples = 1000;
    uint64_t seed = 0;
};

// Throws when the systems did not answer the same cases (data SHA-256 or count differ) or a
// metric is unknown. Paired resamples use the same indices for every system.
Scorecard buildScorecard(std::vector<ScorecardSystem> systems, const EvalSettings& settings);

// scorecard.json: {"metrics": [...], "examples", "data_sha256", "resamples", "seed", "systems":
// [{"label", "model", "general_loss"?, "weights"?: {"dtype", "quant" ("none", "nf4", "fp4",
// "int8"), "double_quant", "bits_per_weight", "bytes", "parameters", "quantized_parameters",
// "quantized_bytes"}, "metrics": {NAME: {"score", "ci": [lo, hi], "delta"?: {"value", "ci": [lo,
// hi], "excludes_zero", "better" (absent for length: neither better nor worse)}}}}]}.
nlohmann::json toJson(const Scorecard& scorecard);
// The report: a table of systems x metrics with intervals, the deltas and their verdicts, the
// general holdout's loss before and after, and how each system held its weights.
std::string scorecardMarkdown(const Scorecard& scorecard);
// DIR/scorecard.json and DIR/scorecard.md, atomically.
void writeScorecard(const Scorecard& scorecard, const std::string& dir);

}  // namespace tb::eval
