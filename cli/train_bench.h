// Training throughput benchmark: tokens/s, model FLOP utilisation against a matmul peak measured on
// this machine, and peak memory, for one method on one model with random tokens. Torch-free header.
#pragma once

#include "quant/quant_format.h"
#include <cstdint>

#include <string>
#include <vector>

namespace tb {

struct TrainBenchOptions {
    std::string model;  // model folder, or "random-llama-25m" (built in, random weights)
    std::string method =
        "lora";  // full | lora (r=8, alpha 16, default targets) | adapter | prompt (defaults)
    int batch = 4;
    int seq = 128;
    int warmupSteps = 2;
    int steps = 10;
    std::string device = "cpu";
    std::string precision = "fp32";  // fp32 | bf16
    // The frozen base quantised (not with full): QLoRA is lora with nf4 and double quantisation.
    QuantOptions quant = {};
    // Record every LibTorch operator of the timed steps (its self time, without the operators it
    // calls) and the time of each phase of a step; slows the steps a little.
    bool profile = false;
    double clipNorm = 1.0;  // gradient clipping (0: none, as llm.c's CPU trainer)
    double lr = 1e-4;       // AdamW's constant learning rate
    // The head and cross-entropy as two autograd steps through the full logits (what training did
    // before the fused head loss), to measure what the fusion takes back.
    bool unfusedLoss = false;
    // Every block checkpointed: forward keeps the blocks' inputs, backward recomputes one block
    // at a time (what `gradient_checkpointing: true` trains with).
    bool gradientCheckpointing = false;
};

// One operator of a profiled run: self time summed over the timed steps, and calls.
struct OpTime {
    std::string name;
    double selfSeconds = 0;
    int64_t calls = 0;
};

struct TrainBenchResult {
    std::string model, method, device;
    std::string precisionPath;  // the path the precision took (core's chooseMixedPrecision)
    int64_t parameters = 0, trainableParameters = 0;
    double tokensPerSecond = 0;
    double secondsPerStep = 0;
    double modelFlopsPerToken = 0;  // forward + backward, see docs/benchmarks.md
    double achievedFlops = 0;       // FLOP/s
    double peakMatmulFlops = 0;     // FLOP/s of a large fp32 matmul measured just before
    double mfu = 0;                 // achieved / peak
    int64_t peakMemoryBytes =
        0;  // peak tensor memory during the timed steps (tracked CPU or CUDA allocated)
    // What the step holds, counted from the tensors themselves (bytes): all parameters, the
    // gradients after backward, and the optimizer's state.
    int64_t weightsBytes = 0, gradientBytes = 0, optimizerStateBytes = 0;
    // Resident memory of the process (bytes, the kernel's VmRSS/VmHWM): at the start (LibTorch
    // loaded, no model), its peak through loading and the warm-up, and its peak over the timed
    // steps alone (0 where the kernel's high-water mark cannot be reset).
    int64_t residentStartBytes = 0, residentPeakBeforeStepsBytes = 0, residentPeakStepsBytes = 0;
    int threads = 0;
    // Seconds per step spent in each phase (forward with the loss, backward, gradient clipping,
    // the optimizer step with zeroing the gradients), measured in every run.
    double forwardSeconds = 0, backwardSeconds = 0, clipSeconds = 0, optimizerSeconds = 0;
    std::vector<OpTime> ops;  // with profile: by self time, largest first, per step
    // The loss of every step, warm-up steps first: the same model, tokens and optimizer give the
    // same curve as a peer's (bench/train_peer.py compares them).
    std::vector<double> losses;
    std::vector<double> stepSeconds;  // wall-clock seconds of each timed step
};

TrainBenchResult benchTrain(const TrainBenchOptions& options);

}  // namespace tb
