// Exact and near-duplicate detection over record texts: normalisation, hashing, MinHash with LSH
// banding, and the keep-first decision that says which records a dedup would remove.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

// The text that dedup compares: Unicode NFC, then full case folding (utf8proc: COMPOSE | CASEFOLD |
// STABLE, so "É", "é" and "e" + U+0301 all become "é", and "Straße" becomes "strasse"), then every
// run of Unicode White_Space (spaces, tabs, newlines, NBSP, ...) becomes one ASCII space, and
// leading and trailing space is dropped. Invalid UTF-8 sequences become U+FFFD first. Pure ASCII
// takes a fast path with the same result (lower-case A-Z, collapse whitespace).
std::string normaliseText(std::string_view text);

struct DedupOptions {
    bool exact = true;  // flag records whose normalised text equals an earlier one
    std::optional<double> nearThreshold;  // Jaccard similarity in (0, 1] of word shingles, e.g. 0.8
    int shingleWords = 3;                 // words per shingle
    int permutations = 128;               // MinHash signature length (uint32 each)
    uint64_t seed = 1;                    // MinHash hash family; same seed, same result
    // Memory for one band's keys while they are sorted (12 bytes a record): a band with more is
    // sorted in parts, one more read of its temporary file each. The result does not depend on it.
    size_t bandSortBytes = size_t(2) << 20;
};

struct DuplicateOf {
    int64_t index = 0;      // the record that would be removed
    int64_t keptIndex = 0;  // the kept record of its cluster (always a record that is not removed)
    // Jaccard similarity of the shingle sets of index and keptIndex; 1.0 for an exact copy of a
    // kept record (an exact copy of a removed near-duplicate carries that record's similarity).
    double similarity = 1.0;
    bool exact = true;  // normalised text equals that of an earlier record
};

struct DedupResult {
    int64_t records = 0;
    // Every record that would be removed, by increasing index: exact copies of an earlier record,
    // and records within the threshold of an earlier kept record. Never a kept record.
    std::vector<DuplicateOf> duplicates;
    int64_t exactDuplicates = 0, nearDuplicates = 0;  // exact + near == duplicates.size()
    // Groups with more than one member: the kept record first, then its duplicates by index;
    // groups ordered by their kept record.
    std::vector<std::vector<int64_t>> clusters;
};

// Bands and rows of the LSH banding for a threshold (see docs/data-curation.md): among b bands of
// r = permutations / b rows, those that make a pair at exactly the threshold a candidate with
// probability >= 0.99, and of those the one with the least false-positive area below the threshold.
struct LshBanding {
    int bands = 1;
    int rows = 1;
};
LshBanding chooseBanding(double threshold, int permutations);

// Records are taken in order. Record i is an exact duplicate when its normalised text equals that
// of an earlier record; otherwise (with nearThreshold) a near duplicate when an earlier kept record
// has shingle Jaccard similarity >= nearThreshold (the most similar such record, the earliest on a
// tie). Near candidates come from MinHash LSH; each is confirmed by exact Jaccard on the two
// records' sets of 32-bit shingle hashes. progress(fraction done) may return false to cancel
// (tb::Error). Throws tb::Error on invalid options.
DedupResult findDuplicates(const std::vector<std::string>& texts, const DedupOptions& options,
                           const std::function<bool(double)>& progress = {});

// The same over texts too many to hold: `each` calls its sink with every text once, in order, and
// textAt(i) returns text i again (asked for the few records whose exact hash or an LSH band
// matches an earlier one's). `count` sizes the exact-hash table and the progress. Memory: an
// 8-byte hash slot per distinct text (at most 70 % of the table full) during the streaming pass;
// band keys (8 bytes per record and band) go to temporary files, read back one band at a time (12
// bytes per record while a band is sorted); LSH state is held only for band keys that recur, and
// signatures and shingle sets are recomputed for candidates rather than kept.
using TextSink = std::function<void(std::string_view)>;
DedupResult findDuplicates(int64_t count, const std::function<void(const TextSink&)>& each,
                           const std::function<std::string(int64_t)>& textAt,
                           const DedupOptions& options,
                           const std::function<bool(double)>& progress = {});

}  // namespace tb
