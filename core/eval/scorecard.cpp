// Scorecards: per-metric scores of a base and tuned models on the same cases, paired bootstrap
// differences, forgetting on the general holdout; JSON and Markdown.
#include "eval/scorecard.h"

#include "util/error.h"
#include "util/file_util.h"

#include <cstdio>

namespace tb::eval {
namespace {

std::string fixed(double v, int digits = 3)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

}  // namespace

Scorecard buildScorecard(std::vector<ScorecardSystem> systems, const EvalSettings& settings)
{
    if (systems.size() < 2)
        fail("scorecard: needs the base model and at least one tuned model");
    const EvalResult& base = systems.front().result;
    for (const ScorecardSystem& s : systems) {
        if (s.result.predictions.size() != base.predictions.size())
            fail("scorecard: ", s.label, " answered ", s.result.predictions.size(), " cases and ",
                 systems.front().label, " ", base.predictions.size(),
                 ": the systems must answer the same cases");
        if (s.result.data.value("sha256", "") != base.data.value("sha256", ""))
            fail("scorecard: ", s.label, " was evaluated on other cases than ",
                 systems.front().label, " (data SHA-256 differs)");
    }
    Scorecard sc;
    sc.metrics = settings.metrics;
    sc.dataSha256 = base.data.value("sha256", "");
    sc.examples = static_cast<int64_t>(base.predictions.size());
    sc.resamples = settings.resamples;
    sc.seed = settings.seed;
    const auto metrics = buildMetrics(settings.metrics, settings.metricOptions);
    for (const auto& metric : metrics) {
        std::vector<std::vector<std::vector<double>>> stats;  // [system][example]
        for (const ScorecardSystem& s : systems) {
            stats.emplace_back();
            for (const EvalPrediction& p : s.result.predictions) {
                if (metric->needsReferences() && p.input.references.empty())
                    fail(s.label, ": ", p.input.id, ": metric '", metric->name(),
                         "' needs a reference");
                stats.back().push_back(metric->stats(metricInput(p)));
            }
        }
        std::vector<ScorecardCell> row;
        for (size_t i = 0; i < systems.size(); ++i) {
            ScorecardCell cell;
            cell.score = bootstrapScore(*metric, stats[i], settings.resamples, settings.seed);
            if (i > 0)
                cell.delta =
                    pairedBootstrap(*metric, stats[0], stats[i], settings.resamples, settings.seed);
            row.push_back(cell);
        }
        sc.cells.push_back(std::move(row));
        sc.higherIsBetter.push_back(metric->higherIsBetter());
        sc.directional.push_back(metric->directional());
    }
    sc.systems = std::move(systems);
    return sc;
}

nlohmann::json toJson(const Scorecard& sc)
{
    nlohmann::json systems = nlohmann::json::array();
    for (size_t s = 0; s < sc.systems.size(); ++s) {
        nlohmann::json metrics = nlohmann::json::object();
        for (size_t m = 0; m < sc.metrics.size(); ++m) {
            const ScorecardCell& c = sc.cells[m][s];
            nlohmann::json cell = {{"score", c.score.score},
                                   {"ci", {c.score.ci.lo, c.score.ci.hi}}};
            if (c.delta) {
                const bool up = c.delta->delta > 0;
                cell["delta"] = {{"value", c.delta->delta},
                                 {"ci", {c.delta->ci.lo, c.delta->ci.hi}},
                                 {"excludes_zero", c.delta->excludesZero}};
                if (sc.directional[m])
                    cell["delta"]["better"] = c.delta->excludesZero && up == sc.higherIsBetter[m];
            }
            metrics[sc.metrics[m]] = cell;
        }
        nlohmann::json system = {{"label", sc.systems[s].label},
                                 {"model", sc.systems[s].result.model},
                                 {"metrics", metrics}};
        if (sc.systems[s].generalLoss)
            system["general_loss"] = *sc.systems[s].generalLoss;
        if (const auto& w = sc.systems[s].weights)
            system["weights"] = {{"dtype", w->dtype},
                                 {"quant", quantKindName(w->quant.kind)},
                                 {"double_quant", w->quant.doubleQuant},
                                 {"bits_per_weight", w->bitsPerWeight()},
                                 {"bytes", w->bytes},
                                 {"parameters", w->parameters},
                                 {"quantized_parameters", w->quantizedParameters},
                                 {"quantized_bytes", w->quantizedBytes}};
        systems.push_back(system);
    }
    return {{"metrics", sc.metrics},     {"examples", sc.examples}, {"data_sha256", sc.dataSha256},
            {"resamples", sc.resamples}, {"seed", sc.seed},         {"systems", systems}};
}

std::string scorecardMarkdown(const Scorecard& sc)
{
    std::string md = "# Scorecard\n\n";
    md += std::to_string(sc.examples) + " held-out cases (SHA-256 " + sc.dataSha256.substr(0, 12) +
          "…), 95% bootstrap intervals over " + std::to_string(sc.resamples) +
          " resamples; deltas are paired (the same resampled cases for every system).\n\n";
    md += "| metric |";
    for (const ScorecardSystem& s : sc.systems)
        md += " " + s.label + " |";
    for (size_t s = 1; s < sc.systems.size(); ++s)
        md += " Δ " + sc.systems[s].label + " |";
    md += "\n|---|";
    for (size_t s = 0; s < 2 * sc.systems.size() - 1; ++s)
        md += "---|";
    md += "\n";
    for (size_t m = 0; m < sc.metrics.size(); ++m) {
        const int d = metricDecimals(sc.metrics[m]);
        const char* note = !sc.directional[m]      ? " (tokens)"
                           : !sc.higherIsBetter[m] ? " (lower is better)"
                                                   : "";
        md += "| " + sc.metrics[m] + note + " |";
        for (const ScorecardCell& c : sc.cells[m])
            md += cat(' ', fixed(c.score.score, d), " [", fixed(c.score.ci.lo, d), ", ",
                      fixed(c.score.ci.hi, d), "] |");
        for (size_t s = 1; s < sc.systems.size(); ++s) {
            const PairedDelta& delta = *sc.cells[m][s].delta;
            const bool better = (delta.delta > 0) == sc.higherIsBetter[m];
            const std::string verdict = !delta.excludesZero ? "no clear difference"
                                        : !sc.directional[m]
                                            ? (delta.delta > 0 ? "longer" : "shorter")
                                        : better ? "better"
                                                 : "worse";
            md += cat(' ', delta.delta >= 0 ? "+" : "", fixed(delta.delta, d), " [",
                      fixed(delta.ci.lo, d), ", ", fixed(delta.ci.hi, d), "] ", verdict, " |");
        }
        md += "\n";
    }
    bool general = false;
    for (const ScorecardSystem& s : sc.systems)
        general = general || s.generalLoss.has_value();
    if (general) {
        md += "\n## General holdout (forgetting)\n\nLoss per token on the run's general text; "
              "higher after tuning means the fine-tune cost general ability.\n\n| system | loss "
              "|\n|---|---|\n";
        for (const ScorecardSystem& s : sc.systems)
            md +=
                "| " + s.label + " | " + (s.generalLoss ? fixed(*s.generalLoss, 4) : "–") + " |\n";
    }
    bool weights = false;
    for (const ScorecardSystem& s : sc.systems)
        weights = weights || s.weights.has_value();
    if (weights) {
        md += "\n## Weights\n\nHow each system held its weights while it answered (quantised "
              "layers at their packed size, statistics included).\n\n| system | weights |\n|---|"
              "---|\n";
        for (const ScorecardSystem& s : sc.systems)
            md += "| " + s.label + " | " + (s.weights ? describeWeights(*s.weights) : "–") + " |\n";
    }
    return md;
}

void writeScorecard(const Scorecard& scorecard, const std::string& dir)
{
    makeDirectories(dir);
    writeFileAtomic(joinPath(dir, "scorecard.json"), toJson(scorecard).dump(2) + "\n");
    writeFileAtomic(joinPath(dir, "scorecard.md"), scorecardMarkdown(scorecard));
}

}  // namespace tb::eval
