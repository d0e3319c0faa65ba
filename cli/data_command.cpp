// `tunebench data <subcommand>`: import, chunk, list, edit, dedup, filter, scan, stats, split,
// rehearsal, review, agreement, adjudicate, history, undo, synth, entity-pairs, render, snapshot,
// export.
#include "cli/commands.h"
#include "cli/data_util.h"

#include "data/curate/curate.h"
#include "data/curate/entity_match.h"
#include "data/curate/review.h"
#include "data/example.h"
#include "data/ingest/ingest.h"
#include "data/record.h"
#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"
#include "util/paths.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <climits>
#include <cstdio>

namespace tb {

using nlohmann::json;

const char* const kDataUsage = R"(usage: tunebench data <subcommand> --store FILE [options] [--json]

  import FILE [--format auto|alpaca|chat|sharegpt|prompt-completion|text|csv|documents]
              [--columns field=header,...] [--delimiter C] [--split train|validation|general]
              [--model DIR --max-tokens N --overlap N (documents)]
  chunk --model DIR [--max-tokens 256] [--overlap 32, at most max-tokens/8] [--apply]
                                                             split long text records by tokens
  list [--status S] [--split S] [--flagged] [--contains T] [--offset N] [--limit N]
  edit --id N --field F --value V                  replace a field (JSON value or plain text)
  dedup [--near 0.8] [--apply]                     exact (normalised) and MinHash near duplicates
  filter [--min-tokens N] [--max-tokens N] [--drop-empty] [--regex R [--keep-matches]] [--apply]
  scan                                             leak and PII scan (flags, masked matches)
  stats --model DIR [--max-length N] [--chat-template T] [--bins N]   token-length statistics
  split [--validation 0.1] [--seed N] [--label-field label]           seeded, stratified
  rehearsal --ratio R [--seed N]                   mix general-split text into train
  review --id N --annotator A [--decision accept|reject] [--rating 1-5] [--note T]
  agreement [--export FILE --format csv|jsonl]     per annotator pair: percent, Cohen's kappa
  adjudicate --id N --decision accept|reject --who W
  history [--id N] | undo --operation N            the operation log; reverse an operation
  synth --model DIR [--template T] [--per-seed N] [--status accepted|pending|any] [--limit N]
        [--max-new-tokens N] [--temperature X] [--seed S] [--chat-template T]
  entity-pairs FILE --entity-key K [--negatives N] [--seed S] [--split S]
  render --id N --model DIR [--chat-template T] [--all-tokens]   training text with loss marks
  render --packed --model DIR [--snapshot ID | --split S] [--max-length 256] [--seed 0]
         [--chat-template T]                       the bins of packed training, their efficiency
  snapshot [--split train] [--include-pending] [--exclude-flagged] [--no-synthetic]
           [--min-tokens N] [--max-tokens N] [--chat-template T] [--out DIR]
  export --snapshot ID --out DIR                   JSONL + manifest of a snapshot
  snapshots                                        list snapshots
Every change is one transaction and one operation in the history (--who names you; default $USER).
)";

const std::set<std::string>& dataCommandFlags()
{
    static const std::set<std::string> flags{"apply",        "drop-empty",      "keep-matches",
                                             "flagged",      "include-pending", "exclude-flagged",
                                             "no-synthetic", "all-tokens",      "packed"};
    return flags;
}

namespace {

// --max-tokens and --overlap, checked by their names. Without --overlap: 32 tokens, at most an
// eighth of the chunk (the default of 32 was refused for any --max-tokens up to 64).
ChunkOptions chunkOptions(const Args& args)
{
    ChunkOptions o;
    const long long maxTokens = args.integer("max-tokens", o.maxTokens);
    if (maxTokens < 8 || maxTokens > (1 << 20))
        fail("option --max-tokens is ", maxTokens, " (8 to ", 1 << 20, ")");
    o.maxTokens = int(maxTokens);
    const long long most = (maxTokens - 1) / 2;
    if (!args.has("overlap")) {
        o.overlapTokens = int(std::min<long long>(32, maxTokens / 8));
        return o;
    }
    const long long overlap = args.integer("overlap", 0);
    if (overlap < 0 || overlap > most)
        fail("option --overlap is ", overlap, " (0 to ", most, ": less than half of --max-tokens ",
             maxTokens, ")");
    o.overlapTokens = int(overlap);
    return o;
}

std::unique_ptr<DataStore> openStore(const Args& args, bool create = false)
{
    const std::string path = args.value("store");
    if (create)
        return DataStore::open(path, true);
    return openExistingStore(
        path, cat(" (import a file first: tunebench data import --store ", path, " FILE)"));
}

std::string positionalFile(const Args& args, const char* what)
{
    if (args.positional().size() < 3)
        fail("data ", args.positional()[1], ": missing the ", what, " to read");
    if (args.positional().size() > 3)
        fail("data ", args.positional()[1], ": unexpected argument '", args.positional()[3], "'");
    return args.positional()[2];
}

std::optional<int64_t> optionalInt(const Args& args, const std::string& name)
{
    if (!args.has(name))
        return std::nullopt;
    return args.integer(name, 0);
}

json statsJson(const LengthStats& s)
{
    return json{
        {"min", s.min}, {"median", s.median}, {"p95", s.p95}, {"max", s.max}, {"mean", s.mean}};
}

json recordJson(const StoredRecord& r)
{
    json j = {{"id", r.id},
              {"kind", r.kind},
              {"fields", r.fields},
              {"status", reviewStatusName(r.status)},
              {"split", r.split},
              {"synthetic", r.synthetic},
              {"tokens", r.tokenCount},
              {"source", r.sourcePath},
              {"line", r.sourceLine},
              {"flags", r.flags}};
    if (r.chunkIndex >= 0) {
        j["chunk_index"] = r.chunkIndex;
        j["chunk_overlap"] = r.chunkOverlap;
    }
    if (r.rating)
        j["rating"] = *r.rating;
    if (r.removed)
        j["removed"] = true;
    return j;
}

int cmdImport(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "format", "columns", "delimiter", "split", "model", "max-tokens",
                    "overlap", "who", "json"});
    const std::string file = positionalFile(args, "file");
    ImportOptions options;
    const std::string formatName = args.value("format", "auto");
    const auto format = parseImportFormat(formatName);
    if (!format)
        fail("option --format '", formatName,
             "' (allowed: auto, alpaca, chat, sharegpt, prompt-completion, text, csv, documents)");
    options.format = *format;
    if (args.has("columns")) {
        const std::string spec = args.value("columns");
        for (size_t begin = 0; begin <= spec.size();) {
            size_t end = spec.find(',', begin);
            if (end == std::string::npos)
                end = spec.size();
            const std::string item = spec.substr(begin, end - begin);
            const size_t eq = item.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
                fail("option --columns: '", item, "' is not field=header");
            options.columns[item.substr(0, eq)] = item.substr(eq + 1);
            begin = end + 1;
        }
    }
    if (args.has("delimiter")) {
        const std::string d = args.value("delimiter");
        options.delimiter = d == "\\t" || d == "tab" ? '\t' : d.size() == 1 ? d[0] : 0;
        if (!options.delimiter)
            fail("option --delimiter: '", d, "' is not one character (or tab)");
    }
    std::unique_ptr<Tokenizer> tokenizer;
    const bool documents =
        options.format == ImportFormat::Documents ||
        (options.format == ImportFormat::Auto &&
         (file.ends_with(".txt") || file.ends_with(".md") || file.ends_with(".markdown")));
    if (documents || args.has("model")) {
        tokenizer = loadTokenizer(args.value("model", bundledModelDir()));
        options.tokenizer = tokenizer.get();
    }
    options.chunk = chunkOptions(args);
    auto store = openStore(args, true);
    const StoreImportReport r =
        importIntoStore(*store, file, options, args.value("split", "train"), dataUser(args));
    json rejected = json::array();
    std::string text;
    for (const auto& rej : r.summary.rejected) {
        rejected.push_back({{"line", rej.line}, {"reason", rej.reason}});
        text += file + ":" + std::to_string(rej.line) + ": rejected: " + rej.reason + "\n";
    }
    text += "imported " + std::to_string(r.summary.imported) + " records (" +
            importFormatName(r.summary.format) + "), rejected " +
            std::to_string(r.summary.rejected.size()) + "\n";
    printResult(out, args,
                json{{"format", importFormatName(r.summary.format)},
                     {"imported", r.summary.imported},
                     {"rejected", rejected},
                     {"source_id", r.sourceId},
                     {"operation_id", r.operationId}},
                text);
    return 0;
}

int cmdChunk(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "model", "max-tokens", "overlap", "apply", "who", "json"});
    auto store = openStore(args);
    const auto tokenizer = loadTokenizer(args.value("model", bundledModelDir()));
    const ChunkOptions options = chunkOptions(args);
    const ChunkReport r =
        chunkStoreRecords(*store, *tokenizer, options, args.flag("apply"), dataUser(args));
    printResult(out, args,
                json{{"records", r.records},
                     {"chunks", r.chunks},
                     {"applied", args.flag("apply")},
                     {"operation_id", r.operationId}},
                std::to_string(r.records) + " text records over " +
                    std::to_string(options.maxTokens) + " tokens -> " + std::to_string(r.chunks) +
                    " chunks" + (args.flag("apply") ? "" : " (dry run; --apply to write)") + "\n");
    return 0;
}

RecordQuery queryFromArgs(const Args& args)
{
    RecordQuery q;
    if (args.has("status")) {
        const auto s = parseReviewStatus(args.value("status"));
        if (!s)
            fail("option --status '", args.value("status"),
                 "' (allowed: pending, accepted, rejected, needs-adjudication)");
        q.status = s;
    }
    if (args.has("split")) {
        const std::string split = args.value("split");
        if (split != "train" && split != "validation" && split != "general")
            fail("option --split '", split, "' (allowed: train, validation, general)");
        q.split = split;
    }
    q.flaggedOnly = args.flag("flagged");
    q.contains = args.value("contains", "");
    q.offset = args.integer("offset", 0);
    if (q.offset < 0)
        fail("option --offset is ", q.offset, " (must be at least 0)");
    if (args.has("limit")) {
        q.limit = args.integer("limit", -1);
        if (q.limit < 1)
            fail("option --limit is ", q.limit, " (must be at least 1; leave it out for all)");
    }
    return q;
}

int cmdList(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "status", "split", "flagged", "contains", "offset", "limit", "json"});
    auto store = openStore(args);
    const RecordQuery q = queryFromArgs(args);
    json records = json::array();
    std::string text;
    store->forEach(q, [&](const StoredRecord& r) {
        records.push_back(recordJson(r));
        std::string preview = recordText(r.kind, r.fields).substr(0, 70);
        for (char& c : preview)
            if (c == '\n')
                c = ' ';
        char line[160];
        std::snprintf(line, sizeof line, "%6" PRId64 "  %-18s %-10s %5" PRId64 "  ", r.id,
                      reviewStatusName(r.status), r.split.c_str(), r.tokenCount);
        text += line + preview + "\n";
        return true;
    });
    RecordQuery total = q;
    total.offset = 0;
    total.limit = -1;
    printResult(out, args, json{{"total", store->count(total)}, {"records", records}}, text);
    return 0;
}

int cmdEdit(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "id", "field", "value", "who", "json"});
    auto store = openStore(args);
    const int64_t id = args.integer("id", 0);
    const std::string raw = args.value("value");
    // An array or object (chat messages) when the value parses as one; anything else is text as
    // given.
    checkJsonDepth(raw, "--value");
    json value = json::parse(raw, nullptr, false);
    if (value.is_discarded() || !(value.is_array() || value.is_object()))
        value = raw;
    store->editField(id, args.value("field"), value, dataUser(args));
    const StoredRecord r = store->record(id);
    if (const auto problem = validateRecord(r.kind, r.fields))
        out << "warning: record " << id << " is now invalid for training: " << *problem << "\n";
    printResult(out, args, recordJson(r), "record " + std::to_string(id) + " updated\n");
    return 0;
}

int cmdDedup(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "near", "apply", "who", "json"});
    auto store = openStore(args);
    std::optional<double> near;
    if (args.has("near"))
        near = args.number("near", 0.8);
    const DedupReport r = dedupRecords(*store, near, args.flag("apply"), dataUser(args));
    json clusters = json::array();
    for (size_t i = 0; i < r.clusterIds.size() && i < 50; ++i)
        clusters.push_back(r.clusterIds[i]);
    printResult(out, args,
                json{{"records", r.records},
                     {"exact_duplicates", r.exactDuplicates},
                     {"near_duplicates", r.nearDuplicates},
                     {"clusters", r.clusters},
                     {"removed", r.removed},
                     {"operation_id", r.operationId},
                     {"cluster_ids", clusters}},
                std::to_string(r.records) + " records: " + std::to_string(r.exactDuplicates) +
                    " exact duplicates, " + std::to_string(r.nearDuplicates) +
                    " near duplicates in " + std::to_string(r.clusters) + " clusters; " +
                    (args.flag("apply")
                         ? "removed " + std::to_string(r.removed) + " (undo: operation " +
                               std::to_string(r.operationId) + ")"
                         : std::string("dry run (--apply to remove)")) +
                    "\n");
    return 0;
}

int cmdFilter(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "min-tokens", "max-tokens", "drop-empty", "regex", "keep-matches",
                    "apply", "who", "json"});
    auto store = openStore(args);
    FilterOptions o;
    o.minTokens = optionalInt(args, "min-tokens");
    o.maxTokens = optionalInt(args, "max-tokens");
    o.dropEmpty = args.flag("drop-empty");
    o.regex = args.value("regex", "");
    o.regexKeeps = args.flag("keep-matches");
    if (!o.minTokens && !o.maxTokens && !o.dropEmpty && o.regex.empty())
        fail("data filter: give at least one of --min-tokens, --max-tokens, --drop-empty, --regex");
    const FilterReport r = filterRecords(*store, o, args.flag("apply"), dataUser(args));
    printResult(out, args,
                json{{"records", r.records},
                     {"matched", r.matched},
                     {"by_reason", r.byReason},
                     {"removed", args.flag("apply") ? r.matched : 0},
                     {"operation_id", r.operationId}},
                std::to_string(r.matched) + " of " + std::to_string(r.records) + " records " +
                    (args.flag("apply") ? "removed" : "would be removed (--apply to remove)") +
                    "\n");
    return 0;
}

int cmdScan(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "who", "json"});
    auto store = openStore(args);
    const ScanReport r = scanRecords(*store, dataUser(args));
    json matches = json::array();
    std::string text;
    for (const ScanFlag& f : r.flags) {
        if (matches.size() < 1000)
            matches.push_back({{"record_id", f.recordId},
                               {"kind", f.kind},
                               {"field", f.field},
                               {"masked", f.masked}});
        text += "record " + std::to_string(f.recordId) + " " + f.field + ": " + f.kind + " " +
                f.masked + "\n";
    }
    if (r.matches > int64_t(r.flags.size()))
        text += "... and " + std::to_string(r.matches - int64_t(r.flags.size())) +
                " more (all in the store: tunebench data list --flagged)\n";
    text += std::to_string(r.flagged) + " of " + std::to_string(r.records) + " records flagged\n";
    printResult(out, args,
                json{{"records", r.records},
                     {"flagged", r.flagged},
                     {"match_count", r.matches},
                     {"by_kind", r.byKind},
                     {"matches", matches}},
                text);
    return 0;
}

int cmdStats(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "model", "max-length", "chat-template", "bins", "json"});
    auto store = openStore(args);
    const TokenStatsReport r =
        tokenStats(*store, args.value("model", bundledModelDir()), args.integer("max-length", 256),
                   args.value("chat-template", "auto"), int(args.integer("bins", 20)));
    json perField = json::object();
    for (const auto& [field, s] : r.perField)
        perField[field] = statsJson(s);
    json histograms = json::object();
    for (const auto& [name, h] : r.histograms)
        histograms[name] = {{"edges", h.edges}, {"counts", h.counts}};
    std::string text =
        std::to_string(r.records) + " records, tokens (" + r.chatTemplate + " template): min " +
        std::to_string(r.tokens.min) + ", median " + std::to_string(r.tokens.median) + ", p95 " +
        std::to_string(r.tokens.p95) + ", max " + std::to_string(r.tokens.max) + "; " +
        std::to_string(r.truncated) + " over max length " + std::to_string(r.maxLength) + "\n";
    for (const auto& [field, s] : r.perField)
        text += "  " + field + ": median " + std::to_string(s.median) + ", p95 " +
                std::to_string(s.p95) + ", max " + std::to_string(s.max) + "\n";
    printResult(out, args,
                json{{"records", r.records},
                     {"tokens", statsJson(r.tokens)},
                     {"truncated", r.truncated},
                     {"max_length", r.maxLength},
                     {"chat_template", r.chatTemplate},
                     {"per_field", perField},
                     {"histograms", histograms},
                     {"counted", r.counted}},
                text);
    return 0;
}

int cmdSplit(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "validation", "seed", "label-field", "who", "json"});
    auto store = openStore(args);
    const SplitReport r = splitRecords(*store, args.number("validation", 0.1), args.seed(0),
                                       args.value("label-field", ""), dataUser(args));
    json byLabel = json::object();
    for (const auto& [label, counts] : r.byLabel)
        byLabel[label] = {{"train", counts.first}, {"validation", counts.second}};
    printResult(out, args,
                json{{"train", r.train},
                     {"validation", r.validation},
                     {"by_label", byLabel},
                     {"operation_id", r.operationId}},
                "train " + std::to_string(r.train) + ", validation " +
                    std::to_string(r.validation) + "\n");
    return 0;
}

int cmdRehearsal(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "ratio", "seed", "who", "json"});
    auto store = openStore(args);
    const RehearsalReport r =
        mixRehearsal(*store, args.number("ratio", 0.1), args.seed(0), dataUser(args));
    printResult(out, args,
                json{{"task", r.task},
                     {"added", r.added},
                     {"ratio", r.ratio},
                     {"operation_id", r.operationId}},
                "added " + std::to_string(r.added) + " general records to " +
                    std::to_string(r.task) + " train records\n");
    return 0;
}

int cmdReview(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "id", "annotator", "decision", "rating", "note", "json"});
    auto store = openStore(args);
    const int64_t id = args.integer("id", 0);
    const std::string annotator = args.value("annotator");
    std::optional<int> rating;
    if (args.has("rating"))
        rating = int(args.integer("rating", 0));
    // A decision or rating and its note go in together (one transaction).
    if (args.has("decision") || rating)
        store->review(id, annotator, args.value("decision", ""), rating, args.value("note", ""));
    else if (args.has("note"))
        store->addNote(id, annotator, args.value("note"));
    if (!args.has("decision") && !rating && !args.has("note"))
        fail("data review: give --decision accept|reject, --rating 1-5 or --note TEXT");
    const StoredRecord r = store->record(id);
    printResult(out, args, recordJson(r),
                "record " + std::to_string(id) + ": " + reviewStatusName(r.status) + "\n");
    return 0;
}

int cmdAgreement(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "export", "format", "json"});
    auto store = openStore(args);
    if (args.has("export"))
        exportDisagreements(*store, args.value("export"), args.value("format", "csv"));
    const AgreementReport r = reviewAgreement(*store);
    json pairs = json::array();
    std::string text;
    for (const auto& p : r.pairs) {
        pairs.push_back({{"a", p.annotatorA},
                         {"b", p.annotatorB},
                         {"items", p.items},
                         {"agreed", p.agreed},
                         {"percent", p.percent},
                         {"kappa", p.kappa}});
        char line[200];
        std::snprintf(line, sizeof line, "%s / %s: %" PRId64 " items, %.1f%% agree, kappa %.3f\n",
                      p.annotatorA.c_str(), p.annotatorB.c_str(), p.items, p.percent, p.kappa);
        text += line;
    }
    json log = json::array();
    for (const auto& d : r.disagreements) {
        json decisions = json::object();
        for (const auto& [a, v] : d.decisions)
            decisions[a] = v;
        log.push_back({{"record_id", d.recordId}, {"decisions", decisions}, {"status", d.status}});
    }
    text += std::to_string(r.disagreements.size()) + " disagreements, " +
            std::to_string(r.adjudicationQueue) + " in the adjudication queue\n";
    printResult(
        out, args,
        json{{"pairs", pairs}, {"disagreements", log}, {"adjudication_queue", r.adjudicationQueue}},
        text);
    return 0;
}

int cmdAdjudicate(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "id", "decision", "who", "json"});
    auto store = openStore(args);
    const int64_t id = args.integer("id", 0);
    store->adjudicate(id, args.value("decision"), dataUser(args));
    const StoredRecord r = store->record(id);
    printResult(out, args, recordJson(r),
                "record " + std::to_string(id) + ": " + reviewStatusName(r.status) + "\n");
    return 0;
}

int cmdHistory(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "id", "json"});
    auto store = openStore(args);
    json j = json::object();
    std::string text;
    if (args.has("id")) {
        if (args.integer("id", 0) < 1)
            fail("option --id is ", args.integer("id", 0), " (record ids start at 1)");
        json entries = json::array();
        const std::vector<HistoryEntry> history = store->history(args.integer("id", 0));
        if (history.empty())
            (void)store->record(args.integer("id", 0));  // no history: is there such a record?
        for (const auto& h : history) {
            entries.push_back({{"operation_id", h.operationId},
                               {"who", h.who},
                               {"at", h.at},
                               {"field", h.field},
                               {"old", h.oldValue},
                               {"new", h.newValue}});
            text += h.at + " " + h.who + " " + h.field + ": " +
                    h.oldValue.dump(-1, ' ', false, json::error_handler_t::replace) + " -> " +
                    h.newValue.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        }
        j["history"] = entries;
    } else {
        json ops = json::array();
        for (const auto& o : store->operations()) {
            ops.push_back({{"id", o.id},
                           {"kind", o.kind},
                           {"who", o.who},
                           {"at", o.at},
                           {"params", o.params},
                           {"summary", o.summary},
                           {"changes", o.changes},
                           {"undone", o.undone}});
            text += std::to_string(o.id) + "  " + o.at + "  " + o.kind + " by " + o.who + "  " +
                    o.summary.dump(-1, ' ', false, json::error_handler_t::replace) +
                    (o.undone ? "  (undone)" : "") + "\n";
        }
        j["operations"] = ops;
    }
    printResult(out, args, j, text);
    return 0;
}

int cmdUndo(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "operation", "who", "json"});
    auto store = openStore(args);
    const int64_t op = args.integer("operation", 0);
    const int64_t undo = store->undo(op, dataUser(args));
    printResult(out, args, json{{"operation_id", op}, {"undo_operation_id", undo}},
                "undid operation " + std::to_string(op) + " (as operation " + std::to_string(undo) +
                    ")\n");
    return 0;
}

int cmdEntityPairs(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "entity-key", "negatives", "max-positives", "seed", "split",
                    "question", "who", "json"});
    const std::string file = positionalFile(args, "entity records file");
    const auto records = readEntityRecords(file, args.value("entity-key"));
    EntityPairOptions o;
    o.negativesPerPositive = int(args.integer("negatives", 1));
    o.maxPositivesPerEntity = int(args.integer("max-positives", 10));
    o.seed = args.seed(1);
    o.question = args.value("question", o.question);
    const auto pairs = entityPairs(records, o);
    std::vector<NewRecord> rows;
    int64_t positives = 0, hard = 0;
    for (const auto& p : pairs) {
        rows.push_back(entityPairRecord(records, p, o.question));
        rows.back().split = args.value("split", "train");
        positives += p.same ? 1 : 0;
        hard += p.hardNegative ? 1 : 0;
    }
    auto store = openStore(args, true);
    store->inTransaction([&] {  // the source and its records together or not at all
        const int64_t source = store->addSource(file, "entity-pairs", "");
        store->addRecords(rows, source, dataUser(args), "entity-pairs");
        store->setSource(source, "entity-pairs", int64_t(rows.size()), 0);
    });
    printResult(out, args,
                json{{"entities_records", records.size()},
                     {"pairs", pairs.size()},
                     {"positives", positives},
                     {"negatives", int64_t(pairs.size()) - positives},
                     {"hard_negatives", hard}},
                std::to_string(pairs.size()) + " pairs: " + std::to_string(positives) +
                    " matches, " + std::to_string(int64_t(pairs.size()) - positives) +
                    " non-matches (" + std::to_string(hard) + " hard negatives)\n");
    return 0;
}

int cmdRender(const Args& args, std::ostream& out)
{
    if (args.flag("packed"))
        return cmdRenderPacked(args, out);
    args.allowOnly(
        {"store", "id", "model", "chat-template", "train-on", "all-tokens", "max-length", "json"});
    auto store = openStore(args);
    const StoredRecord r = store->record(args.integer("id", 0));
    const std::string modelDir = args.value("model", bundledModelDir());
    const auto tokenizer = loadTokenizer(modelDir);
    TokenizeOptions o;
    const std::string name = args.value("chat-template", "model");
    const auto chat = chatTemplateByName(name, modelDir);
    if (!chat)
        fail("option --chat-template '" + name +
             "' (allowed: model, chatml, llama3, inst, alpaca, plain)");
    o.setTemplate(*chat);
    o.trainOn = parseTrainOn(args.value("train-on", "all")).value_or(TrainOn::All);
    o.lossOnResponsesOnly = !args.flag("all-tokens");
    o.maxLength = int(args.integer("max-length", 1 << 20));
    const Example example = recordToExample(r.kind, r.fields);
    const TokenizedExample t = tokenizeExample(*tokenizer, example, o);
    // Text with the loss-carrying spans in [[ ]]; each token's text is the growth of the decoded
    // prefix, so word-leading spaces survive (decoding tokens one by one would drop them).
    std::string text;
    bool inLoss = false;
    std::string previous;
    for (size_t i = 0; i < t.ids.size(); ++i) {
        const bool loss = t.lossMask[i] != 0;
        if (loss != inLoss)
            text += loss ? "[[" : "]]";
        inLoss = loss;
        const std::string decoded =
            tokenizer->decode({t.ids.begin(), t.ids.begin() + long(i) + 1}, false);
        if (tokenizer->isSpecial(t.ids[i]) && decoded.compare(0, previous.size(), previous) == 0 &&
            decoded.size() == previous.size())
            text += tokenizer->idToPiece(t.ids[i]);  // a stop token decoding drops, e.g. </s>
        else
            text += decoded.compare(0, previous.size(), previous) == 0
                        ? decoded.substr(previous.size())
                        : tokenizer->decode({t.ids[i]}, false);
        previous = decoded;
    }
    if (inLoss)
        text += "]]";
    int64_t lossTokens = 0;
    for (uint8_t m : t.lossMask)
        lossTokens += m;
    printResult(out, args,
                json{{"id", r.id},
                     {"chat_template", o.templateName()},
                     {"ids", t.ids},
                     {"loss_mask", t.lossMask},
                     {"tokens", t.ids.size()},
                     {"loss_tokens", lossTokens},
                     {"truncated", t.truncated},
                     {"text", text}},
                text + "\n(" + std::to_string(t.ids.size()) + " tokens, " +
                    std::to_string(lossTokens) + " carry loss, marked [[ ]])\n");
    return 0;
}

int cmdSnapshot(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "split", "include-pending", "exclude-flagged", "no-synthetic",
                    "min-tokens", "max-tokens", "chat-template", "loss", "max-length", "out", "who",
                    "json"});
    auto store = openStore(args);
    SnapshotOptions o;
    o.split = args.value("split", "train");
    o.acceptedOnly = !args.flag("include-pending");
    o.excludeFlagged = args.flag("exclude-flagged");
    o.includeSynthetic = !args.flag("no-synthetic");
    o.minTokens = optionalInt(args, "min-tokens");
    o.maxTokens = optionalInt(args, "max-tokens");
    o.who = dataUser(args);
    // What the snapshot is made for, recorded in its manifest: checked as a run config checks the
    // same keys, so a manifest never names a template, loss or length no run could use.
    if (args.has("chat-template")) {
        const std::string name = args.value("chat-template");
        // The names data.chat_template takes, exactly ("auto": its older spelling of "model").
        const bool known =
            name == "model" || name == "auto" ||
            (parseChatTemplateName(name) && chatTemplateName(*parseChatTemplateName(name)) == name);
        if (!known)
            fail("option --chat-template '", name,
                 "' (allowed: model, chatml, llama3, inst, alpaca, plain)");
        o.templateInfo["chat_template"] = name;
    }
    if (args.has("loss")) {
        const std::string loss = args.value("loss");
        if (!parseLossKind(loss))
            fail("option --loss '", loss, "' (allowed: full, chunked)");
        o.templateInfo["loss"] = loss;
    }
    if (args.has("max-length")) {
        const long long length = args.integer("max-length", 0);
        if (length < 8 || length > INT_MAX)
            fail("option --max-length is ", length, " (data.max_length: at least 8)");
        o.templateInfo["max_length"] = length;
    }
    const SnapshotInfo s = createSnapshot(*store, o);
    std::string file;
    if (args.has("out"))
        file = exportSnapshot(*store, s.id, args.value("out"));
    json j = {{"id", s.id}, {"sha256", s.sha256}, {"records", s.records}};
    if (!file.empty())
        j["file"] = file;
    printResult(out, args, j,
                "snapshot " + s.id + ": " + std::to_string(s.records) + " records, sha256 " +
                    s.sha256 + (file.empty() ? "" : ", written to " + file) + "\n");
    return 0;
}

int cmdExportSnapshot(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "snapshot", "out", "json"});
    auto store = openStore(args);
    const std::string file = exportSnapshot(*store, args.value("snapshot"), args.value("out"));
    const SnapshotInfo s = findSnapshot(*store, args.value("snapshot"));
    printResult(out, args,
                json{{"id", s.id}, {"sha256", s.sha256}, {"records", s.records}, {"file", file}},
                "wrote " + file + "\n");
    return 0;
}

int cmdSnapshots(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "json"});
    auto store = openStore(args);
    json list = json::array();
    std::string text;
    for (const auto& s : listSnapshots(*store)) {
        list.push_back({{"id", s.id},
                        {"sha256", s.sha256},
                        {"records", s.records},
                        {"created_at", s.createdAt}});
        text += s.id + "  " + std::to_string(s.records) + " records  " + s.sha256.substr(0, 16) +
                "  " + s.createdAt + "\n";
    }
    printResult(out, args, json{{"snapshots", list}}, text);
    return 0;
}

}  // namespace

int cmdDataPairs(const Args& args, std::ostream& out);  // cli/data_pairs.cpp

int cmdData(const Args& args, std::ostream& out, std::ostream& /*err*/)
{
    if (args.positional().size() < 2) {
        out << kDataUsage;
        return 1;
    }
    const std::string& sub = args.positional()[1];
    if (sub == "pairs")
        return cmdDataPairs(args, out);
    if (sub != "import" && sub != "entity-pairs" && args.positional().size() > 2)
        fail("data ", sub, ": unexpected argument '", args.positional()[2], "'");
    if (sub == "import")
        return cmdImport(args, out);
    if (sub == "chunk")
        return cmdChunk(args, out);
    if (sub == "list")
        return cmdList(args, out);
    if (sub == "edit")
        return cmdEdit(args, out);
    if (sub == "dedup")
        return cmdDedup(args, out);
    if (sub == "filter")
        return cmdFilter(args, out);
    if (sub == "scan")
        return cmdScan(args, out);
    if (sub == "stats")
        return cmdStats(args, out);
    if (sub == "split")
        return cmdSplit(args, out);
    if (sub == "rehearsal")
        return cmdRehearsal(args, out);
    if (sub == "review")
        return cmdReview(args, out);
    if (sub == "agreement")
        return cmdAgreement(args, out);
    if (sub == "adjudicate")
        return cmdAdjudicate(args, out);
    if (sub == "history")
        return cmdHistory(args, out);
    if (sub == "undo")
        return cmdUndo(args, out);
    if (sub == "entity-pairs")
        return cmdEntityPairs(args, out);
    if (sub == "render")
        return cmdRender(args, out);
    if (sub == "snapshot")
        return cmdSnapshot(args, out);
    if (sub == "export")
        return cmdExportSnapshot(args, out);
    if (sub == "snapshots")
        return cmdSnapshots(args, out);
    if (sub == "help") {
        out << kDataUsage;
        return 0;
    }
    fail("data: unknown subcommand '", sub, "' (see tunebench data help)");
}

}  // namespace tb
