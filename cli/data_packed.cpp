// `tunebench data render --packed`: the bins packed training (data.packing) makes of a store's
// records, with each bin's examples (record, source line, tokens) and the packing efficiency.
#include "cli/commands.h"

#include "data/example.h"
#include "data/record.h"
#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "train/batching.h"
#include "train/metrics.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include <nlohmann/json.hpp>

#include <map>

namespace tb {
namespace {

using nlohmann::json;

// One record to pack: its id, where it came from ("data.jsonl:3") and its training example.
struct PackInput {
    int64_t recordId = 0;
    std::string source;
    Example example;
};

std::string sourceOf(const StoredRecord& r)
{
    if (r.sourcePath.empty())
        return "record " + std::to_string(r.id);
    return r.sourceLine > 0 ? r.sourcePath + ":" + std::to_string(r.sourceLine) : r.sourcePath;
}

// A snapshot's frozen records (what a run trains on), or the live records of a split.
std::vector<PackInput> packInputs(const DataStore& store, const Args& args)
{
    std::vector<PackInput> inputs;
    if (!args.has("snapshot")) {
        RecordQuery query;
        query.split = args.value("split", "train");
        for (const StoredRecord& r : store.records(query))
            inputs.push_back({r.id, sourceOf(r),
                              recordToExample(r.kind, r.fields,
                                              store.path() + ": record " + std::to_string(r.id))});
        return inputs;
    }
    RecordQuery all;
    all.includeRemoved = true;  // a snapshot keeps records that were removed after it
    std::map<int64_t, std::string> sources;
    for (const StoredRecord& r : store.records(all))
        sources[r.id] = sourceOf(r);
    for (const SnapshotRecord& r : snapshotRecords(store, args.value("snapshot"))) {
        const auto found = sources.find(r.recordId);
        inputs.push_back(
            {r.recordId,
             found != sources.end() ? found->second : "record " + std::to_string(r.recordId),
             recordToExample(r.kind, r.fields,
                             store.path() + ": record " + std::to_string(r.recordId))});
    }
    return inputs;
}

// --chat-template: model (the model's own, the default) or a family, as data render takes it.
ChatTemplate renderTemplate(const Args& args, const std::string& modelDir)
{
    const std::string name = args.value("chat-template", "model");
    const auto chat = chatTemplateByName(name, modelDir);
    if (!chat)
        fail("option --chat-template '" + name +
             "' (allowed: model, chatml, llama3, inst, alpaca, plain)");
    return *chat;
}

}  // namespace

int cmdRenderPacked(const Args& args, std::ostream& out)
{
    args.allowOnly({"store", "packed", "snapshot", "split", "model", "chat-template", "max-length",
                    "seed", "json"});
    const std::string path = args.value("store");
    if (!fileExists(path))
        fail(path, ": no such dataset store (import a file first: tunebench data import --store ",
             path, " FILE)");
    const auto store = DataStore::open(path, false);
    const std::vector<PackInput> inputs = packInputs(*store, args);
    const std::string modelDir = args.value("model", bundledModelDir());
    const auto tokenizer = loadTokenizer(modelDir);
    TokenizeOptions o;
    o.setTemplate(renderTemplate(args, modelDir));
    o.maxLength = int(args.integer("max-length", 256));
    if (o.maxLength < 8)
        fail("option --max-length must be >= 8 (got ", o.maxLength, ")");
    const auto seed = args.seed(0);

    // Exactly the trainer's path: tokenize with the template, cut at max_length, pack (seeded).
    std::vector<TokenizedExample> tokenized;
    for (const PackInput& in : inputs)
        tokenized.push_back(tokenizeExample(*tokenizer, in.example, o));
    const SequenceSet set = buildSequences(tokenized, o.maxLength, true, seed);
    const PackingStats stats = packingStats(set).value_or(PackingStats{});

    json bins = json::array();
    std::string text;
    for (size_t b = 0; b < set.sequences.size(); ++b) {
        const Sequence& seq = set.sequences[b];
        json examples = json::array();
        text += "bin " + std::to_string(b + 1) + " (" + std::to_string(seq.length) + " of " +
                std::to_string(o.maxLength) + " tokens):";
        for (size_t k = 0; k < seq.examples.size(); ++k) {
            const PackInput& in = inputs[static_cast<size_t>(seq.examples[k])];
            const int32_t end = k + 1 < seq.starts.size() ? seq.starts[k + 1] : seq.length;
            const int32_t tokens = end - seq.starts[k];
            examples.push_back(
                {{"record_id", in.recordId}, {"source", in.source}, {"tokens", tokens}});
            text += (k ? ", #" : " #") + std::to_string(in.recordId) + " " + in.source + " (" +
                    std::to_string(tokens) + ")";
        }
        text += "\n";
        bins.push_back({{"tokens", seq.length}, {"examples", examples}});
    }
    text += formatPacking(stats) + "; " + std::to_string(set.truncated) + " cut at max_length " +
            std::to_string(o.maxLength) + "\n";
    const json j = {
        {"chat_template", o.templateName()}, {"max_length", o.maxLength},  {"seed", seed},
        {"records", inputs.size()},          {"truncated", set.truncated}, {"bins", bins},
        {"packing", toJson(stats)}};
    if (args.flag("json"))
        out << j.dump() << "\n";
    else
        out << text;
    return 0;
}

}  // namespace tb
