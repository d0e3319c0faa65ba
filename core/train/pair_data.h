// The preference pairs of a run as it selects them: training pairs from a pair file (or a store
// snapshot), validation pairs from their file or the seeded val_ratio split, tokenized with the
// run's chat template, each pair that cannot be trained on reported. Internal to core.
#pragma once

#include "train/pair_batching.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tb {

struct PreparedPairs {
    PairSet train, val;
    std::vector<PairExample> valExamples;  // the validation pairs as read (evaluation prompts)
    std::vector<std::string> warnings;     // rows and pairs skipped, with file:line and reason
    int64_t rejectedRows = 0;              // rows that did not parse plus pairs refused
    std::string hash;                      // SHA-256 over the pair files, or the snapshots'
    nlohmann::json data;                   // run.json's "data" record
};
// Throws tb::Error naming the file when no training pair is left.
PreparedPairs preparePairs(const TrainConfig& config, const Tokenizer& tokenizer);

}  // namespace tb
