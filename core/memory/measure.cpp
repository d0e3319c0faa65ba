// The counting CPU allocator (delegates to LibTorch's default one) and CUDA allocator statistics.
#include "memory/measure.h"

#include "util/error.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <cstring>
#include <fstream>
#include <torch/torch.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace tb {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};

// Counts bytes of every CPU tensor allocation. Pointers it hands out are "simple" (context ==
// data), as LibTorch's raw_allocate / raw_deleter users (oneDNN, bf16 kernels) require; the inner
// allocator's DataPtr and the size live in a table keyed by the data pointer until release.
class TrackingAllocator final : public c10::Allocator {
public:
    explicit TrackingAllocator(c10::Allocator* inner) : m_inner(inner) {}

    c10::DataPtr allocate(size_t n) override
    {
        c10::DataPtr inner = m_inner->allocate(n);
        void* data = inner.get();
        const c10::Device device = inner.device();
        if (!data)  // zero-byte allocations
            return inner;
        {
            std::lock_guard lock(table().mutex);
            table().entries.emplace(data, Entry{std::move(inner), static_cast<int64_t>(n)});
        }
        const int64_t now = g_current.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
        int64_t peak = g_peak.load();
        while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
        }
        return c10::DataPtr(data, data, &release, device);
    }

    c10::DeleterFnPtr raw_deleter() const override { return &release; }

    void copy_data(void* dest, const void* src, std::size_t count) const override
    {
        default_copy_data(dest, src, count);
    }

private:
    struct Entry {
        c10::DataPtr inner;
        int64_t bytes;
    };
    struct Table {
        std::mutex mutex;
        std::unordered_map<void*, Entry> entries;
    };
    static Table& table()
    {
        static auto* t = new Table();  // leaked: tensors freed during exit still look it up
        return *t;
    }
    static void release(void* data)
    {
        Entry entry;
        {
            std::lock_guard lock(table().mutex);
            auto it = table().entries.find(data);
            if (it == table().entries.end())
                return;
            entry = std::move(it->second);
            table().entries.erase(it);
        }
        g_current.fetch_sub(entry.bytes);
        // entry.inner frees the memory through the inner allocator's deleter when it goes out of
        // scope.
    }
    c10::Allocator* m_inner;
};

std::once_flag g_installOnce;
std::atomic<bool> g_installed{false};

}  // namespace

void installCpuMemoryTracking()
{
    std::call_once(g_installOnce, [] {
        // Leaked on purpose: tensors freed at exit still call into it.
        static auto* tracking = new TrackingAllocator(c10::GetDefaultCPUAllocator());
        c10::SetCPUAllocator(tracking, /*priority=*/10);
        g_installed = true;
    });
}

bool cpuMemoryTrackingInstalled()
{
    return g_installed.load();
}

MemorySnapshot memorySnapshot(const std::string& device)
{
    MemorySnapshot s;
    const torch::Device d(device);
    if (d.is_cuda()) {
        if (!torch::cuda::is_available())
            fail("memory: no CUDA device");
        auto* allocator = c10::getDeviceAllocator(c10::DeviceType::CUDA);
        const auto stats = allocator->getDeviceStats(d.has_index() ? d.index() : 0);
        const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
        s.current = stats.allocated_bytes[aggregate].current;
        s.peak = stats.allocated_bytes[aggregate].peak;
        s.reserved = stats.reserved_bytes[aggregate].current;
        s.source = "cuda";
        return s;
    }
    s.current = g_current.load();
    s.peak = g_peak.load();
    s.reserved = s.current;
    s.source = g_installed ? "cpu-tracked" : "cpu-untracked";
    return s;
}

void resetMemoryPeak(const std::string& device)
{
    const torch::Device d(device);
    if (d.is_cuda()) {
        if (torch::cuda::is_available())
            c10::getDeviceAllocator(c10::DeviceType::CUDA)
                ->resetPeakStats(d.has_index() ? d.index() : 0);
        return;
    }
    g_peak = g_current.load();
}

namespace {

int64_t statusField(const char* key)
{
    std::ifstream in("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0)
            return std::stoll(line.substr(n + 1)) * 1024;  // kB
    return 0;
}

}  // namespace

int64_t residentBytes()
{
    return statusField("VmRSS:");
}

int64_t residentPeakBytes()
{
    return statusField("VmHWM:");
}

bool resetResidentPeak()
{
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return static_cast<bool>(out);
}

}  // namespace tb
