// The counting CPU allocator (delegates to LibTorch's default one) and CUDA allocator statistics.
#include "memory/measure.h"

#include "util/error.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/torch.h>

#include <atomic>
#include <mutex>

namespace tb {
namespace {

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};

// Counts bytes of every CPU tensor allocation. Each allocation keeps the inner allocator's DataPtr in a small
// context so freeing goes through the inner deleter, and subtracts its size.
class TrackingAllocator final : public c10::Allocator {
public:
    explicit TrackingAllocator(c10::Allocator* inner) : m_inner(inner) {}

    c10::DataPtr allocate(size_t n) override
    {
        c10::DataPtr inner = m_inner->allocate(n);
        void* data = inner.get();
        const c10::Device device = inner.device();
        auto* ctx = new Context{std::move(inner), static_cast<int64_t>(n)};
        const int64_t now = g_current.fetch_add(ctx->bytes) + ctx->bytes;
        int64_t peak = g_peak.load();
        while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
        }
        return c10::DataPtr(data, ctx, &release, device);
    }

    void copy_data(void* dest, const void* src, std::size_t count) const override
    {
        default_copy_data(dest, src, count);
    }

private:
    struct Context {
        c10::DataPtr inner;
        int64_t bytes;
    };
    static void release(void* ctx)
    {
        auto* c = static_cast<Context*>(ctx);
        g_current.fetch_sub(c->bytes);
        delete c;  // frees the memory through the inner allocator's deleter
    }
    c10::Allocator* m_inner;
};

std::once_flag g_installOnce;
std::atomic<bool> g_installed{false};

} // namespace

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
            c10::getDeviceAllocator(c10::DeviceType::CUDA)->resetPeakStats(d.has_index() ? d.index() : 0);
        return;
    }
    g_peak = g_current.load();
}

} // namespace tb
