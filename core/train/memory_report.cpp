// Estimated vs measured memory after the first optimizer step.
#include "train/memory_report.h"

#include "memory/estimator.h"

namespace tb {
namespace {

// The reward head's bytes when the model holds it as a parameter named score.weight.
int64_t headWeightBytes(CausalLM& model)
{
    int64_t bytes = 0;
    for (const auto& p : model.named_parameters()) {
        const std::string& name = p.key();
        const std::string suffix = "score.weight";
        if (name == suffix ||
            (name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size() - 1, std::string::npos, "." + suffix) == 0))
            bytes += static_cast<int64_t>(p.value().nbytes());
    }
    return bytes;
}

}  // namespace

MemoryReport compareWithEstimate(CausalLM& model, const TrainConfig& config,
                                 const StepMemory& measured, int64_t step, int64_t seq, bool cuda,
                                 CausalLM* reference, int worldSize)
{
    EstimateOptions o = estimateOptionsFor(config, seq);
    o.cudaOverhead = cuda;
    o.gpus = worldSize;  // data parallelism: one rank's share (ZeRO), as the planner shows it
    o.zero = worldSize > 1 ? config.dist.zero : 0;
    o.advise = false;
    const MemoryEstimate e = estimateMemory(model.config(), config, o);
    const int64_t weights = model.weightBytes();  // quantised layers at their packed size
    MemoryReport r;
    r.step = step;
    r.seq = seq;
    // The reward head: its gradient and states are among the optimizer's tensors, so they join
    // those items; its weight is reported on its own (moved out of the policy's when the model
    // holds it as score.weight).
    const int64_t head = headWeightBytes(model);
    r.items = {
        {"weights", e.weights, weights - head, true},
        {"gradients", e.gradients + e.headGradient, measured.gradientBytes, true},
        {"optimizer_states", e.optimizerStates + e.headStates, measured.optimizerStateBytes, true}};
    if (e.headWeight > 0 && head > 0)
        r.items.push_back({"head", e.headWeight, head, true});
    if (reference && e.referenceWeights > 0) {
        int64_t bytes = 0;
        for (const auto& p : reference->parameters())
            bytes += static_cast<int64_t>(p.nbytes());
        r.items.push_back({"reference", e.referenceWeights, bytes, true});
    }
    // activations: the tensors alive after the forward pass beyond those after loading, against
    // the same moment of the estimate (saved activations, the log-softmax the loss saved and the
    // log-probabilities), not backward's start nor, with checkpointing, the recomputed block
    r.items.push_back({"activations", e.activationsStored + e.logitsSaved + e.logprobs,
                       measured.afterForward - measured.afterLoad, false});
    r.items.push_back({"total", e.total, measured.peak, false});
    return r;
}

}  // namespace tb
