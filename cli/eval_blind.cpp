// `tunebench eval blind` and `eval pairs`: a scorecard's two systems' answers into a blind
// comparison set of the dataset store (judged in the studio), and the preference pairs the
// verdicts made, as JSONL for preference tuning.
#include "cli/commands.h"

#include "data/curate/comparison.h"
#include "data/store/comparisons.h"
#include "data/store/store.h"
#include "eval/evaluate.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

namespace tb {
using nlohmann::json;

int cmdEvalBlind(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "scorecard", "a", "b", "set", "seed", "who", "json"});
    if (!args.has("store") || !args.has("scorecard"))
        fail("usage: tunebench eval blind --store S --scorecard DIR [--a 0] [--b 1] [--set NAME] "
             "[--seed N] [--json]");
    const std::string dir = args.value("scorecard");
    const auto systemDir = [&](const char* key, long long fallback) {
        const long long i = args.integer(key, fallback);
        const std::string path = joinPath(dir, "system-" + std::to_string(i));
        if (!isDirectory(path))
            fail(dir, ": no system ", i, " (", path, "); `tunebench eval compare` writes them");
        return path;
    };
    const eval::EvalResult x = eval::readEvalResult(systemDir("a", 0));
    const eval::EvalResult y = eval::readEvalResult(systemDir("b", 1));
    if (x.predictions.size() != y.predictions.size() ||
        x.data.value("sha256", "") != y.data.value("sha256", ""))
        fail(dir, ": the two systems did not answer the same cases");
    NewComparisonSet set;
    set.name = args.value("set", x.name + "-vs-" + y.name);
    set.sourceX = x.name.empty() ? "a" : x.name;
    set.sourceY = y.name.empty() ? "b" : y.name;
    set.seed = args.seed(0);
    for (size_t i = 0; i < x.predictions.size(); ++i) {
        const eval::EvalPrediction& p = x.predictions[i];
        set.prompts.push_back(p.input.source.empty() && !p.input.prompt.empty()
                                  ? p.input.prompt.back().content
                                  : p.input.source);
        set.messages.push_back(eval::messagesToJson(p.input.prompt));
        set.answersX.push_back(p.prediction);
        set.answersY.push_back(y.predictions[i].prediction);
    }
    const auto store = DataStore::open(args.value("store"));
    const std::vector<int64_t> ids = addComparisonSet(*store, set, args.value("who", "tunebench"));
    if (args.flag("json")) {
        out << json{{"set", set.name},
                    {"items", static_cast<int64_t>(ids.size())},
                    {"sources", {set.sourceX, set.sourceY}}}
                   .dump()
            << "\n";
    } else {
        out << "added " << ids.size() << " blind items to set '" << set.name << "' (" << set.sourceX
            << " vs " << set.sourceY << "); judge them on the studio's Evaluate page\n";
    }
    return 0;
}

int cmdEvalPairs(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "set", "summary", "json"});
    if (!args.has("store"))
        fail("usage: tunebench eval pairs --store S [--set NAME] [--summary] [--json]");
    const auto store = DataStore::open(args.value("store"), false);
    const std::string setName = args.value("set", "");
    if (args.flag("summary")) {
        if (setName.empty())
            fail("eval pairs --summary: give the set (--set NAME)");
        const ComparisonSummary s = summarizeComparison(*store, setName);
        json rates = json::array(), kappas = json::array();
        for (const WinRate& w : s.winRates)
            rates.push_back({{"x", w.sourceX},
                             {"y", w.sourceY},
                             {"verdicts", w.verdicts},
                             {"wins_x", w.winsX},
                             {"wins_y", w.winsY},
                             {"ties", w.ties},
                             {"win_rate_y", w.rate},
                             {"ci", {w.interval.lo, w.interval.hi}}});
        for (const PairAgreement& a : s.agreement)
            kappas.push_back({{"annotators", {a.annotatorA, a.annotatorB}},
                              {"items", a.items},
                              {"kappa", a.kappa}});
        out << json{{"set", setName}, {"win_rates", rates}, {"agreement", kappas}}.dump() << "\n";
        return 0;
    }
    for (const PreferencePair& p : preferencePairs(*store, setName))
        out << json{{"prompt", p.prompt},
                    {"messages", p.messages},
                    {"chosen", p.chosen},
                    {"rejected", p.rejected},
                    {"annotator", p.annotator},
                    {"source_chosen", p.sourceChosen},
                    {"source_rejected", p.sourceRejected},
                    {"set", p.setName}}
                   .dump()
            << "\n";
    return 0;
}

}  // namespace tb
