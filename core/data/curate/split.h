// Seeded train/validation assignment, stratified by label, and the seeded choice of general-text
// records to mix into a task dataset (rehearsal against forgetting).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

// Per record, 0 = train or 1 = validation. `labels` is empty (no labels) or holds one label per
// record ("" = unlabelled, a group of its own). Each label's records are split separately: its
// validation count is n * validationFraction rounded by largest remainder across labels (so the
// total is the rounded overall count) and then, when 0 < fraction < 1 and the label has >= 2
// records, moved into [1, n - 1] so both sides see it; every label stays within one record of
// n * fraction. Which records go where comes from a SplitMix64 shuffle seeded by seed and the
// label's bytes: the same on every platform, and a label's assignment does not depend on other
// labels. Throws when the fraction is outside [0, 1] or labels has the wrong size.
std::vector<int> splitAssign(int64_t records, const std::vector<std::string>& labels,
                             double validationFraction, uint64_t seed);

// The same, with one record per label (so labels must not be empty for a non-empty split).
std::vector<int> splitAssign(const std::vector<std::string>& labels, double validationFraction,
                             uint64_t seed);

// Indices in [0, generalCount) of general-text records to add to taskCount task records so that
// general / (task + general) is ratio: round(taskCount * ratio / (1 - ratio)) of them, capped at
// generalCount. Chosen without replacement by seeded selection sampling; returned in increasing
// order. ratio 0 picks none; throws when ratio is outside [0, 1) or a count is negative.
std::vector<int64_t> rehearsalPick(int64_t generalCount, int64_t taskCount, double ratio,
                                   uint64_t seed);

}  // namespace tb
