// A rank's share of a global micro-batch.
#include "dist/sampler.h"

#include "util/error.h"

namespace tb {

std::vector<int64_t> rankShare(const std::vector<int64_t>& global, int rank, int worldSize)
{
    if (worldSize < 1 || rank < 0 || rank >= worldSize)
        fail("rank ", rank, " is outside a world of ", worldSize);
    const auto n = static_cast<int64_t>(global.size());
    const int64_t from = n * rank / worldSize, to = n * (rank + 1) / worldSize;
    return {global.begin() + from, global.begin() + to};
}

}  // namespace tb
