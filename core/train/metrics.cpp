// The one JSON form and the one console line of each record a run reports; reading a run's metrics.
#include "train/metrics.h"

#include "train/run_store.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_util.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace tb {
namespace {

using nlohmann::json;

double mib(int64_t bytes)
{
    return static_cast<double>(bytes) / (1 << 20);
}

}  // namespace

json toJson(const PreferenceStats& p)
{
    json j = {{"rewards/chosen", p.rewardsChosen},     {"rewards/rejected", p.rewardsRejected},
              {"rewards/margins", p.rewardsMargins},   {"rewards/accuracies", p.rewardsAccuracies},
              {"logps/chosen", p.logpsChosen},         {"logps/rejected", p.logpsRejected},
              {"logps/accuracies", p.logpsAccuracies}, {"pairs", p.pairs}};
    if (p.nllLoss)
        j["nll_loss"] = *p.nllLoss;
    if (p.logOddsRatio)
        j["log_odds_ratio"] = *p.logOddsRatio;
    return j;
}

std::optional<PreferenceStats> preferenceStatsFromJson(const json& line)
{
    if (!line.is_object() || !line.contains("rewards/accuracies"))
        return std::nullopt;
    PreferenceStats p;
    p.rewardsChosen = line.value("rewards/chosen", 0.0);
    p.rewardsRejected = line.value("rewards/rejected", 0.0);
    p.rewardsMargins = line.value("rewards/margins", 0.0);
    p.rewardsAccuracies = line.value("rewards/accuracies", 0.0);
    p.logpsChosen = line.value("logps/chosen", 0.0);
    p.logpsRejected = line.value("logps/rejected", 0.0);
    p.logpsAccuracies = line.value("logps/accuracies", 0.0);
    p.nllLoss = optionalNumberAt(line, "nll_loss");
    p.logOddsRatio = optionalNumberAt(line, "log_odds_ratio");
    p.pairs = line.value("pairs", int64_t(0));
    return p;
}

json toJson(const StepMetrics& m)
{
    json line = {{"type", "step"},
                 {"step", m.step},
                 {"epoch", m.epoch},
                 {"tokens_seen", m.tokensSeen},
                 {"loss", m.loss},
                 {"lr", m.lr},
                 {"grad_norm", m.gradNorm},
                 {"tokens_per_s", m.tokensPerSecond},
                 {"memory_bytes", m.memoryCurrent},
                 {"memory_peak_bytes", m.memoryPeak},
                 {"memory_reserved_bytes", m.memoryReserved},
                 {"memory_phases",
                  {{"load", m.memoryAfterLoad},
                   {"forward", m.memoryAfterForward},
                   {"backward", m.memoryAfterBackward},
                   {"optimizer_step", m.memoryAfterOptimizer}}},
                 {"resident_bytes", m.memoryResident}};
    if (m.preference)
        line.update(toJson(*m.preference));
    return line;
}

StepMetrics stepMetricsFromJson(const json& line)
{
    if (!line.is_object() || !line.contains("step") || !line.contains("loss"))
        fail("step metrics line without 'step' and 'loss'");
    StepMetrics m;
    m.step = line["step"].get<int64_t>();
    m.epoch = line.value("epoch", 0.0);
    // "tokens": the key of runs written before it took the struct's name
    m.tokensSeen = line.value("tokens_seen", line.value("tokens", int64_t(0)));
    m.loss = line["loss"].is_null() ? NAN : line["loss"].get<double>();
    m.lr = line.value("lr", 0.0);
    m.gradNorm = line.value("grad_norm", 0.0);
    m.tokensPerSecond = line.value("tokens_per_s", 0.0);
    m.memoryCurrent = line.value("memory_bytes", int64_t(0));
    m.memoryPeak = line.value("memory_peak_bytes", int64_t(0));
    m.memoryReserved = line.value("memory_reserved_bytes", int64_t(0));
    if (line.contains("memory_phases") && line["memory_phases"].is_object()) {
        const json& p = line["memory_phases"];
        m.memoryAfterLoad = p.value("load", int64_t(0));
        m.memoryAfterForward = p.value("forward", int64_t(0));
        m.memoryAfterBackward = p.value("backward", int64_t(0));
        m.memoryAfterOptimizer = p.value("optimizer_step", int64_t(0));
    }
    m.memoryResident = line.value("resident_bytes", int64_t(0));
    m.preference = preferenceStatsFromJson(line);
    return m;
}

json toJson(const EvalMetrics& e)
{
    json line = {{"type", "eval"}, {"step", e.step}, {"memory_peak_bytes", e.memoryPeak}};
    if (e.valLoss)
        line["val_loss"] = *e.valLoss;
    if (e.valPerplexity)
        line["val_perplexity"] = *e.valPerplexity;
    if (e.generalLoss)
        line["general_loss"] = *e.generalLoss;
    if (e.generalLossBase)
        line["general_loss_base"] = *e.generalLossBase;
    if (e.preference)
        line.update(toJson(*e.preference));
    return line;
}

EvalMetrics evalMetricsFromJson(const json& line)
{
    if (!line.is_object() || !line.contains("step"))
        fail("eval metrics line without 'step'");
    EvalMetrics e;
    e.step = line["step"].get<int64_t>();
    e.valLoss = optionalNumberAt(line, "val_loss");
    e.valPerplexity = optionalNumberAt(line, "val_perplexity");
    e.generalLoss = optionalNumberAt(line, "general_loss");
    e.generalLossBase = optionalNumberAt(line, "general_loss_base");
    e.memoryPeak = line.value("memory_peak_bytes", int64_t(0));
    e.preference = preferenceStatsFromJson(line);
    return e;
}

json toJson(const GenerationEvalMetrics& g)
{
    json metrics = json::object();
    for (const auto& [name, score] : g.metrics)
        metrics[name] = score;
    return {{"type", "generation_eval"},
            {"step", g.step},
            {"cases", g.cases},
            {"seconds", g.seconds},
            {"metrics", metrics}};
}

GenerationEvalMetrics generationEvalFromJson(const json& line)
{
    if (!line.is_object() || !line.contains("step") || !line.contains("metrics") ||
        !line["metrics"].is_object())
        fail("generation_eval metrics line without 'step' or 'metrics'");
    GenerationEvalMetrics g;
    g.step = line["step"].get<int64_t>();
    g.cases = line.value("cases", int64_t(0));
    g.seconds = line.value("seconds", 0.0);
    // nlohmann's object is ordered by key; the order of the run's eval.metrics is not kept.
    for (const auto& [name, v] : line["metrics"].items())
        if (v.is_number())
            g.metrics.emplace_back(name, v.get<double>());
    return g;
}

json toJson(const MemoryReport& r)
{
    json line = {{"type", "memory"}, {"step", r.step}, {"seq", r.seq}};
    for (const auto& item : r.items)
        line[item.key] = {{"estimated", item.estimated}, {"measured", item.measured}};
    return line;
}

json toJson(const Diagnosis& d)
{
    return {{"type", "diverged"},
            {"step", d.step},
            {"what", d.what},
            {"value", std::isfinite(d.value) ? json(d.value) : json(nullptr)}};
}

Diagnosis diagnosisFromJson(const json& line)
{
    Diagnosis d;
    d.step = line.value("step", int64_t(0));
    d.what = line.value("what", "");
    d.value =
        line.contains("value") && line["value"].is_number() ? line["value"].get<double>() : NAN;
    return d;
}

json toJson(const TrainSummary& s)
{
    return {{"run_dir", s.runDir},
            {"steps", s.steps},
            {"initial_loss", s.initialLoss},
            {"final_loss", s.finalLoss},
            {"val_loss", jsonOrNull(s.valLoss)},
            {"val_loss_step", s.valLoss ? json(s.valLossStep) : json()},
            {"stopped", s.stopped},
            {"trainable_parameters", s.trainableParameters},
            {"tokens_per_second", s.tokensPerSecond},
            {"peak_memory_bytes", s.peakMemoryBytes},
            {"stop_rate", s.stopPrompts > 0
                              ? json{{"prompts", s.stopPrompts},
                                     {"stopped", s.stopStopped},
                                     {"rate", double(s.stopStopped) / double(s.stopPrompts)}}
                              : json()},

            {"packing", s.packing ? toJson(*s.packing) : json(nullptr)},
            {"val_accuracy", jsonOrNull(s.valAccuracy)},
            {"initial_val_accuracy", jsonOrNull(s.initialValAccuracy)}};
}

json toJson(const PackingStats& p)
{
    return {{"bins", p.bins},
            {"examples", p.examples},
            {"tokens", p.tokens},
            {"slots", p.tokenSlots},
            {"efficiency", p.efficiency()}};
}

PackingStats packingStatsFromJson(const json& j)
{
    PackingStats p;
    for (const char* key : {"bins", "examples", "tokens", "slots"})
        if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer())
            fail("packing record without integer '", key, "'");
    p.bins = j["bins"].get<int64_t>();
    p.examples = j["examples"].get<int64_t>();
    p.tokens = j["tokens"].get<int64_t>();
    p.tokenSlots = j["slots"].get<int64_t>();
    return p;
}

std::string formatStepLine(const StepMetrics& m)
{
    char line[256];
    std::snprintf(line, sizeof line,
                  "step %" PRId64 "/%" PRId64 "  epoch %.2f  loss %.4f  lr %.3g  grad norm %.3f  "
                  "%.0f tok/s  tensors %.1f MiB (peak %.1f)",
                  m.step, m.totalSteps, m.epoch, m.loss, m.lr, m.gradNorm, m.tokensPerSecond,
                  mib(m.memoryCurrent), mib(m.memoryPeak));
    std::string out = line;
    if (m.preference) {
        std::snprintf(line, sizeof line, "  accuracy %.2f  margin %.3f",
                      m.preference->rewardsAccuracies, m.preference->rewardsMargins);
        out += line;
    }
    return out;
}

std::string formatEvalLine(const EvalMetrics& e)
{
    char line[256];
    if (e.preference) {  // pairs: the objective's loss per pair and how many rank right
        std::snprintf(line, sizeof line,
                      "eval step %" PRId64 ": val loss %.4f  accuracy %.1f%% of %" PRId64
                      " pairs  margin %.3f",
                      e.step, e.valLoss.value_or(0), 100 * e.preference->rewardsAccuracies,
                      e.preference->pairs, e.preference->rewardsMargins);
        return line;
    }
    std::string out = "eval step " + std::to_string(e.step) + ":";
    if (e.valLoss) {
        std::snprintf(line, sizeof line, " val loss %.4f (perplexity %.2f)", *e.valLoss,
                      e.valPerplexity.value_or(std::exp(*e.valLoss)));
        out += line;
    }
    if (e.generalLoss) {  // only a general holdout: its loss is the line, not a val loss of 0
        std::snprintf(line, sizeof line, "%sgeneral holdout %g", e.valLoss ? "  " : " ",
                      *e.generalLoss);
        out += line;
        if (e.generalLossBase) {
            std::snprintf(line, sizeof line, " (base %g)", *e.generalLossBase);
            out += line;
        }
    }
    return out;
}

std::string formatGenerationEvalLine(const GenerationEvalMetrics& g)
{
    std::string out = "generation eval step " + std::to_string(g.step) + " (" +
                      std::to_string(g.cases) + " cases):";
    for (const auto& [name, score] : g.metrics) {
        char part[96];
        std::snprintf(part, sizeof part, " %s %.4g", name.c_str(), score);
        out += part;
    }
    return out;
}

std::string formatMemoryReport(const MemoryReport& r)
{
    std::string out = "memory after the first step (estimated / measured, MiB):";
    for (const auto& item : r.items) {
        char part[128];
        std::snprintf(part, sizeof part, "  %s %.1f / %.1f", item.key.c_str(), mib(item.estimated),
                      mib(item.measured));
        out += part;
    }
    return out;
}

std::string formatDiagnosis(const Diagnosis& d)
{
    return "training paused at step " + std::to_string(d.step) + ": " + d.what +
           ". Likely cause: " + d.cause + ". Try: " + d.advice + ".";
}

std::string formatPacking(const PackingStats& p)
{
    char line[256];
    std::snprintf(line, sizeof line,
                  "packed %" PRId64 " examples into %" PRId64 " bins: efficiency %.1f%% (%" PRId64
                  " of %" PRId64 " token slots)",
                  p.examples, p.bins, 100.0 * p.efficiency(), p.tokens, p.tokenSlots);
    return line;
}

RunMetrics readRunMetrics(const std::string& runDir)
{
    const RunStore store(runDir);
    RunMetrics out;
    int64_t planned = 0;
    if (fileExists(joinPath(runDir, "run.json"))) {
        try {  // the curves do not need run.json: a bad one is said, not fatal
            const json info = store.readRunInfo();
            const auto steps = info.find("planned_steps");
            planned = steps != info.end() && steps->is_number_integer() ? steps->get<int64_t>() : 0;
        } catch (const std::exception& e) {
            out.warnings.push_back(e.what());
        }
    }
    std::vector<int64_t> lineNumbers;
    const std::vector<json> lines = store.readMetrics(&lineNumbers);
    for (size_t i = 0; i < lines.size(); ++i) {
        const json& line = lines[i];
        try {
            if (!line.is_object())
                fail("not a JSON object");
            const auto type = line.find("type");
            if (type == line.end() || !type->is_string())
                continue;  // lines of no known type (events, notes) are not curves
            if (*type == "step" && line.contains("loss")) {
                out.steps.push_back(stepMetricsFromJson(line));
                out.steps.back().totalSteps = planned;
            } else if (*type == "eval") {
                out.evals.push_back(evalMetricsFromJson(line));
            } else if (*type == "generation_eval") {
                out.generationEvals.push_back(generationEvalFromJson(line));
            } else if (*type == "diverged") {
                out.diagnoses.push_back(diagnosisFromJson(line));
            }
        } catch (const std::exception& e) {
            out.warnings.push_back(cat(joinPath(runDir, "metrics.jsonl"), ":", lineNumbers[i], ": ",
                                       e.what(), "; line skipped"));
        }
    }
    return out;
}

}  // namespace tb
