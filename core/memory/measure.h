// Memory measurement: a tracking allocator installed into LibTorch's CPU allocator (current and
// peak bytes of tensor memory) and the CUDA caching allocator's statistics. Torch-free header.
#pragma once

#include <cstdint>
#include <string>

namespace tb {

struct MemorySnapshot {
    int64_t current = 0;   // bytes held by tensors now (CUDA: allocated)
    int64_t peak = 0;      // highest `current` since the last resetPeak (CUDA: peak allocated)
    int64_t reserved = 0;  // CUDA: reserved by the caching allocator; CPU: equal to current
    std::string source;    // "cpu-tracked", "cpu-untracked" (tracking not installed) or "cuda"
};

// Wraps LibTorch's CPU allocator with a counting one (idempotent; stays installed for the process).
void installCpuMemoryTracking();
bool cpuMemoryTrackingInstalled();

// device: "cpu", "cuda", "cuda:N".
MemorySnapshot memorySnapshot(const std::string& device);
void resetMemoryPeak(const std::string& device);

// Resident memory of this process (bytes), from /proc/self/status; 0 where it cannot be read.
int64_t residentBytes();

// The kernel's high-water mark of resident memory (VmHWM, bytes) since the process started or the
// last resetResidentPeak; 0 where it cannot be read.
int64_t residentPeakBytes();

// Sets the high-water mark to the current resident size (Linux: "5" into /proc/self/clear_refs),
// so residentPeakBytes measures a phase of the process; false where the kernel refuses. It also
// lowers what getrusage/wait4 later report as the process's ru_maxrss: read the peak first.
bool resetResidentPeak();

}  // namespace tb
