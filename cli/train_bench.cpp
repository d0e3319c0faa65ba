// The training benchmark: AdamW steps on random tokens, timed after a warm-up, with FLOP
// accounting.
#include "cli/train_bench.h"

#include "cli/op_profile.h"

#include "memory/measure.h"
#include "model/model_impl.h"
#include "model/registry.h"
#include "model/safetensors.h"
#include "peft/peft.h"
#include "train/losses.h"
#include "train/optimizer.h"
#include "train/setup.h"
#include "util/error.h"

#include <chrono>
#include <cmath>

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;

// Dense FLOP/s of fp32 matmuls large enough to reach this machine's peak.
double measureMatmulPeak(const torch::Device& device)
{
    torch::NoGradGuard g;
    const int64_t n = 1024;
    auto a = torch::randn({n, n}, torch::TensorOptions().device(device));
    auto b = torch::randn({n, n}, torch::TensorOptions().device(device));
    auto c = torch::mm(a, b);  // warm-up
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
        const auto t0 = Clock::now();
        for (int i = 0; i < 4; ++i)
            c = torch::mm(a, b);
        (void)c.sum().item<float>();  // synchronise
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::max(best, 4 * 2.0 * n * n * n / s);
    }
    return best;
}

}  // namespace

TrainBenchResult benchTrain(const TrainBenchOptions& o)
{
    if (o.method != "full" && o.method != "lora" && o.method != "adapter" && o.method != "prompt")
        fail("bench train: --method must be full, lora, adapter or prompt");
    if (!(o.lr > 0))
        fail("bench train: --lr must be positive");
    if (o.batch < 1 || o.seq < 2 || o.steps < 1)
        fail("bench train: --batch, --seq and --steps must be positive (seq >= 2)");
    TrainBenchResult r;
    r.model = o.model;
    r.method = o.method;
    const torch::Device device = parseTorchDevice(o.device);
    r.device = device.str();
    r.threads = at::get_num_threads();
    r.residentStartBytes = residentBytes();
    installCpuMemoryTracking();
    r.peakMatmulFlops = measureMatmulPeak(device);

    std::shared_ptr<CausalLM> model;
    if (o.quant.enabled() && o.method == "full")
        fail("bench train: --quant needs a frozen base (--method lora, adapter or prompt)");
    if (o.model == "random-llama-25m") {
        model = createCausalLM(randomLlama25mConfig());
        model->setQuantization(o.quant);
        model->initRandom(0, torch::kFloat32, device);
    } else {
        model = createCausalLM(loadModelConfig(o.model));
        model->setQuantization(o.quant);
        model->loadWeights(Checkpoint::open(o.model), torch::kFloat32, device);
    }
    const ModelConfig& c = model->config();
    if (o.seq > c.maxPositions)
        fail("bench train: --seq ", o.seq, " exceeds the model's context (", c.maxPositions, ")");
    TrainConfig run;
    run.method = o.method == "full"      ? Method::Full
                 : o.method == "lora"    ? Method::Lora
                 : o.method == "adapter" ? Method::Adapter
                                         : Method::Prompt;
    applyMethod(*model, run, nullptr, 0);
    model->setGradientCheckpointing(o.gradientCheckpointing);
    model->train();
    if (o.precision != "fp32" && o.precision != "bf16")
        fail("bench train: --precision must be fp32 or bf16");
    // The step's loss is the supervised full loss: the fused head loss.
    const PrecisionChoice precision = chooseMixedPrecision(
        *model, device, o.precision == "bf16" ? Precision::Bf16 : Precision::Fp32, true);
    r.precisionPath = precision.path;
    auto params = trainableParameters(*model);
    // LoRA's A matrices drawn again, in parameter order, from seed 1 (U(-1/sqrt(in), 1/sqrt(in)),
    // the distribution of the first draw), so a peer that draws its own the same way trains the
    // same numbers and its losses can be compared step by step.
    {
        torch::NoGradGuard noGrad;
        torch::manual_seed(1);
        for (auto& [name, p] : params)
            if (name.size() > 13 && name.compare(name.size() - 13, 13, "lora_A.weight") == 0)
                p.uniform_(-1.0 / std::sqrt(static_cast<double>(p.size(1))),
                           1.0 / std::sqrt(static_cast<double>(p.size(1))));
    }
    Optimizer optimizer(params, std::vector<bool>(params.size(), true), run.optim);
    r.parameters = model->parameterCount();
    r.trainableParameters = countTrainable(*model);

    torch::manual_seed(0);
    auto ids = torch::randint(3, c.vocabSize, {o.batch, o.seq},
                              torch::TensorOptions().dtype(torch::kInt64).device(device));
    auto labels = ids.roll(-1, 1);
    const double tokens = static_cast<double>(o.batch) * o.seq;
    // Wall-clock seconds of each phase, summed over the timed steps (the CPU runs operators as they
    // are called; a CUDA device is synchronised at each phase's end).
    double phase[4] = {0, 0, 0, 0};
    bool timing = false;
    auto mark = [&](Clock::time_point& since, int index) {
        if (!timing)
            return;
        if (device.is_cuda())
            torch::cuda::synchronize(device.index() < 0 ? 0 : device.index());
        const auto now = Clock::now();
        phase[index] += std::chrono::duration<double>(now - since).count();
        since = now;
    };
    auto stepOnce = [&] {
        const auto start = Clock::now();
        auto since = start;
        torch::Tensor loss;
        {
            auto autocast = precisionAutocast(device, precision.precision);
            loss = o.unfusedLoss ? tokenLoss(model->forward(ids, nullptr), labels, tokens)
                                 : batchLoss(*model, ids, labels, tokens, run);  // as training does
        }
        mark(since, 0);
        loss.backward();
        mark(since, 1);
        r.gradientBytes = 0;
        for (const auto& [name, p] : params)
            if (p.grad().defined())
                r.gradientBytes += static_cast<int64_t>(p.grad().nbytes());
        if (o.clipNorm > 0)
            optimizer.clipGradNorm(o.clipNorm);
        mark(since, 2);
        optimizer.step(o.lr);
        optimizer.zeroGrad();
        r.losses.push_back(loss.item<double>());
        mark(since, 3);
        if (timing)
            r.stepSeconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    };
    for (int i = 0; i < o.warmupSteps; ++i)
        stepOnce();
    resetMemoryPeak(r.device);
    r.residentPeakBeforeStepsBytes = residentPeakBytes();
    const bool residentReset = resetResidentPeak();
    timing = true;
    if (o.profile)
        startOpProfile();
    const auto t0 = Clock::now();
    for (int i = 0; i < o.steps; ++i)
        stepOnce();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (o.profile)
        r.ops = stopOpProfile(o.steps);
    r.forwardSeconds = phase[0] / o.steps;
    r.backwardSeconds = phase[1] / o.steps;
    r.clipSeconds = phase[2] / o.steps;
    r.optimizerSeconds = phase[3] / o.steps;
    r.residentPeakStepsBytes = residentReset ? residentPeakBytes() : 0;
    r.secondsPerStep = seconds / o.steps;
    r.tokensPerSecond = tokens * o.steps / seconds;

    // Matmul FLOPs per token: 2 per weight forward; backward 2 per weight for input gradients and,
    // where the weight trains, 2 more for its gradient (full: 6N, frozen base: 4N). Attention
    // scores and values add 4 * layers * seq * q_dim forward, twice that backward (causal masking
    // not discounted). Embedding lookups cost no matmul: an untied input table (and GPT-2's
    // positions) is left out; a tied table is counted once, as the head.
    const double lookups =
        (c.tieWordEmbeddings ? 0.0 : static_cast<double>(c.vocabSize) * c.hiddenSize) +
        (c.architecture == Architecture::Gpt2 ? static_cast<double>(c.maxPositions) * c.hiddenSize
                                              : 0.0);
    const double n = static_cast<double>(r.parameters) - lookups;
    const double attention = 4.0 * c.numLayers * o.seq * c.numHeads * c.headDim;
    r.modelFlopsPerToken = (o.method == "full" ? 6.0 : 4.0) * n + 3.0 * attention;
    r.achievedFlops = r.modelFlopsPerToken * r.tokensPerSecond;
    r.mfu = r.achievedFlops / r.peakMatmulFlops;
    r.peakMemoryBytes = memorySnapshot(r.device).peak;
    r.weightsBytes = model->weightBytes();
    for (const auto& blob : optimizer.stateBlobs())
        r.optimizerStateBytes += static_cast<int64_t>(blob.bytes.size());
    return r;
}

}  // namespace tb
