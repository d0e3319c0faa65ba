// `tunebench bench generate` (one prompt, or a file of prompts in batches) and `tunebench bench
// train`: throughput on this machine; `bench dequant` is cli/quant_bench.cpp.
#include "cli/commands.h"

#include "cli/train_bench.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"
#include "util/paths.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

namespace tb {

using nlohmann::json;

namespace {

json benchOne(const std::string& name, const Model& model, int promptTokens, int newTokens,
              int repeats)
{
    // Within the context, as bench train checks its --seq: a longer prompt measures nothing the
    // model is for, and a prefill of 10^5 tokens holds an attention matrix past any memory.
    const int64_t context = model.config().maxPositions;
    if (int64_t(promptTokens) + newTokens > context)
        fail("bench generate: --prompt-tokens ", promptTokens, " + --new-tokens ", newTokens,
             " exceed ", name, "'s context (", context, ")");
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

// The batched benchmark's prompts: one JSON object a line, {"ids": [...]} or {"text": "..."}
// (encoded with the model's tokenizer, special tokens as it adds them).
std::vector<std::vector<int32_t>> readPrompts(const std::string& path, const std::string& modelDir)
{
    std::vector<std::vector<int32_t>> prompts;
    std::unique_ptr<Tokenizer> tokenizer;
    std::istringstream lines(readFile(path));
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        checkJsonDepth(line, path + ":" + std::to_string(number));
        json j;
        try {
            j = json::parse(line);
        } catch (const json::exception& e) {
            fail(path, ":", number, ": not a JSON object (", e.what(), ")");
        }
        if (j.is_object() && j.contains("ids") && j["ids"].is_array()) {
            std::vector<int32_t> ids;
            for (const auto& id : j["ids"]) {
                // 1.5 became 1 and "a" a bare JSON type error: a prompt is token ids as integers.
                if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
                    id.get<int64_t>() > std::numeric_limits<int32_t>::max())
                    fail(path, ":", number, ": 'ids' holds ", id.dump(),
                         "; token ids are integers >= 0");
                ids.push_back(id.get<int32_t>());
            }
            if (ids.empty())
                fail(path, ":", number, ": 'ids' is empty; a prompt needs at least one token");
            prompts.push_back(std::move(ids));
        } else if (j.is_object() && j.contains("text") && j["text"].is_string()) {
            if (!tokenizer)
                tokenizer = loadTokenizer(modelDir);
            prompts.push_back(tokenizer->encode(j["text"].get<std::string>()));
        } else {
            fail(path, ":", number, ": expected {\"ids\": [...]} or {\"text\": \"...\"}");
        }
    }
    if (prompts.empty())
        fail(path, ": no prompts");
    return prompts;
}

// Greedy generation for every prompt of --prompts, --batch at a time, each row --new-tokens long
// (EOS does not stop it, so every side of a comparison does the same work): tokens/s over the
// wall time of the generateBatch calls, the median of --repeats passes after a short warm-up.
int cmdBenchBatch(const Args& args, std::ostream& out)
{
    args.allowOnly(
        {"model", "prompts", "batch", "new-tokens", "repeats", "dtype", "device", "json"});
    const std::string dir = modelArg(args);
    const auto batch = static_cast<size_t>(std::max<long long>(0, args.integer("batch", 8)));
    const int newTokens = static_cast<int>(args.integer("new-tokens", 128));
    const int repeats = static_cast<int>(args.integer("repeats", 1));
    if (batch == 0 || newTokens <= 0 || repeats <= 0)
        fail("bench: --batch, --new-tokens and --repeats must be positive");
    const auto prompts = readPrompts(args.value("prompts"), dir);
    auto model = Model::load(dir, loadOptions(args));
    GenerateOptions o;
    o.greedy = true;
    o.stopAtEos = false;
    o.maxNewTokens = newTokens;
    auto part = [&](size_t start) {
        return std::vector<std::vector<int32_t>>(
            prompts.begin() + static_cast<long>(start),
            prompts.begin() + static_cast<long>(std::min(prompts.size(), start + batch)));
    };
    GenerateOptions warmUp = o;
    warmUp.maxNewTokens = std::min(newTokens, 8);
    model->generateBatch(part(0), warmUp);  // first-call allocations and kernel selection
    struct Pass {
        double seconds = 0, prefillSeconds = 0, decodeSeconds = 0;
        std::vector<std::vector<int32_t>> tokens;
    };
    std::vector<Pass> passes;
    for (int r = 0; r < repeats; ++r) {
        Pass pass;
        for (size_t start = 0; start < prompts.size(); start += batch) {
            const auto t0 = std::chrono::steady_clock::now();
            auto results = model->generateBatch(part(start), o);
            pass.seconds +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            pass.prefillSeconds += results.front().prefillSeconds;
            pass.decodeSeconds += results.front().decodeSeconds;
            for (auto& result : results)
                pass.tokens.push_back(std::move(result.tokens));
        }
        passes.push_back(std::move(pass));
    }
    std::sort(passes.begin(), passes.end(),
              [](const Pass& a, const Pass& b) { return a.seconds < b.seconds; });
    const Pass& median = passes[passes.size() / 2];
    int64_t promptTokens = 0, generated = 0;
    for (const auto& p : prompts)
        promptTokens += static_cast<int64_t>(p.size());
    for (const auto& t : median.tokens)
        generated += static_cast<int64_t>(t.size());
    const double perSecond = static_cast<double>(generated) / median.seconds;
    if (args.flag("json")) {
        out << json{{"model", dir},
                    {"parameters", model->parameterCount()},
                    {"device", model->device()},
                    {"dtype", model->dtype()},
                    {"prompts", prompts.size()},
                    {"batch", batch},
                    {"new_tokens", newTokens},
                    {"prompt_tokens", promptTokens},
                    {"generated_tokens", generated},
                    {"seconds", median.seconds},
                    {"prefill_seconds", median.prefillSeconds},
                    {"decode_seconds", median.decodeSeconds},
                    {"tokens_per_s", perSecond},
                    {"tokens", median.tokens}}
                   .dump()
            << "\n";
        return 0;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s (%lld parameters, %s): %zu prompts (%lld tokens) in batches of %zu, %lld new "
                  "tokens in %.2f s: %.0f tokens/s (prefill %.2f s, decode %.2f s)\n",
                  dir.c_str(), static_cast<long long>(model->parameterCount()),
                  model->device().c_str(), prompts.size(), static_cast<long long>(promptTokens),
                  batch, static_cast<long long>(generated), median.seconds, perSecond,
                  median.prefillSeconds, median.decodeSeconds);
    out << line;
    return 0;
}

int cmdBenchTrain(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "method", "batch", "seq", "steps", "warmup", "device", "precision",
                    "quant", "quant-double", "json", "profile", "clip", "lr", "unfused-loss",
                    "grad-checkpointing"});
    TrainBenchOptions o;
    o.model = args.value("model", bundledModelDir());
    o.method = args.value("method", "lora");
    o.batch = static_cast<int>(args.integer("batch", 4));
    o.seq = static_cast<int>(args.integer("seq", 128));
    o.steps = static_cast<int>(args.integer("steps", 10));
    o.warmupSteps = static_cast<int>(args.integer("warmup", 2));
    o.device = args.value("device", "cpu");
    o.precision = args.value("precision", "fp32");
    const std::string quant = args.value("quant", "none");
    const auto kind = parseQuantKind(quant);
    if (!kind)
        fail("option --quant is '", quant, "' (allowed: none, nf4, fp4, int8)");
    o.quant.kind = *kind;
    o.quant.doubleQuant = args.flag("quant-double");
    o.profile = args.flag("profile");
    o.unfusedLoss = args.flag("unfused-loss");
    o.gradientCheckpointing = args.flag("grad-checkpointing");
    o.clipNorm = args.number("clip", 1.0);
    o.lr = args.number("lr", 1e-4);
    if (o.clipNorm < 0)
        fail("option --clip must be 0 (no clipping) or positive");
    TrainBenchResult r = benchTrain(o);
    json j = {{"model", r.model},
              {"method", r.method},
              {"quant", quantKindName(o.quant.kind)},
              {"quant_double", o.quant.doubleQuant},
              {"gradient_checkpointing", o.gradientCheckpointing},
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
              {"optimizer_state_bytes", r.optimizerStateBytes},
              {"resident_start_bytes", r.residentStartBytes},
              {"resident_peak_before_steps_bytes", r.residentPeakBeforeStepsBytes},
              {"resident_peak_steps_bytes", r.residentPeakStepsBytes},
              {"losses", r.losses},
              {"step_seconds", r.stepSeconds},
              {"precision_path", r.precisionPath},
              {"phase_seconds",
               {{"forward", r.forwardSeconds},
                {"backward", r.backwardSeconds},
                {"clip", r.clipSeconds},
                {"optimizer", r.optimizerSeconds}}}};
    if (o.profile) {
        json ops = json::array();
        for (const auto& op : r.ops)
            ops.push_back(
                {{"name", op.name}, {"self_seconds", op.selfSeconds}, {"calls", op.calls}});
        j["ops"] = ops;
    }
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
    out << line << "  precision: " << r.precisionPath << "\n";
    std::snprintf(
        line, sizeof line,
        "  a step: forward and loss %.1f ms, backward %.1f ms, clipping %.1f ms, optimizer "
        "%.1f ms\n",
        1e3 * r.forwardSeconds, 1e3 * r.backwardSeconds, 1e3 * r.clipSeconds,
        1e3 * r.optimizerSeconds);
    out << line;
    if (o.profile) {
        double total = 0;
        long long calls = 0;
        for (const auto& op : r.ops) {
            total += op.selfSeconds;
            calls += op.calls;
        }
        // On CUDA these are the host's times (launches included): against the step's time they
        // say whether the host or the device sets the pace.
        std::snprintf(
            line, sizeof line,
            "  operators by self time per step (%zu kinds, %lld calls, %.1f ms in all):\n",
            r.ops.size(), calls, 1e3 * total);
        out << line;
        for (size_t i = 0; i < r.ops.size() && i < 30; ++i) {
            const auto& op = r.ops[i];
            std::snprintf(line, sizeof line, "  %8.2f ms %5.1f%% %6lld calls  %s\n",
                          1e3 * op.selfSeconds, total > 0 ? 100 * op.selfSeconds / total : 0.0,
                          static_cast<long long>(op.calls), op.name.c_str());
            out << line;
        }
    }
    return 0;
}

}  // namespace

int cmdBench(const Args& args, std::ostream& out)
{
    if (args.positional().size() >= 2 && args.positional()[1] == "train")
        return cmdBenchTrain(args, out);
    if (args.positional().size() >= 2 && args.positional()[1] == "dequant")
        return cmdBenchDequant(args, out);
    if (args.positional().size() >= 2 && args.positional()[1] == "generate" && args.has("prompts"))
        return cmdBenchBatch(args, out);
    args.allowOnly({"model", "prompt-tokens", "new-tokens", "repeats", "dtype", "device", "json"});
    if (args.positional().size() < 2 || args.positional()[1] != "generate")
        fail("bench: unknown benchmark (supported: bench generate, bench train, bench dequant)");
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
