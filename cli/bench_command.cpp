// `tunebench bench generate` and `tunebench bench train`: throughput on this machine.
#include "cli/commands.h"

#include "cli/train_bench.h"
#include "model/model.h"
#include "util/error.h"
#include "util/paths.h"
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

namespace tb {

using nlohmann::json;

namespace {

json benchOne(const std::string& name, const Model& model, int promptTokens, int newTokens,
              int repeats)
{
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(3,
                                                static_cast<int32_t>(model.config().vocabSize) - 1);
    std::vector<int32_t> prompt(static_cast<size_t>(promptTokens));
    for (auto& id : prompt)
        id = pick(rng);
    GenerateOptions o;
    o.greedy = true;
    o.stopAtEos = false;
    o.maxNewTokens = newTokens;
    model.generate(prompt, o);  // warm-up: first-call allocations and kernel selection
    std::vector<double> prefill, decode;
    for (int i = 0; i < repeats; ++i) {
        auto r = model.generate(prompt, o);
        prefill.push_back(promptTokens / r.prefillSeconds);
        decode.push_back(static_cast<double>(r.tokens.size()) / r.decodeSeconds);
    }
    std::sort(prefill.begin(), prefill.end());
    std::sort(decode.begin(), decode.end());
    return json{{"model", name},
                {"parameters", model.parameterCount()},
                {"device", model.device()},
                {"prompt_tokens", promptTokens},
                {"new_tokens", newTokens},
                {"prefill_tokens_per_s", prefill[prefill.size() / 2]},
                {"decode_tokens_per_s", decode[decode.size() / 2]}};
}

int cmdBenchTrain(const Args& args, std::ostream& out)
{
    args.allowOnly(
        {"model", "method", "batch", "seq", "steps", "warmup", "device", "precision", "json"});
    TrainBenchOptions o;
    o.model = args.value("model", bundledModelDir());
    o.method = args.value("method", "lora");
    o.batch = static_cast<int>(args.integer("batch", 4));
    o.seq = static_cast<int>(args.integer("seq", 128));
    o.steps = static_cast<int>(args.integer("steps", 10));
    o.warmupSteps = static_cast<int>(args.integer("warmup", 2));
    o.device = args.value("device", "cpu");
    o.precision = args.value("precision", "fp32");
    TrainBenchResult r = benchTrain(o);
    json j = {{"model", r.model},
              {"method", r.method},
              {"device", r.device},
              {"threads", r.threads},
              {"parameters", r.parameters},
              {"trainable_parameters", r.trainableParameters},
              {"batch", o.batch},
              {"seq", o.seq},
              {"tokens_per_s", r.tokensPerSecond},
              {"seconds_per_step", r.secondsPerStep},
              {"model_flops_per_token", r.modelFlopsPerToken},
              {"achieved_flops", r.achievedFlops},
              {"peak_matmul_flops", r.peakMatmulFlops},
              {"mfu", r.mfu},
              {"peak_memory_bytes", r.peakMemoryBytes},
              {"weights_bytes", r.weightsBytes},
              {"gradient_bytes", r.gradientBytes},
              {"optimizer_state_bytes", r.optimizerStateBytes}};
    if (args.flag("json")) {
        out << j.dump() << "\n";
        return 0;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s, %s (%lld of %lld parameters train), batch %d x seq %d on %s (%d threads):\n"
                  "  %.0f tokens/s, %.3f s/step, %.2f GFLOP/s = %.1f%% of the measured matmul peak "
                  "(%.1f GFLOP/s), "
                  "peak memory %.0f MiB\n",
                  r.model.c_str(), r.method.c_str(), static_cast<long long>(r.trainableParameters),
                  static_cast<long long>(r.parameters), o.batch, o.seq, r.device.c_str(), r.threads,
                  r.tokensPerSecond, r.secondsPerStep, r.achievedFlops / 1e9, 100 * r.mfu,
                  r.peakMatmulFlops / 1e9, static_cast<double>(r.peakMemoryBytes) / (1 << 20));
    out << line;
    return 0;
}

}  // namespace

int cmdBench(const Args& args, std::ostream& out)
{
    if (args.positional().size() >= 2 && args.positional()[1] == "train")
        return cmdBenchTrain(args, out);
    args.allowOnly({"model", "prompt-tokens", "new-tokens", "repeats", "dtype", "device", "json"});
    if (args.positional().size() < 2 || args.positional()[1] != "generate")
        fail("bench: unknown benchmark (supported: bench generate, bench train)");
    const int promptTokens = static_cast<int>(args.integer("prompt-tokens", 128));
    const int newTokens = static_cast<int>(args.integer("new-tokens", 128));
    const int repeats = static_cast<int>(args.integer("repeats", 5));
    if (promptTokens <= 0 || newTokens <= 0 || repeats <= 0)
        fail("bench: --prompt-tokens, --new-tokens and --repeats must be positive");
    json results = json::array();
    if (args.has("model")) {
        auto model = Model::load(args.value("model"), loadOptions(args));
        results.push_back(benchOne(args.value("model"), *model, promptTokens, newTokens, repeats));
    } else {
        auto bundled = Model::load(bundledModelDir(), loadOptions(args));
        results.push_back(benchOne("stories260k", *bundled, promptTokens, newTokens, repeats));
        auto random = Model::createRandom(randomLlama25mConfig(), loadOptions(args), 0);
        results.push_back(benchOne("random-llama-25m", *random, promptTokens, newTokens, repeats));
    }
    if (args.flag("json")) {
        out << json{{"results", results}}.dump() << "\n";
        return 0;
    }
    for (const auto& r : results)
        out << r["model"].get<std::string>() << " (" << r["parameters"].get<int64_t>()
            << " parameters, " << r["device"].get<std::string>() << "): prefill "
            << static_cast<int>(r["prefill_tokens_per_s"].get<double>()) << " tokens/s, decode "
            << static_cast<int>(r["decode_tokens_per_s"].get<double>()) << " tokens/s\n";
    return 0;
}

}  // namespace tb
