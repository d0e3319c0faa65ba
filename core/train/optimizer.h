// AdamW (decoupled weight decay, as torch.optim.AdamW computes it, through its fused kernel) and
// SGD with momentum over named parameters, with state that round-trips through safetensors blobs
// for exact resume. Internal to core.
#pragma once

#include "model/safetensors.h"
#include "train/train_config.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace tb {

class Optimizer {
public:
    // decay[i]: whether parameter i gets weight decay (not biases, norms or soft prompts).
    Optimizer(std::vector<std::pair<std::string, torch::Tensor>> params, std::vector<bool> decay,
              OptimOptions options);

    // One update with learning rate lr from the parameters' .grad(); parameters without a gradient
    // are skipped.
    void step(double lr);
    void zeroGrad();
    int64_t steps() const { return m_steps; }
    int64_t stateBytes() const;  // bytes of the moments / momentum buffers now allocated

    // Global L2 norm of all gradients (fp32), and in-place scaling so it does not exceed maxNorm (>
    // 0).
    double clipGradNorm(double maxNorm);

    // State as tensors: "<param>.exp_avg", "<param>.exp_avg_sq" (AdamW), "<param>.momentum" (SGD);
    // the step count is kept by the caller's state.json.
    std::vector<TensorBlob> stateBlobs() const;
    void loadState(const std::vector<TensorBlob>& blobs, int64_t steps);

    const std::vector<std::pair<std::string, torch::Tensor>>& params() const { return m_params; }

private:
    void stepAdamW(double lr);

    std::vector<std::pair<std::string, torch::Tensor>> m_params;
    std::vector<bool> m_decay;
    OptimOptions m_options;
    std::vector<torch::Tensor> m_expAvg, m_expAvgSq, m_momentum;
    // AdamW: each parameter's update count (fp32, on its device), advanced only when it has a
    // gradient, as torch.optim counts per parameter.
    std::vector<torch::Tensor> m_stepCounts;
    int64_t m_steps = 0;
};

// A tensor <-> blob in F32 (CPU copy, little-endian).
TensorBlob tensorToBlob(const std::string& name, const torch::Tensor& t);
torch::Tensor blobToTensor(const TensorBlob& blob);

}  // namespace tb
