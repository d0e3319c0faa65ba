// AdamW through LibTorch's fused multi-tensor kernel (one pass over each parameter, its gradient
// and both moments, vectorised and threaded; torch.optim.AdamW(fused=True)), and SGD written out
// step by step (the arithmetic of torch.optim's single-tensor path).
#include "train/optimizer.h"

#include "dist/grad_norm.h"
#include "util/error.h"

#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

namespace tb {

Optimizer::Optimizer(std::vector<std::pair<std::string, torch::Tensor>> params,
                     std::vector<bool> decay, OptimOptions options)
    : m_params(std::move(params)), m_decay(std::move(decay)), m_options(std::move(options))
{
    torch::NoGradGuard noGrad;
    for (auto& [name, p] : m_params) {
        if (m_options.optimizer == OptimizerKind::AdamW) {
            m_expAvg.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
            m_expAvgSq.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
            // on the parameter's device, as torch.optim keeps it with fused=True
            m_stepCounts.push_back(torch::zeros({}, p.options().dtype(torch::kFloat32)));
        } else if (m_options.momentum > 0) {
            m_momentum.push_back(
                torch::Tensor());  // created at the first step, as torch.optim.SGD does
        }
    }
}

void Optimizer::step(double lr)
{
    torch::NoGradGuard noGrad;
    ++m_steps;
    const auto& o = m_options;
    if (o.optimizer == OptimizerKind::AdamW) {
        stepAdamW(lr);
        return;
    }
    for (size_t i = 0; i < m_params.size(); ++i) {
        auto& p = m_params[i].second;
        auto grad = p.grad();
        if (!grad.defined())
            continue;
        const double wd = m_decay[i] ? o.weightDecay : 0.0;
        auto d = wd > 0 ? grad.add(p, wd) : grad;
        if (o.momentum > 0) {
            auto& buf = m_momentum[i];
            if (!buf.defined())
                buf = d.clone().detach();
            else
                buf.mul_(o.momentum).add_(d);
            d = buf;
        }
        p.add_(d, -lr);
    }
}

void Optimizer::stepAdamW(double lr)
{
    // The fused kernel takes lists of one device and dtype and one weight decay; its step counts
    // are float tensors it reads (for the bias corrections) after the caller has advanced them.
    struct Group {
        std::vector<torch::Tensor> params, grads, expAvg, expAvgSq, steps;
    };
    std::map<std::tuple<std::string, int, bool>, Group> groups;
    const auto& o = m_options;
    for (size_t i = 0; i < m_params.size(); ++i) {
        auto& p = m_params[i].second;
        if (!p.grad().defined())
            continue;
        m_stepCounts[i].add_(1);
        auto& g = groups[{p.device().str(), static_cast<int>(p.scalar_type()), bool(m_decay[i])}];
        g.params.push_back(p);
        g.grads.push_back(p.grad());
        g.expAvg.push_back(m_expAvg[i]);
        g.expAvgSq.push_back(m_expAvgSq[i]);
        g.steps.push_back(m_stepCounts[i]);
    }
    for (auto& [key, g] : groups)
        at::_fused_adamw_(g.params, g.grads, g.expAvg, g.expAvgSq, {}, g.steps, lr, o.beta1,
                          o.beta2, std::get<2>(key) ? o.weightDecay : 0.0, o.eps,
                          /*amsgrad=*/false, /*maximize=*/false);
}

int64_t Optimizer::stateBytes() const
{
    int64_t n = 0;
    for (const auto* list : {&m_expAvg, &m_expAvgSq, &m_momentum})
        for (const auto& t : *list)
            if (t.defined())
                n += static_cast<int64_t>(t.nbytes());
    return n;
}

void Optimizer::zeroGrad()
{
    for (auto& [name, p] : m_params)
        if (p.grad().defined())
            p.mutable_grad() = torch::Tensor();
}

double Optimizer::clipGradNorm(double maxNorm)
{
    torch::NoGradGuard noGrad;
    // In float64, as ZeRO's sharded norm adds the same squares (dist/grad_norm.h).
    std::vector<torch::Tensor> squares;
    for (auto& [name, p] : m_params)
        if (p.grad().defined())
            squares.push_back(squaresF64(p.grad()));
    if (squares.empty())
        return 0.0;
    const double total = std::sqrt(torch::stack(squares).sum().item<double>());
    if (maxNorm > 0 && std::isfinite(total) && total > maxNorm) {
        const double scale = maxNorm / (total + 1e-6);
        for (auto& [name, p] : m_params)
            if (p.grad().defined())
                p.grad().mul_(scale);
    }
    return total;
}

TensorBlob tensorToBlob(const std::string& name, const torch::Tensor& t)
{
    auto cpu = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    TensorBlob blob{name, DType::F32, cpu.sizes().vec(), std::string()};
    blob.bytes.assign(reinterpret_cast<const char*>(cpu.data_ptr<float>()),
                      static_cast<size_t>(cpu.numel()) * 4);
    return blob;
}

torch::Tensor blobToTensor(const TensorBlob& blob)
{
    if (blob.dtype != DType::F32)
        fail("tensor '", blob.name, "' is ", dtypeName(blob.dtype), ", expected F32");
    auto t = torch::empty(blob.shape, torch::kFloat32);
    if (static_cast<size_t>(t.numel()) * 4 != blob.bytes.size())
        fail("tensor '", blob.name, "' has ", blob.bytes.size(), " bytes for its shape");
    std::memcpy(t.data_ptr<float>(), blob.bytes.data(), blob.bytes.size());
    return t;
}

std::vector<TensorBlob> Optimizer::stateBlobs() const
{
    std::vector<TensorBlob> out;
    for (size_t i = 0; i < m_params.size(); ++i) {
        const auto& name = m_params[i].first;
        if (!m_expAvg.empty()) {
            out.push_back(tensorToBlob(name + ".exp_avg", m_expAvg[i]));
            out.push_back(tensorToBlob(name + ".exp_avg_sq", m_expAvgSq[i]));
        }
        if (!m_momentum.empty() && m_momentum[i].defined())
            out.push_back(tensorToBlob(name + ".momentum", m_momentum[i]));
    }
    return out;
}

void Optimizer::loadState(const std::vector<TensorBlob>& blobs, int64_t steps)
{
    std::map<std::string, const TensorBlob*> byName;
    for (const auto& b : blobs)
        byName[b.name] = &b;
    torch::NoGradGuard noGrad;
    auto take = [&](const std::string& key, torch::Tensor& into, const torch::Tensor& like) {
        auto it = byName.find(key);
        if (it == byName.end())
            fail("optimizer state: tensor '", key, "' is missing");
        auto t = blobToTensor(*it->second);
        if (t.sizes() != like.sizes())
            fail("optimizer state: tensor '", key, "' has the wrong shape");
        into = t.to(like.device(), like.scalar_type());
    };
    for (size_t i = 0; i < m_params.size(); ++i) {
        const auto& [name, p] = m_params[i];
        if (!m_expAvg.empty()) {
            take(name + ".exp_avg", m_expAvg[i], p);
            take(name + ".exp_avg_sq", m_expAvgSq[i], p);
        }
        if (!m_momentum.empty() && byName.count(name + ".momentum"))
            take(name + ".momentum", m_momentum[i], p);
    }
    m_steps = steps;
    for (auto& count : m_stepCounts)
        count.fill_(static_cast<double>(steps));
}

}  // namespace tb
