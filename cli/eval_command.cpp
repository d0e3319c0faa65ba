// `tunebench eval`: generate answers for held-out prompts and score them (eval), score predictions
// made elsewhere (eval score), base vs tuned scorecards (eval compare) and regression suites that
// gate an export or a CI job (eval suite).
#include "cli/commands.h"

#include "eval/evaluate.h"
#include "eval/scorecard.h"
#include "eval/suite.h"
#include "eval/terminology.h"
#include "model/model.h"
#include "train/evaluate_run.h"
#include "util/error.h"
#include "util/file_util.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

namespace tb {
namespace {

using nlohmann::json;

std::vector<std::string> splitList(const std::string& text)
{
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty())
            out.push_back(item);
    return out;
}

// --metrics, --glossary, --rouge-stemmer, --resamples, --seed, generation and batch options.
eval::EvalSettings evalSettings(const Args& args)
{
    eval::EvalSettings s;
    if (args.has("metrics"))
        s.metrics = splitList(args.value("metrics"));
    s.batch = static_cast<int>(args.integer("batch", s.batch));
    if (s.batch < 1)
        fail("option --batch must be at least 1");
    s.resamples = static_cast<int>(args.integer("resamples", s.resamples));
    if (s.resamples < 0)
        fail("option --resamples must not be negative");
    s.seed = args.seed(0);
    GenerateOptions& g = s.generation;
    g.maxNewTokens = static_cast<int>(args.integer("max-new-tokens", g.maxNewTokens));
    if (g.maxNewTokens < 1)
        fail("option --max-new-tokens must be at least 1");
    const bool sampling = args.has("temperature") || args.has("top-k") || args.has("top-p");
    g.greedy = args.flag("greedy") || !sampling;
    g.temperature = args.number("temperature", 1.0);
    g.topK = static_cast<int>(args.integer("top-k", 0));
    g.topP = args.number("top-p", 1.0);
    g.seed = s.seed;
    if (g.topP <= 0.0 || g.topP > 1.0)
        fail("option --top-p must be in (0, 1]");
    g.repetitionPenalty = args.number("repetition-penalty", 1.0);
    if (args.has("glossary")) {
        s.glossaryPath = args.value("glossary");
        s.metricOptions.glossary = eval::loadGlossary(s.glossaryPath);
    }
    s.metricOptions.rougeStemmer = args.flag("rouge-stemmer");
    eval::buildMetrics(s.metrics, s.metricOptions);  // unknown names fail before any loading
    return s;
}

EvalDataSource dataSource(const Args& args, const std::string& run)
{
    EvalDataSource d;
    d.file = args.value("data", "");
    d.store = args.value("store", "");
    d.snapshot = args.value("snapshot", "");
    d.run = run;
    d.limit = args.integer("limit", 0);
    if (args.has("limit") && d.limit < 1)
        fail("option --limit is ", d.limit, " (must be at least 1; leave it out for every case)");
    if (!d.file.empty() && !d.store.empty())
        fail("eval: give --data or --store, not both");
    if (!d.snapshot.empty() && d.store.empty())
        fail("eval: --snapshot needs --store");
    return d;
}

// The options evalSettings and dataSource read, shared by eval and eval compare.
std::set<std::string> withEvalOptions(std::set<std::string> own)
{
    own.insert({"data", "store", "snapshot", "limit", "metrics", "glossary", "rouge-stemmer",
                "resamples", "seed", "max-new-tokens", "greedy", "temperature", "top-k", "top-p",
                "repetition-penalty", "batch", "name", "out", "json"});
    return own;
}

eval::EvalProgress progressTo(std::ostream& err, const char* what)
{
    return [&err, what](int64_t done, int64_t total) {
        err << "\r" << what << ": " << done << "/" << total << " cases" << std::flush;
        if (done == total)
            err << "\n";
        return true;
    };
}

std::string scoreText(const std::string& metric, const eval::CorpusScore& s)
{
    char line[160];
    std::snprintf(line, sizeof line, "  %-12s %10.4f  [%.4f, %.4f]", metric.c_str(), s.score,
                  s.ci.lo, s.ci.hi);
    return line;
}

void printResult(const eval::EvalResult& r, const std::string& dir, std::ostream& out)
{
    out << r.predictions.size() << " cases, metric / score / 95% interval:\n";
    for (const std::string& name : r.metricOrder)
        out << scoreText(name, r.metrics.at(name)) << "\n";
    if (!dir.empty())
        out << "wrote " << joinPath(dir, "results.json") << " and predictions.jsonl\n";
}

int evalScore(const Args& args, std::ostream& out)
{
    args.allowOnly({"predictions", "metrics", "glossary", "rouge-stemmer", "resamples", "seed",
                    "out", "json"});
    if (!args.has("predictions") || !args.has("metrics"))
        fail("usage: tunebench eval score --predictions FILE.jsonl --metrics LIST [--json]");
    const eval::EvalSettings settings = evalSettings(args);
    eval::EvalResult r;
    r.predictions = eval::readPredictions(args.value("predictions"));
    r.model = args.value("predictions");
    r.settings = toJson(settings);
    eval::scorePredictions(r, settings);
    const std::string dir = args.value("out", "");
    if (!dir.empty())
        eval::writeEvalResult(r, dir);
    if (args.flag("json"))
        out << toJson(r).dump() << "\n";
    else
        printResult(r, dir, out);
    return 0;
}

// --base-quant LIST (none | fp32 | nf4 | fp4 | int8, in order) and --base-quant-double: how each
// base entry holds its linear weights; the first is the reference of the deltas.
std::vector<QuantOptions> baseQuants(const Args& args)
{
    const bool twice = args.flag("base-quant-double");
    std::vector<QuantOptions> bases;
    for (const std::string& name : splitList(args.value("base-quant", "none"))) {
        const auto kind = parseQuantKind(name == "fp32" ? "none" : name);
        if (!kind)
            fail("option --base-quant '", name, "' (allowed: none, fp32, nf4, fp4, int8)");
        QuantOptions q;
        q.kind = *kind;
        q.doubleQuant = twice && (q.kind == QuantKind::Nf4 || q.kind == QuantKind::Fp4);
        bases.push_back(q);
    }
    if (bases.empty())
        fail("option --base-quant needs at least one of none, fp32, nf4, fp4, int8");
    bool fourBit = false;
    for (const QuantOptions& q : bases)
        fourBit = fourBit || q.doubleQuant;
    if (twice && !fourBit)
        fail("option --base-quant-double needs a 4-bit base in --base-quant (nf4 or fp4)");
    return bases;
}

int evalCompare(const Args& args, std::ostream& out, std::ostream& err)
{
    args.allowOnly(withEvalOptions({"base", "runs", "base-quant", "base-quant-double"}));
    const std::vector<std::string> runs = splitList(args.value("runs", ""));
    if (runs.empty())
        fail("usage: tunebench eval compare --runs R1[,R2...] [--base DIR] [--base-quant "
             "none,nf4 [--base-quant-double]] [--data FILE | --store S --snapshot ID] --metrics "
             "LIST [--out DIR] [--json]");
    const eval::EvalSettings settings = evalSettings(args);
    const std::vector<QuantOptions> bases = baseQuants(args);
    const std::string base = args.value("base", runBaseModel(runs.front()));
    const EvalCases cases = loadEvalCases(dataSource(args, runs.front()));
    for (const auto& w : cases.warnings)
        err << "warning: " << w << "\n";
    std::vector<eval::EvalResult> results;
    const eval::Scorecard sc =
        compareRuns(base, runs, cases, settings, progressTo(err, "compare"), &results, bases);
    const std::string dir =
        args.value("out", runEvalDir(runs.front(), "compare-" + args.value("name", "latest")));
    eval::writeScorecard(sc, dir);
    for (size_t i = 0; i < results.size(); ++i) {
        results[i].name = sc.systems[i].label;
        eval::writeEvalResult(results[i], joinPath(dir, "system-" + std::to_string(i)));
    }
    if (args.flag("json")) {
        json j = toJson(sc);
        j["dir"] = dir;
        out << j.dump() << "\n";
    } else {
        out << eval::scorecardMarkdown(sc) << "\nwrote " << joinPath(dir, "scorecard.json")
            << " and scorecard.md\n";
    }
    return 0;
}

int evalSuite(const Args& args, std::ostream& out)
{
    args.allowOnly(
        {"run", "suite", "max-new-tokens", "batch", "no-base", "out", "name", "device", "json"});
    if (!args.has("run") || !args.has("suite"))
        fail("usage: tunebench eval suite --run RUN --suite FILE.jsonl [--no-base] [--json]");
    const std::string run = args.value("run");
    const std::vector<eval::SuiteCase> suite = eval::readSuite(args.value("suite"));
    const int budget = static_cast<int>(args.integer("max-new-tokens", 128));
    const int batch = static_cast<int>(args.integer("batch", 8));
    if (budget < 1 || batch < 1)
        fail("options --max-new-tokens and --batch must be at least 1");
    const eval::SuiteReport report = runSuiteOnRun(run, suite, budget, batch, args.flag("no-base"),
                                                   args.value("device", "auto"));
    const std::string dir =
        args.value("out", runEvalDir(run, "suite-" + args.value("name", "latest")));
    makeDirectories(dir);
    writeFileAtomic(joinPath(dir, "suite.json"), toJson(report).dump(2) + "\n");
    writeFileAtomic(joinPath(dir, "suite.md"), eval::suiteMarkdown(report));
    if (args.flag("json")) {
        json j = toJson(report);
        j["dir"] = dir;
        out << j.dump() << "\n";
    } else {
        out << eval::suiteMarkdown(report);
    }
    // 2: the gate failed (a regression, or a required case failing); errors exit 1.
    return report.gateFailed() ? 2 : 0;
}

int evalGenerate(const Args& args, std::ostream& out, std::ostream& err)
{
    args.allowOnly(withEvalOptions({"run", "model", "template", "device"}));
    if (args.has("run") == args.has("model"))
        fail("usage: tunebench eval --run RUN | --model DIR (--data FILE | --store S --snapshot "
             "ID) --metrics LIST [--max-new-tokens N] [--batch B] [--limit N] [--name NAME] "
             "[--json]");
    const eval::EvalSettings settings = evalSettings(args);
    const std::string run = args.value("run", "");
    const EvalDataSource source = dataSource(args, run);
    if (run.empty() && source.file.empty() && source.store.empty())
        fail("eval --model: give the held-out data (--data FILE or --store S --snapshot ID)");
    const std::string device = args.value("device", "auto");
    EvalModel model;
    if (!run.empty()) {
        model = loadRunForEval(run, device);
    } else {
        std::shared_ptr<const ChatTemplate> chat;
        if (args.has("template")) {
            auto t = chatTemplateByName(args.value("template"), args.value("model"));
            if (!t)
                fail("option --template '", args.value("template"),
                     "' (allowed: model, chatml, llama3, inst, alpaca, plain)");
            chat = std::make_shared<const ChatTemplate>(std::move(*t));
        }
        model = loadModelForEval(args.value("model"), chat, device);
    }
    const EvalCases cases = loadEvalCases(source);
    for (const auto& w : cases.warnings)
        err << "warning: " << w << "\n";
    eval::EvalResult r = evaluateLoaded(model, cases, settings, progressTo(err, "eval"));
    const std::string name = args.value("name", "");
    const std::string dir = args.has("out") ? args.value("out")
                            : run.empty()   ? joinPath("eval", name.empty() ? "latest" : name)
                                            : runEvalDir(run, name);
    r.name = dir.substr(dir.find_last_of('/') + 1);
    eval::writeEvalResult(r, dir);
    if (args.flag("json")) {
        json j = toJson(r);
        j["dir"] = dir;
        out << j.dump() << "\n";
    } else {
        printResult(r, dir, out);
    }
    return 0;
}

}  // namespace

int cmdEval(const Args& args, std::ostream& out, std::ostream& err)
{
    const auto& words = args.positional();
    const std::string sub = words.size() > 1 ? words[1] : "";
    if (sub == "score")
        return evalScore(args, out);
    if (sub == "compare")
        return evalCompare(args, out, err);
    if (sub == "suite")
        return evalSuite(args, out);
    if (sub == "blind")
        return cmdEvalBlind(args, out);
    if (sub == "pairs")
        return cmdEvalPairs(args, out);
    if (!sub.empty())
        fail("eval: unknown subcommand '", sub, "' (known: score, compare, suite, blind, pairs)");
    return evalGenerate(args, out, err);
}

}  // namespace tb
