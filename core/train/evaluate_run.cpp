// Evaluating runs: held-out cases from a file, a snapshot or a run's validation split; a run's
// tuned model with its template; results in RUN/eval/NAME; scorecards and suites over base and
// runs.
#include "train/evaluate_run.h"

#include "data/ingest/example_file.h"
#include "data/record.h"
#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "train/metrics.h"
#include "train/run_store.h"
#include "train/setup.h"
#include "train/tuned_model.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/sha256.h"

#include <algorithm>
#include <chrono>
#include <ctime>

namespace tb {
namespace {

std::string nowStamp()
{
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "eval-%Y%m%d-%H%M%S", &tm);
    return text;
}

// A run's config from its run.json; throws naming the folder when it is no run.
TrainConfig evalRunConfig(const std::string& runDir)
{
    if (!fileExists(joinPath(runDir, "run.json")))
        fail(runDir, ": not a run folder (no run.json)");
    return runConfig(RunStore(runDir).readRunInfo(), runDir);
}

// Each base once, in a format it can take.
void checkBases(const std::vector<QuantOptions>& bases)
{
    for (size_t i = 0; i < bases.size(); ++i) {
        const QuantOptions& q = bases[i];
        if (q.doubleQuant && q.kind != QuantKind::Nf4 && q.kind != QuantKind::Fp4)
            fail("compare: double quantisation applies to the 4-bit formats (nf4, fp4), not ",
                 quantKindName(q.kind));
        if (q.head && !q.enabled())
            fail("compare: quantising the head needs a format (nf4, fp4 or int8)");
        for (size_t j = 0; j < i; ++j)
            if (bases[j] == q)
                fail("compare: the base ", baseLabel(q), " is given twice");
    }
}

}  // namespace

EvalCases loadEvalCases(const EvalDataSource& s)
{
    EvalCases out;
    std::vector<Example> examples;
    std::string where;
    if (!s.file.empty()) {
        ExampleFile f = readExampleFile(s.file);
        for (const RejectedRow& r : f.rejected)
            out.warnings.push_back("skipped " + r.location + ": " + r.reason);
        examples = std::move(f.examples);
        out.data["source"] = s.file;
        out.data["file_sha256"] = sha256File(s.file);
        where = s.file;
    } else if (!s.store.empty()) {
        if (s.snapshot.empty())
            fail(s.store, ": a store needs a snapshot id (--snapshot)");
        const auto store = DataStore::open(s.store, false);
        SnapshotInfo info;
        for (const SnapshotRecord& r : snapshotRecords(*store, s.snapshot, &info)) {
            const std::string source =
                s.store + "#" + s.snapshot + ":record " + std::to_string(r.recordId);
            examples.push_back(recordToExample(r.kind, r.fields, source));
            examples.back().source = source;
        }
        out.data["source"] = s.store + "#" + s.snapshot;
        out.data["snapshot_sha256"] = info.sha256;
        where = s.store + " snapshot " + s.snapshot;
    } else if (!s.run.empty()) {
        const TrainConfig config = evalRunConfig(s.run);
        examples = runExamples(config).val;
        out.data["source"] = s.run + " (validation split)";
        where = s.run + "'s validation split";
    } else {
        fail("evaluation: no data (give a data file, a store snapshot or a run)");
    }
    out.cases = eval::casesFromExamples(examples, s.limit);
    if (out.cases.empty())
        fail(where, ": no held-out case (a conversation that ends with an assistant answer)");
    out.data["sha256"] = eval::casesSha256(out.cases);
    out.data["cases"] = static_cast<int64_t>(out.cases.size());
    return out;
}

std::string runBaseModel(const std::string& runDir)
{
    return evalRunConfig(runDir).model;
}

EvalModel loadRunForEval(const std::string& runDir, const std::string& device)
{
    const TrainConfig config = evalRunConfig(runDir);
    EvalModel m;
    m.label = config.name;
    m.model = runDir;
    m.runDir = runDir;
    m.weights = loadTunedModel(runDir, LoadOptions{"fp32", device});
    m.tokenizer = loadTokenizer(config.model);
    m.chat = std::make_shared<const ChatTemplate>(runChatTemplate(config));
    return m;
}

std::string baseLabel(const QuantOptions& quant)
{
    if (!quant.enabled())
        return "base";
    return cat("base (", quantKindName(quant.kind), quant.doubleQuant ? ", double quant" : "",
               quant.head ? ", head" : "", ")");
}

EvalModel loadModelForEval(const std::string& modelDir, std::shared_ptr<const ChatTemplate> chat,
                           const std::string& device, const QuantOptions& quant)
{
    EvalModel m;
    m.label = baseLabel(quant);
    m.model = modelDir;
    m.weights = Model::load(modelDir, LoadOptions{"fp32", device, quant});
    m.tokenizer = loadTokenizer(modelDir);
    if (!chat) {
        auto own = ChatTemplate::fromModel(modelDir);
        if (!own)
            fail(modelDir, ": the model has no chat template of its own; choose one (--template)");
        chat = std::make_shared<const ChatTemplate>(std::move(*own));
    }
    m.chat = std::move(chat);
    return m;
}

std::pair<std::optional<double>, std::optional<double>> runGeneralLoss(const std::string& runDir)
{
    const RunMetrics metrics = readRunMetrics(runDir);
    for (auto it = metrics.evals.rbegin(); it != metrics.evals.rend(); ++it)
        if (it->generalLoss)
            return {it->generalLoss, it->generalLossBase};
    return {std::nullopt, std::nullopt};
}

eval::EvalResult evaluateLoaded(const EvalModel& model, const EvalCases& cases,
                                const eval::EvalSettings& settings,
                                const eval::EvalProgress& progress)
{
    eval::EvalResult r = eval::evaluateModel(*model.weights, *model.tokenizer, *model.chat,
                                             cases.cases, settings, progress);
    r.model = model.model;
    r.data = cases.data;
    r.settings["chat_template"] = model.chat->name();
    return r;
}

std::string runEvalDir(const std::string& runDir, const std::string& name)
{
    const std::string n = name.empty() ? nowStamp() : name;
    if (n == "." || n == ".." || n.find('/') != std::string::npos)
        fail("evaluation name '", n, "' must be a folder name without '/'");
    return joinPath(joinPath(runDir, "eval"), n);
}

eval::Scorecard compareRuns(const std::string& baseDir, const std::vector<std::string>& runDirs,
                            const EvalCases& cases, const eval::EvalSettings& settings,
                            const eval::EvalProgress& progress,
                            std::vector<eval::EvalResult>* results,
                            const std::vector<QuantOptions>& baseQuants)
{
    if (runDirs.empty())
        fail("compare: give at least one run");
    if (settings.resamples < 1)
        fail("compare: the scorecard's paired intervals need at least 1 bootstrap resample");
    const std::vector<QuantOptions> bases =
        baseQuants.empty() ? std::vector<QuantOptions>{QuantOptions{}} : baseQuants;
    checkBases(bases);
    eval::EvalSettings s = settings;
    for (const char* always : {"stop_rate", "length"})
        if (std::find(s.metrics.begin(), s.metrics.end(), always) == s.metrics.end())
            s.metrics.push_back(always);
    const auto total = static_cast<int64_t>(cases.cases.size() * (runDirs.size() + bases.size()));
    int64_t offset = 0;
    bool cancelled = false;
    auto step = [&](int64_t done, int64_t) {
        if (progress && !progress(offset + done, total)) {
            cancelled = true;
            return false;
        }
        return true;
    };
    // Every run is checked before any model loads; then one model is in memory at a time. The
    // bases render with the first run's template, so they answer the same prompts.
    std::vector<TrainConfig> configs;
    for (const std::string& dir : runDirs)
        configs.push_back(evalRunConfig(dir));
    const auto chat = std::make_shared<const ChatTemplate>(runChatTemplate(configs.front()));
    std::vector<eval::ScorecardSystem> systems;
    auto evaluate = [&](const EvalModel& model, std::optional<double> generalLoss) {
        eval::ScorecardSystem system{model.label, evaluateLoaded(model, cases, s, step), {}, {}};
        system.generalLoss = generalLoss;
        system.weights = model.weights->weightFootprint();
        systems.push_back(std::move(system));
        offset += static_cast<int64_t>(cases.cases.size());
    };
    for (size_t i = 0; i < bases.size() && !cancelled; ++i) {
        // The run logged its base's loss with the base held as the run held it.
        const bool asRun = bases[i] == configs.front().quant;
        evaluate(loadModelForEval(baseDir, chat, "auto", bases[i]),
                 asRun ? runGeneralLoss(runDirs.front()).second : std::nullopt);
    }
    for (size_t i = 0; i < runDirs.size() && !cancelled; ++i)
        evaluate(loadRunForEval(runDirs[i]), runGeneralLoss(runDirs[i]).first);
    if (cancelled)
        fail("compare: cancelled");
    if (results)
        for (const auto& system : systems)
            results->push_back(system.result);
    return eval::buildScorecard(std::move(systems), s);
}

eval::SuiteReport runSuiteOnRun(const std::string& runDir,
                                const std::vector<eval::SuiteCase>& suite, int maxNewTokens,
                                int batch, bool skipBase, const std::string& device,
                                const eval::EvalProgress& progress)
{
    const auto n = static_cast<int64_t>(suite.size());
    const int64_t total = skipBase ? n : 2 * n;
    int64_t offset = 0;
    const eval::EvalProgress step = [&](int64_t done, int64_t) {
        return !progress || progress(offset + done, total);
    };
    std::vector<eval::CaseOutcome> tunedOutcomes;
    std::shared_ptr<const ChatTemplate> chat;
    {  // one model in memory at a time
        const EvalModel tuned = loadRunForEval(runDir, device);
        chat = tuned.chat;
        tunedOutcomes = eval::runSuite(*tuned.weights, *tuned.tokenizer, *tuned.chat, suite,
                                       maxNewTokens, batch, step);
    }
    std::vector<eval::CaseOutcome> baseOutcomes;
    if (!skipBase) {
        offset = n;
        const EvalModel base = loadModelForEval(runBaseModel(runDir), chat, device);
        baseOutcomes = eval::runSuite(*base.weights, *base.tokenizer, *base.chat, suite,
                                      maxNewTokens, batch, step);
    }
    return eval::compareSuite(suite, baseOutcomes, tunedOutcomes);
}

}  // namespace tb
