// Evaluating runs: the held-out cases a run or a file or a snapshot holds, a run's tuned model and
// chat template loaded behind the Model facade, results written into RUN/eval/NAME. The recipe
// that composes eval/ with the run store; eval/ itself knows nothing of runs.
#pragma once

#include "eval/evaluate.h"
#include "eval/scorecard.h"
#include "eval/suite.h"
#include "model/model.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// Where held-out cases come from: a data file, a store snapshot, or (neither) a run's validation
// split as the run selected it.
struct EvalDataSource {
    std::string file;   // JSONL (or any format the importer reads)
    std::string store;  // dataset store + snapshot id
    std::string snapshot;
    std::string run;    // used when file and store are empty
    int64_t limit = 0;  // first N cases; 0 = all
};

struct EvalCases {
    std::vector<eval::EvalCase> cases;
    nlohmann::json
        data;  // {"source", "sha256" (of the cases), "file_sha256"? | "snapshot_sha256"?}
    std::vector<std::string> warnings;  // rows the importer skipped
};
// Throws naming the file, snapshot or run when there is no case.
EvalCases loadEvalCases(const EvalDataSource& source);

// A model to evaluate, loaded: the base model folder, or a run's tuned model (base + method +
// newest checkpoint), with its tokenizer and the chat template its prompts use.
struct EvalModel {
    std::string label;   // "base", "base (nf4)" or the run's name
    std::string model;   // the model folder or the run folder
    std::string runDir;  // empty for a base model
    std::unique_ptr<Model> weights;
    std::unique_ptr<Tokenizer> tokenizer;
    std::shared_ptr<const ChatTemplate> chat;
};
// A run: its tuned model, the base model's tokenizer and the run's chat template.
EvalModel loadRunForEval(const std::string& runDir, const std::string& device = "auto");
// A model folder; chat: the template to render with (a run's, so base and tuned see the same
// prompts), else the model's own. quant: the blocks' linear weights held quantised, as a QLoRA
// run holds its base (the label says so: "base (nf4)").
EvalModel loadModelForEval(const std::string& modelDir,
                           std::shared_ptr<const ChatTemplate> chat = {},
                           const std::string& device = "auto", const QuantOptions& quant = {});
// A base model's label on a scorecard: "base", "base (nf4)", "base (nf4, double quant)",
// "base (int8)".
std::string baseLabel(const QuantOptions& quant);
// The base model folder a run was trained from (run.json's config.model).
std::string runBaseModel(const std::string& runDir);
// The general holdout's loss per token, tuned and base, as the run's last evaluation logged them.
std::pair<std::optional<double>, std::optional<double>> runGeneralLoss(const std::string& runDir);

// Evaluates a loaded model; the result carries the label, the data record and the settings.
eval::EvalResult evaluateLoaded(const EvalModel& model, const EvalCases& cases,
                                const eval::EvalSettings& settings,
                                const eval::EvalProgress& progress = {});
// RUN/eval/NAME (a new name when empty: "eval-<UTC time>").
std::string runEvalDir(const std::string& runDir, const std::string& name);

// A scorecard of the base model and runs on the same cases (the first run's template), with the
// forgetting figures from each run's log. bases: the base model once per entry, its linear
// weights held as the entry says (empty: once, unquantised); the first base is the reference
// every delta is taken against; a base gets the run's logged general-holdout loss when it holds
// its weights as the first run held its base. Progress counts cases over all systems.
eval::Scorecard compareRuns(const std::string& baseDir, const std::vector<std::string>& runDirs,
                            const EvalCases& cases, const eval::EvalSettings& settings,
                            const eval::EvalProgress& progress = {},
                            std::vector<eval::EvalResult>* results = nullptr,
                            const std::vector<QuantOptions>& bases = {});

// A regression suite on a run's tuned model and its base model (skipBase: the tuned one alone).
// progress counts cases over both models; returning false stops with tb::Error "cancelled".
eval::SuiteReport runSuiteOnRun(const std::string& runDir,
                                const std::vector<eval::SuiteCase>& suite, int maxNewTokens,
                                int batch, bool skipBase, const std::string& device = "auto",
                                const eval::EvalProgress& progress = {});

}  // namespace tb
