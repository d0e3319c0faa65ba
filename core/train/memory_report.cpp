// Estimated vs measured memory after the first optimizer step.
#include "train/memory_report.h"

#include "memory/estimator.h"

namespace tb {

MemoryReport compareWithEstimate(CausalLM& model, const TrainConfig& config,
                                 const StepMemory& measured, int64_t step, int64_t seq, bool cuda)
{
    EstimateOptions o = estimateOptionsFor(config, seq);
    o.cudaOverhead = cuda;
    o.advise = false;
    const MemoryEstimate e = estimateMemory(model.config(), config, o);
    int64_t weights = 0;
    for (const auto& p : model.parameters())
        weights += static_cast<int64_t>(p.nbytes());
    MemoryReport r;
    r.step = step;
    r.seq = seq;
    // activations: the tensors alive after the forward pass beyond those after loading
    r.items = {{"weights", e.weights, weights, true},
               {"gradients", e.gradients, measured.gradientBytes, true},
               {"optimizer_states", e.optimizerStates, measured.optimizerStateBytes, true},
               {"activations", e.activations + e.logits, measured.afterForward - measured.afterLoad,
                false},
               {"total", e.total, measured.peak, false}};
    return r;
}

}  // namespace tb
