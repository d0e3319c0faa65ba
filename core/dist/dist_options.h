// A run's data-parallel options (run.json's "dist"): the ZeRO stage, the collectives' timeout and
// the gradient bucket size. Torch-free.
#pragma once

#include <cstdint>

namespace tb {

struct DistOptions {
    int zero = 0;             // 0: replicate; 1: shard optimizer states; 2: and gradients
    int timeoutSeconds = 60;  // a collective (or start-up) waiting longer names the lost rank
    int64_t bucketMiB = 25;   // gradients are reduced in buckets of about this size, in order

    bool operator==(const DistOptions&) const = default;
};

}  // namespace tb
