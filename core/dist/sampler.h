// The distributed sampler's rule: every rank reads the same global order (train/'s epoch order,
// seeded) in global micro-batches of world x batch_size sequences and takes its contiguous share,
// so every sequence is read once per epoch and N ranks x B read what one process x N·B reads. The
// tail of an epoch (fewer than N·B left) is split as evenly as possible in rank order; a rank whose
// share is empty contributes zero gradients. The position is global, so a run resumes on any world
// size. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace tb {

// Rank `rank`'s share of one global micro-batch: [floor(r·L/N), floor((r+1)·L/N)).
std::vector<int64_t> rankShare(const std::vector<int64_t>& global, int rank, int worldSize);

}  // namespace tb
