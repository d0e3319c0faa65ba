// Reading, splitting and tokenizing a run's preference pairs.
#include "train/pair_data.h"

#include "train/batching.h"
#include "util/error.h"
#include "util/sha256.h"

#include <cmath>

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
    if (!c.data.store.empty())
        fail(c.sourcePath, ": key 'data.store': objective '", objectiveName(c.objective),
             "' reads pair files (data.train_file); export the snapshot's pairs with `tunebench "
             "data pairs export`");
    PreparedPairs d;
    std::vector<PairExample> train = readPairs(d, c.data.trainFile, c.preference.layout);
    std::string hashInput = sha256File(c.data.trainFile);
    std::vector<PairExample> val;
    if (!c.data.valFile.empty()) {
        val = readPairs(d, c.data.valFile, c.preference.layout);
        hashInput += sha256File(c.data.valFile);
    } else if (c.data.valRatio > 0) {
        // The seeded split of SFT: the same seed holds out the same pairs.
        const auto order = epochOrder(static_cast<int64_t>(train.size()), c.seed ^ 0x5eed, 0);
        const auto nVal =
            static_cast<size_t>(std::llround(c.data.valRatio * static_cast<double>(train.size())));
        std::vector<PairExample> kept;
        for (size_t i = 0; i < order.size(); ++i)
            (i < nVal ? val : kept).push_back(train[static_cast<size_t>(order[i])]);
        train = std::move(kept);
    }
    const ChatTemplate chat = runChatTemplate(c);
    d.train = tokenizePairs(train, tokenizer, chat, c.data.maxLength);
    d.val = tokenizePairs(val, tokenizer, chat, c.data.maxLength);
    report(d, d.train.rejected, "refused");
    report(d, d.val.rejected, "refused");
    if (d.train.pairs.empty())
        fail(c.data.trainFile, ": no preference pair left to train on (", d.train.rejected.size(),
             " refused, ", train.size(), " read)");
    if (d.train.truncated > 0)
        d.warnings.push_back(cat(d.train.truncated, " of ", d.train.pairs.size(),
                                 " training pairs were cut at max_length ", c.data.maxLength));
    d.valExamples = std::move(val);
    d.hash = sha256Hex(hashInput);
    d.data = {{"train_file", c.data.trainFile},
              {"val_file", c.data.valFile},
              {"hash", d.hash},
              {"train_pairs", d.train.pairs.size()},
              {"val_pairs", d.val.pairs.size()},
              {"truncated", d.train.truncated},
              {"rejected_rows", d.rejectedRows}};
    return d;
}

}  // namespace tb
