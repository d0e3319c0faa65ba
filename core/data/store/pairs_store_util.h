// Shared by the pair files of the store (pairs_store.cpp, pairs_review.cpp): how a pair's texts
// are stored as JSON and how a new pair row is inserted.
#pragma once

#include "data/pairs.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tb {

namespace sql {
class Database;
}

// A stored prompt/answer: a message list, or a JSON string for plain-text pairs.
nlohmann::json storedPrompt(const PairExample& pair);
nlohmann::json storedAnswer(const PairExample& pair, bool chosen);
PairExample pairFromStored(const nlohmann::json& prompt, const nlohmann::json& chosen,
                           const nlohmann::json& rejected, bool plainText);

struct PairOrigin {
    std::string origin;  // import | compare | ranking
    int64_t sourceId = 0;
    std::string sourcePath;
    int64_t sourceLine = 0;
    int64_t verdictId = 0;
    int64_t rankingId = 0;
    std::string annotator;
};
// Inserts a pair as removed (its operation's change brings it in); returns its id.
int64_t insertPair(sql::Database& db, const PairExample& pair, const PairOrigin& origin,
                   int64_t operationId);

}  // namespace tb
