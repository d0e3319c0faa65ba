// `tunebench data pairs <action>`: preference pairs in a dataset store (import, list, choose,
// swap, edit, rank, agreement, adjudicate, from-compare, dedup, scan, export).
#include "cli/args.h"
#include "cli/data_util.h"

#include "data/curate/pair_curate.h"
#include "data/pairs.h"
#include "data/store/pairs_store.h"
#include "data/store/store.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace tb {

using nlohmann::json;

namespace {

const char* const kPairsUsage =
    R"(usage: tunebench data pairs <action> STORE ... (or --store STORE) [--json] [--who W]

  import STORE FILE [--layout auto|standard|hh-rlhf|ultrafeedback]   JSONL or .json array
  list STORE                               live pairs as shown (A/B), with verdicts
  choose STORE ID a|b|tie|skip --annotator N   a/b name the answers as shown
  swap STORE ID                            show the other answer as A
  edit STORE ID --side chosen|rejected --text T
  rank STORE new PROMPT ANSWER ANSWER...   a prompt and K answers to rank
  rank STORE generate PROMPT [--k 4] [--model DIR] [--chat-template T] [--temperature 0.8]
       [--max-new-tokens 64] [--seed S]     K answers sampled from the model, to rank
  rank STORE ID ORDER --annotator N        ORDER: answer indices best first, e.g. 2,0,1
  agreement STORE                          per annotator pair: percent, Cohen's kappa; disputes
  adjudicate STORE ID a|b|tie|skip         the final choice (--who names the adjudicator)
  from-compare STORE [SET]                 blind-comparison verdicts into pairs
  dedup STORE [--near 0.8] [--apply]       duplicate pairs (pair text)
  scan STORE                               leak and PII scan of the pairs
  export STORE SNAPSHOT OUT.jsonl          a snapshot's pairs in TRL's standard layout
Choices that say the stored rejected answer is better flip the pair for training; ties, skips
and disputed pairs (until adjudicated) are left out of snapshots. Undo with `data undo`.
)";

void needCount(const PairsCall& c, const std::string& action, size_t min, size_t max,
               const char* what)
{
    if (c.rest.size() < min)
        fail("data pairs ", action, ": missing ", what);
    if (c.rest.size() > max)
        fail("data pairs ", action, ": unexpected argument '", c.rest[max], "'");
}

int64_t idOf(const std::string& text)
{
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v <= 0)
        fail("'", text, "' is not a pair or ranking id");
    return v;
}

std::string excerpt(std::string text, size_t max = 60)
{
    for (char& c : text)
        if (c == '\n' || c == '\t')
            c = ' ';
    return text.size() > max ? text.substr(0, max - 3) + "..." : text;
}

std::string answerText(const PairExample& p, bool chosen)
{
    if (p.plainText)
        return chosen ? p.chosenText : p.rejectedText;
    std::string out;
    for (const ChatMessage& m : chosen ? p.chosen : p.rejected)
        out += (out.empty() ? "" : "\n") + m.content;
    return out;
}

std::string promptText(const PairExample& p)
{
    if (p.plainText)
        return p.promptText;
    return p.prompt.empty() ? std::string() : p.prompt.back().content;
}

int pairsImport(const Args& args, const PairsCall& c, std::ostream& out)
{
    args.allowOnly({"store", "layout", "who", "json"});
    needCount(c, "import", 1, 1, "the FILE to read");
    const std::string layoutName = args.value("layout", "auto");
    const auto layout = parsePairLayout(layoutName);
    if (!layout)
        fail("option --layout '", layoutName,
             "' (allowed: auto, standard, hh-rlhf, ultrafeedback)");
    auto store = DataStore::open(c.store, true);
    const PairImportReport r = importPairs(*store, c.rest[0], *layout, dataUser(args));
    json rejected = json::array();
    std::string text;
    for (const PairRejection& bad : r.rejected) {
        rejected.push_back({{"location", bad.location}, {"reason", bad.reason}});
        text += bad.location + ": " + bad.reason + "\n";
    }
    text += cat("imported ", r.imported, " pairs, rejected ", r.rejected.size(),
                " rows (operation ", r.operationId, ")\n");
    printResult(
        out, args,
        json{{"imported", r.imported}, {"rejected", rejected}, {"operation_id", r.operationId}},
        text);
    return 0;
}

int pairsList(const Args& args, const PairsCall& c, std::ostream& out)
{
    args.allowOnly({"store", "json"});
    needCount(c, "list", 0, 0, "");
    auto store = openExistingStore(c.store);
    json list = json::array();
    std::string text;
    for (const StoredPair& p : storedPairs(*store)) {
        const std::string a = answerText(p.pair, !p.swapped), b = answerText(p.pair, p.swapped);
        json choices = json::object();
        for (const PairChoice& ch : p.choices)
            choices[ch.annotator] = ch.choice;
        list.push_back({{"id", p.id},
                        {"origin", p.origin},
                        {"pair", pairToJson(p.pair)},
                        {"swapped", p.swapped},
                        {"choices", choices},
                        {"verdict", p.verdict},
                        {"flags", p.flags}});
        text += cat(p.id, "  [", p.verdict, "]  ", excerpt(promptText(p.pair)),
                    "\n    A: ", excerpt(a), "\n    B: ", excerpt(b), "\n");
    }
    printResult(out, args, json{{"pairs", list}}, text);
    return 0;
}

int pairsChoose(const Args& args, const PairsCall& c, std::ostream& out, bool adjudicate)
{
    const std::string action = adjudicate ? "adjudicate" : "choose";
    args.allowOnly({"store", adjudicate ? "who" : "annotator", "json"});
    needCount(c, action, 2, 2, "ID and a|b|tie|skip");
    auto store = openExistingStore(c.store);
    const int64_t id = idOf(c.rest[0]);
    const int64_t op = adjudicate
                           ? adjudicatePair(*store, id, c.rest[1], dataUser(args))
                           : recordPairChoice(*store, id, args.value("annotator"), c.rest[1]);
    const StoredPair p = storedPair(*store, id);
    printResult(out, args, json{{"pair_id", id}, {"verdict", p.verdict}, {"operation_id", op}},
                cat("pair ", id, ": ", p.verdict, " (operation ", op, ")\n"));
    return 0;
}

int pairsSwapEdit(const Args& args, const PairsCall& c, std::ostream& out, bool edit)
{
    args.allowOnly(edit ? std::set<std::string>{"store", "side", "text", "who", "json"}
                        : std::set<std::string>{"store", "who", "json"});
    needCount(c, edit ? "edit" : "swap", 1, 1, "the pair ID");
    auto store = openExistingStore(c.store);
    const int64_t id = idOf(c.rest[0]);
    const int64_t op =
        edit ? editPairAnswer(*store, id, args.value("side"), args.value("text"), dataUser(args))
             : swapPair(*store, id, dataUser(args));
    printResult(out, args, json{{"pair_id", id}, {"operation_id", op}},
                cat(edit ? "edited" : "swapped", " pair ", id, " (operation ", op, ")\n"));
    return 0;
}

int pairsRank(const Args& args, const PairsCall& c, std::ostream& out)
{
    args.allowOnly({"store", "annotator", "who", "json"});
    auto store = openExistingStore(c.store);
    if (!c.rest.empty() && c.rest[0] == "new") {
        if (c.rest.size() < 4)
            fail("data pairs rank new: needs a PROMPT and at least 2 answers");
        const std::vector<std::string> answers(c.rest.begin() + 2, c.rest.end());
        const int64_t id = addRanking(*store, {{"user", c.rest[1]}}, answers, dataUser(args));
        printResult(out, args, json{{"ranking_id", id}},
                    cat("ranking ", id, " with ", answers.size(), " answers\n"));
        return 0;
    }
    needCount(c, "rank", 2, 2, "a ranking ID and an ORDER (or: new PROMPT ANSWER ...)");
    std::vector<int> order;
    for (size_t begin = 0; begin <= c.rest[1].size();) {
        size_t end = c.rest[1].find(',', begin);
        if (end == std::string::npos)
            end = c.rest[1].size();
        const std::string item = c.rest[1].substr(begin, end - begin);
        char* stop = nullptr;
        const long v = std::strtol(item.c_str(), &stop, 10);
        if (item.empty() || *stop != '\0' || v < 0)
            fail("data pairs rank: '", c.rest[1], "' is not a list of answer indices (2,0,1)");
        order.push_back(int(v));
        begin = end + 1;
    }
    const auto ids = recordRanking(*store, idOf(c.rest[0]), args.value("annotator"), order);
    printResult(out, args, json{{"pair_ids", ids}}, cat(ids.size(), " pairs from the ranking\n"));
    return 0;
}

int pairsAgreement(const Args& args, const PairsCall& c, std::ostream& out)
{
    args.allowOnly({"store", "json"});
    needCount(c, "agreement", 0, 0, "");
    auto store = openExistingStore(c.store);
    json list = json::array();
    std::string text;
    for (const PairAgreement& a : pairChoiceAgreement(*store)) {
        list.push_back({{"a", a.annotatorA},
                        {"b", a.annotatorB},
                        {"items", a.items},
                        {"agreed", a.agreed},
                        {"percent", a.percent},
                        {"kappa", a.kappa}});
        char line[256];
        std::snprintf(line, sizeof line, "%s / %s: %lld pairs, %.1f%% agree, kappa %.3f\n",
                      a.annotatorA.c_str(), a.annotatorB.c_str(), (long long)a.items, a.percent,
                      a.kappa);
        text += line;
    }
    const std::vector<int64_t> disputed = disputedPairs(*store);
    text += cat(disputed.size(), " disputed pairs awaiting adjudication\n");
    printResult(out, args, json{{"pairs", list}, {"disputed", disputed}}, text);
    return 0;
}

int pairsFromCompare(const Args& args, const PairsCall& c, std::ostream& out)
{
    args.allowOnly({"store", "who", "json"});
    needCount(c, "from-compare", 0, 1, "");
    auto store = openExistingStore(c.store);
    const auto r = pairsFromComparisons(*store, c.rest.empty() ? "" : c.rest[0], dataUser(args));
    std::string text;
    json rejected = json::array();
    for (const PairRejection& bad : r.rejected) {
        rejected.push_back({{"location", bad.location}, {"reason", bad.reason}});
        text += bad.location + ": " + bad.reason + "\n";
    }
    text += cat("added ", r.added, " pairs, skipped ", r.skipped, " already taken\n");
    printResult(out, args,
                json{{"added", r.added},
                     {"skipped", r.skipped},
                     {"rejected", rejected},
                     {"operation_id", r.operationId}},
                text);
    return 0;
}

int pairsDedupScan(const Args& args, const PairsCall& c, std::ostream& out, bool dedup)
{
    args.allowOnly(dedup ? std::set<std::string>{"store", "near", "apply", "who", "json"}
                         : std::set<std::string>{"store", "who", "json"});
    needCount(c, dedup ? "dedup" : "scan", 0, 0, "");
    auto store = openExistingStore(c.store);
    if (dedup) {
        const std::optional<double> near =
            args.has("near") ? std::optional<double>(args.number("near", 0.8)) : std::nullopt;
        const DedupReport r = dedupPairs(*store, near, args.flag("apply"), dataUser(args));
        printResult(out, args,
                    json{{"pairs", r.records},
                         {"exact_duplicates", r.exactDuplicates},
                         {"near_duplicates", r.nearDuplicates},
                         {"clusters", r.clusterIds},
                         {"removed", r.removed},
                         {"operation_id", r.operationId}},
                    cat(r.records, " pairs: ", r.exactDuplicates, " exact and ", r.nearDuplicates,
                        " near duplicates",
                        args.flag("apply") ? cat(", ", r.removed, " removed") : "", "\n"));
        return 0;
    }
    const PairScanReport r = scanPairs(*store, dataUser(args));
    printResult(out, args, json{{"pairs", r.pairs}, {"flagged", r.flagged}, {"by_kind", r.byKind}},
                cat(r.pairs, " pairs scanned, ", r.flagged, " flagged\n"));
    return 0;
}

int pairsExport(const Args& args, const PairsCall& c, std::ostream& out)
{
    args.allowOnly({"store", "json"});
    needCount(c, "export", 2, 2, "SNAPSHOT and OUT.jsonl");
    auto store = openExistingStore(c.store);
    const int64_t n = exportPairsJsonl(*store, c.rest[0], c.rest[1]);
    printResult(out, args, json{{"pairs", n}, {"file", c.rest[1]}},
                cat("wrote ", n, " pairs to ", c.rest[1], "\n"));
    return 0;
}

}  // namespace

int cmdDataPairs(const Args& args, std::ostream& out)
{
    const auto& p = args.positional();
    if (p.size() < 3 || p[2] == "help") {
        out << kPairsUsage;
        return p.size() < 3 ? 1 : 0;
    }
    const std::string& action = p[2];
    if (action == "import")
        return pairsImport(args, pairsCallOf(args), out);
    if (action == "list")
        return pairsList(args, pairsCallOf(args), out);
    if (action == "choose" || action == "adjudicate")
        return pairsChoose(args, pairsCallOf(args), out, action == "adjudicate");
    if (action == "swap" || action == "edit")
        return pairsSwapEdit(args, pairsCallOf(args), out, action == "edit");
    if (action == "rank")
        return pairsRank(args, pairsCallOf(args), out);
    if (action == "agreement")
        return pairsAgreement(args, pairsCallOf(args), out);
    if (action == "from-compare")
        return pairsFromCompare(args, pairsCallOf(args), out);
    if (action == "dedup" || action == "scan")
        return pairsDedupScan(args, pairsCallOf(args), out, action == "dedup");
    if (action == "export")
        return pairsExport(args, pairsCallOf(args), out);
    fail("data pairs: unknown action '", action, "' (see tunebench data pairs help)");
}

}  // namespace tb
