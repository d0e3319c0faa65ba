// JobEventBatch: what a training run reported since the last drain, the one batch every Train-page
// consumer reads, whether the run is a TrainingJob in this process or ranks started through
// `tunebench train --nproc N` (whose files and output add the per-rank parts).
#pragma once

#include "train/metrics.h"

#include <QMetaType>
#include <QString>

#include <optional>
#include <string>
#include <vector>

namespace tb {

// One step record of one rank of a launched run (rank 0's from metrics.jsonl, rank R's from
// ranks/rank-R.jsonl).
struct RankStep {
    int rank = 0;
    StepMetrics step;
};

// One line of a launched run's output, as the launcher wrote it (prefix kept), with the rank it
// came from: kLauncherRank for the launcher's own lines ("[launch] ...", its own errors).
struct LaunchLine {
    static constexpr int kLauncherRank = -1;
    int rank = kLauncherRank;
    QString text;  // the whole line, "[rank 1] " prefix kept
};

// Everything that happened since the last drain, in arrival order per kind.
struct JobEventBatch {
    std::optional<RunPlan> plan;          // the run's plan, once, before its first step
    std::vector<StepMetrics> steps;       // the run's own steps (a launched run: rank 0's)
    std::vector<RankStep> rankSteps;      // a launched run: every rank's steps, rank 0's too
    std::vector<LaunchLine> launchLines;  // a launched run: the launcher's merged output
    std::vector<EvalMetrics> evals;
    std::vector<GenerationEvalMetrics> generationEvals;  // eval.generate_every's metrics
    std::vector<MemoryReport> memoryReports;
    std::vector<Diagnosis> divergences;
    std::vector<std::string> messages;  // warnings and checkpoint notes, for the log
    std::optional<TrainSummary> finished;
    std::optional<std::string> failed;
};

}  // namespace tb

Q_DECLARE_METATYPE(tb::JobEventBatch)
