// Buckets, post-accumulate hooks, the all-reduce or reduce-scatter of each bucket in order, and the
// ZeRO shards.
#include "dist/grad_sync.h"

#include "dist/grad_norm.h"

#include "util/error.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cmath>

namespace tb {
namespace {

struct ReadyHook : torch::autograd::PostAccumulateGradHook {
    ReadyHook(GradSync* sync, size_t index) : sync(sync), index(index) {}
    void operator()(const torch::autograd::Variable&) override { sync->ready(index); }
    GradSync* sync;
    size_t index;
};

}  // namespace

GradSync::GradSync(const Named& params, DistGroup& group, int zero, int64_t bucketBytes)
    : m_params(params), m_group(group), m_zero(zero)
{
    if (zero < 0 || zero > 2)
        fail("dist.zero is ", zero, " (offered: 0, 1, 2)");
    const int64_t world = group.size();
    m_slots.resize(m_params.size());
    // Reverse order: backward completes the last layers' gradients first.
    for (size_t k = m_params.size(); k-- > 0;) {
        const torch::Tensor& p = m_params[k].second;
        if (!p.is_contiguous())
            fail("data parallelism: parameter '", m_params[k].first, "' is not contiguous");
        const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
        const bool fresh = m_buckets.empty() || m_buckets.back().dtype != p.scalar_type() ||
                           (m_buckets.back().numel * p.element_size() + bytes > bucketBytes &&
                            !m_buckets.back().params.empty());
        if (fresh) {
            m_buckets.emplace_back();
            m_buckets.back().dtype = p.scalar_type();
        }
        Bucket& b = m_buckets.back();
        m_slots[k] = {m_buckets.size() - 1, b.numel, p.numel()};
        b.params.push_back(k);
        b.numel += p.numel();
    }
    for (Bucket& b : m_buckets) {
        b.numel = (b.numel + world - 1) / world * world;
        b.chunk = b.numel / world;
        b.pending = static_cast<int>(b.params.size());
    }
    for (size_t k = 0; k < m_params.size(); ++k)
        torch::autograd::impl::set_post_acc_grad_hooks(m_params[k].second,
                                                       std::make_unique<ReadyHook>(this, k));
    if (m_zero >= 1)
        buildSegments();
}

GradSync::~GradSync()
{
    for (auto& [name, p] : m_params)
        torch::autograd::impl::post_acc_grad_hooks(p).reset();
}

// This rank's chunk [rank x chunk, (rank + 1) x chunk) of each bucket, cut at parameter borders.
void GradSync::buildSegments()
{
    const int64_t rank = m_group.rank();
    for (size_t bi = 0; bi < m_buckets.size(); ++bi) {
        const Bucket& b = m_buckets[bi];
        const int64_t lo = rank * b.chunk, hi = lo + b.chunk;
        for (size_t k : b.params) {
            const Slot& s = m_slots[k];
            const int64_t from = std::max(lo, s.offset), to = std::min(hi, s.offset + s.numel);
            if (from >= to)
                continue;
            const int64_t start = from - s.offset;
            torch::Tensor view = m_params[k].second.detach().view({-1}).narrow(0, start, to - from);
            m_segments.emplace_back(m_params[k].first + "@" + std::to_string(start), view);
            m_places.push_back({k, start, from - lo});
        }
    }
}

std::string GradSync::segmentParameter(const std::string& segment)
{
    const auto at = segment.rfind('@');
    return at == std::string::npos ? segment : segment.substr(0, at);
}

void GradSync::broadcastParameters()
{
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> data;
    for (auto& [name, p] : m_params)
        data.push_back(p.detach());
    m_group.broadcast(data, 0, "broadcasting rank 0's trainable parameters");
}

void GradSync::ready(size_t i)
{
    if (!m_armed)
        return;
    Bucket& b = m_buckets[m_slots[i].bucket];
    --b.pending;
    while (m_next < m_buckets.size() && m_buckets[m_next].pending == 0)
        launch(m_next++);
}

void GradSync::launch(size_t bi)
{
    torch::NoGradGuard noGrad;
    Bucket& b = m_buckets[bi];
    b.pending = -1;  // launched
    const torch::Tensor& first = m_params[b.params.front()].second;
    b.flat = torch::zeros({b.numel}, first.options().dtype(b.dtype).requires_grad(false));
    for (size_t k : b.params) {
        torch::Tensor& p = m_params[k].second;
        if (p.grad().defined())
            b.flat.narrow(0, m_slots[k].offset, m_slots[k].numel).copy_(p.grad().view({-1}));
        if (m_zero >= 2)
            p.mutable_grad() = torch::Tensor();  // only this rank's chunk is kept
    }
    if (m_zero >= 2) {
        b.shard = torch::empty({b.chunk}, b.flat.options());
        b.work = m_group.reduceScatterAsync(b.shard, b.flat);
    } else {
        b.work = m_group.allreduceAsync(b.flat);
    }
}

void GradSync::finish()
{
    torch::NoGradGuard noGrad;
    m_armed = false;
    while (m_next < m_buckets.size())
        launch(m_next++);
    for (size_t bi = 0; bi < m_buckets.size(); ++bi) {
        Bucket& b = m_buckets[bi];
        m_group.wait(b.work, "the gradient " +
                                 std::string(m_zero >= 2 ? "reduce-scatter" : "all-reduce") +
                                 " (bucket " + std::to_string(bi) + ")");
        b.work.reset();
        if (m_zero < 2) {
            for (size_t k : b.params) {
                torch::Tensor& p = m_params[k].second;
                const torch::Tensor sum =
                    b.flat.narrow(0, m_slots[k].offset, m_slots[k].numel).view(p.sizes());
                if (p.grad().defined())
                    p.mutable_grad().copy_(sum);
                else
                    p.mutable_grad() = sum.clone();
            }
        }
        b.flat = torch::Tensor();
        b.pending = static_cast<int>(b.params.size());
    }
    m_next = 0;
    for (size_t s = 0; s < m_segments.size(); ++s) {
        const SegmentPlace& at = m_places[s];
        torch::Tensor& segment = m_segments[s].second;
        if (m_zero >= 2)
            segment.mutable_grad() =
                m_buckets[m_slots[at.param].bucket].shard.narrow(0, at.inChunk, segment.numel());
        else
            segment.mutable_grad() =
                m_params[at.param].second.grad().view({-1}).narrow(0, at.start, segment.numel());
    }
}

std::vector<torch::Tensor> GradSync::gradients() const
{
    std::vector<torch::Tensor> out;
    if (m_zero >= 2) {
        for (const Bucket& b : m_buckets)
            if (b.shard.defined())
                out.push_back(b.shard);
    } else {
        for (const auto& [name, p] : m_params)
            if (p.grad().defined())
                out.push_back(p.grad());
    }
    return out;
}

void GradSync::zeroGrad()
{
    for (auto* list : {&m_params, &m_segments})
        for (auto& [name, t] : *list)
            if (t.grad().defined())
                t.mutable_grad() = torch::Tensor();
}

int64_t GradSync::gradientBytes() const
{
    int64_t n = 0;
    for (const torch::Tensor& g : gradients())
        n += static_cast<int64_t>(g.nbytes());
    return n;
}

double GradSync::clipGradNorm(double maxNorm)
{
    torch::NoGradGuard noGrad;
    torch::Tensor squares = torch::zeros({1}, torch::kFloat64);
    for (const auto& [name, s] : m_segments)
        if (s.grad().defined())
            squares += squaresF64(s.grad()).cpu();
    m_group.allreduceSum({squares}, "the gradient norm's all-reduce");
    const double total = std::sqrt(squares.cpu().item<double>());
    if (maxNorm > 0 && std::isfinite(total) && total > maxNorm) {
        const double scale = maxNorm / (total + 1e-6);
        for (const auto& [name, s] : m_segments)
            if (s.grad().defined())
                s.grad().mul_(scale);
    }
    return total;
}

void GradSync::gatherParameters()
{
    torch::NoGradGuard noGrad;
    for (size_t bi = 0; bi < m_buckets.size(); ++bi) {
        const Bucket& b = m_buckets[bi];
        const torch::Tensor& first = m_params[b.params.front()].second;
        torch::Tensor chunk = torch::zeros({b.chunk}, first.options().dtype(b.dtype));
        for (size_t s = 0; s < m_segments.size(); ++s)
            if (m_slots[m_places[s].param].bucket == bi)
                chunk.narrow(0, m_places[s].inChunk, m_segments[s].second.numel())
                    .copy_(m_segments[s].second);
        torch::Tensor all = torch::empty({b.numel}, chunk.options());
        m_group.allgather(all, chunk,
                          "the parameter all-gather (bucket " + std::to_string(bi) + ")");
        for (size_t k : b.params) {
            torch::Tensor data = m_params[k].second.detach().view({-1});
            data.copy_(all.narrow(0, m_slots[k].offset, m_slots[k].numel));
        }
    }
}

int64_t GradSync::paddingElements() const
{
    int64_t pad = 0;
    for (const Bucket& b : m_buckets) {
        int64_t real = 0;
        for (size_t k : b.params)
            real += m_slots[k].numel;
        pad += b.numel - real;
    }
    return pad;
}

}  // namespace tb
