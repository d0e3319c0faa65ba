// Reading, splitting and tokenizing a run's preference pairs.
#include "train/pair_data.h"

#include "data/store/pairs_store.h"
#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "train/batching.h"
#include "util/error.h"
#include "util/sha256.h"

namespace tb {
namespace {

// Up to 20 messages per kind of problem, then a count: a bad file does not flood the log.
void report(PreparedPairs& d, const std::vector<std::pair<std::string, std::string>>& problems,
            const char* verb)
{
    d.rejectedRows += static_cast<int64_t>(problems.size());
    for (size_t i = 0; i < problems.size() && i < 20; ++i)
        d.warnings.push_back(cat(verb, " ", problems[i].first, ": ", problems[i].second));
    if (problems.size() > 20)
        d.warnings.push_back(cat(problems.size() - 20, " more pairs ", verb));
}

std::vector<PairExample> readPairs(PreparedPairs& d, const std::string& path, PairLayout layout)
{
    PairFile file = readPairFile(path, layout);
    std::vector<std::pair<std::string, std::string>> problems;
    for (const PairRejection& r : file.rejected)
        problems.emplace_back(r.location, r.reason);
    report(d, problems, "skipped");
    return std::move(file.pairs);
}

}  // namespace

PreparedPairs preparePairs(const TrainConfig& c, const Tokenizer& tokenizer)
{
    PreparedPairs d;
    std::vector<PairExample> train, val;
    std::string hashInput;
    nlohmann::json snapshots = nlohmann::json::object();
    // Pairs come from snapshots of a dataset store (recorded by id and hash) or from files.
    std::unique_ptr<DataStore> store;
    auto fromSnapshot = [&](const std::string& role, const std::string& id) {
        std::vector<PairExample> pairs = snapshotPairs(*store, id);
        const SnapshotInfo info = findSnapshot(*store, id);
        // The manifest's pair hash covers what was frozen (snapshotPairs verified it).
        const nlohmann::json pairHash = info.manifest.contains("pairs")
                                            ? info.manifest["pairs"].value("sha256", "")
                                            : std::string();
        snapshots[role] = {{"id", id}, {"sha256", pairHash}, {"pairs", pairs.size()}};
        hashInput += pairHash.get<std::string>();
        if (pairs.empty())
            fail(c.data.store, ": snapshot '", id, "' holds no preference pair");
        return pairs;
    };
    if (!c.data.store.empty()) {
        store = DataStore::open(c.data.store, false);
        train = fromSnapshot("train", c.data.snapshot);
    } else {
        train = readPairs(d, c.data.trainFile, c.preference.layout);
        hashInput = sha256File(c.data.trainFile);
    }
    if (store && !c.data.valSnapshot.empty()) {
        val = fromSnapshot("validation", c.data.valSnapshot);
    } else if (!c.data.valFile.empty()) {
        val = readPairs(d, c.data.valFile, c.preference.layout);
        hashInput += sha256File(c.data.valFile);
    } else if (c.data.valRatio > 0) {
        splitValidation(train, val, c.data.valRatio, c.seed);  // as SFT splits examples
    }
    const ChatTemplate chat = runChatTemplate(c);
    d.train = tokenizePairs(train, tokenizer, chat, c.data.maxLength);
    d.val = tokenizePairs(val, tokenizer, chat, c.data.maxLength);
    report(d, d.train.rejected, "refused");
    report(d, d.val.rejected, "refused");
    const std::string dataName =
        store ? c.data.store + " snapshot " + c.data.snapshot : c.data.trainFile;
    if (d.train.pairs.empty())
        fail(dataName, ": no preference pair left to train on (", d.train.rejected.size(),
             " refused, ", train.size(), " read)");
    if (d.train.truncated > 0)
        d.warnings.push_back(cat(d.train.truncated, " of ", d.train.pairs.size(),
                                 " training pairs were cut at max_length ", c.data.maxLength));
    d.valExamples = std::move(val);
    d.hash = sha256Hex(hashInput);
    d.data = {{"train_file", c.data.trainFile},
              {"val_file", c.data.valFile},
              {"store", c.data.store},
              {"snapshots", snapshots},
              {"hash", d.hash},
              {"train_pairs", d.train.pairs.size()},
              {"val_pairs", d.val.pairs.size()},
              {"truncated", d.train.truncated},
              {"rejected_rows", d.rejectedRows}};
    return d;
}

}  // namespace tb
