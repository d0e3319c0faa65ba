// The entity-matching task template: two records -> "Do these refer to the same entity? Yes/No",
// with positives from records that share an entity id and hard negatives that pair near-identical
// records of different entities (the cases a matcher must learn to tell apart).
#pragma once

#include "data/store/store.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct EntityRecord {
    std::string entityId;
    nlohmann::json
        attributes;  // the record's fields without the entity key (rendered in key order)
};

struct EntityPairOptions {
    int negativesPerPositive = 1;
    int maxPositivesPerEntity = 10;
    uint64_t seed = 1;
    std::string question = "Do these refer to the same entity?";
};

struct EntityPair {
    size_t a = 0, b = 0;  // indices into the input
    bool same = false;
    double similarity = 0;      // Jaccard of the records' word sets
    bool hardNegative = false;  // a different entity chosen for its similarity
};

// Word-set Jaccard similarity of two records' attribute values (lowercased, split on
// non-alphanumerics).
double entitySimilarity(const EntityRecord& a, const EntityRecord& b);

// Positives: pairs within each entity (at most maxPositivesPerEntity). Negatives: per positive, the
// most similar not-yet-used records of other entities (hard negatives); random other-entity pairs
// fill in when no similar record is left. Deterministic for a seed.
std::vector<EntityPair> entityPairs(const std::vector<EntityRecord>& records,
                                    const EntityPairOptions& options);

// "Record A: name: Acme Corp; city: Berlin\nRecord B: ...\n<question> Answer Yes or No."
std::string renderEntityPrompt(const EntityRecord& a, const EntityRecord& b,
                               const std::string& question);

// A prompt-completion record for the store: completion "Yes"/"No", label "match"/"non-match" (for
// the stratified split), the two entity ids and the hard-negative flag kept as fields.
NewRecord entityPairRecord(const std::vector<EntityRecord>& records, const EntityPair& pair,
                           const std::string& question);

// Reads entity records from a JSONL file: each object must hold `entityKey` (string or number).
std::vector<EntityRecord> readEntityRecords(const std::string& path, const std::string& entityKey);

}  // namespace tb
