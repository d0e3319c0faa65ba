// Operator profile of a stretch of LibTorch work: self time of every operator (its time without
// the operators it calls), from LibTorch's own profiler. Torch-free header.
#pragma once

#include "cli/train_bench.h"

#include <vector>

namespace tb {

// Starts recording the operators this process runs on the CPU; fails if a profile is running.
void startOpProfile();

// Stops recording and returns each operator's self time and calls divided by `per` (steps),
// largest self time first.
std::vector<OpTime> stopOpProfile(int per);

}  // namespace tb
