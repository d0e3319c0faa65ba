// The tunebench command line: info, tokenize, generate, convert (llama2c, gguf), bench generate.
#include "cli/cli.h"

#include "cli/args.h"
#include "cli/data_command.h"
#include "cli/estimate_command.h"
#include "export/export.h"
#include "export/gguf.h"
#include "model/config.h"
#include "model/llama2c.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "train/job.h"
#include "train/run_store.h"
#include "train/train_bench.h"
#include "train/tuned_model.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <random>

namespace tb {
namespace {

using nlohmann::json;

const char* kUsage = R"(usage: tunebench <command> [options]

commands:
  info      --model PATH [--json]                      architecture and parameter count (PATH: folder or config.json;
                                                       a .gguf file: its header, tensor types, adapter or model)
  tokenize  --model DIR --text T [--json]              token ids of a text
  generate  --model DIR --prompt T [--max-new-tokens N] [--greedy] [--temperature X] [--top-k K]
            [--top-p P] [--repetition-penalty R] [--seed S] [--stop STR] [--dtype fp32|bf16|fp16]
            [--device cpu|cuda|auto] [--run RUN_DIR] [--json]
                                                       continue a prompt, streaming tokens to stdout
                                                       (--run: the fine-tuned model of a training run)
  convert llama2c --checkpoint F --tokenizer F --out DIR   llama2.c model -> Hugging Face folder
  convert gguf --model DIR --out FILE.gguf [--dtype f32|f16|bf16|q8_0] [--json]
                                                       Hugging Face folder -> GGUF file for llama.cpp
  bench generate [--model DIR] [--prompt-tokens N] [--new-tokens N] [--repeats R] [--json]
                                                       prefill and decode tokens/s
  bench train [--model DIR|random-llama-25m] [--method lora|full|adapter|prompt] [--batch B] [--seq S] [--steps N]
            [--precision fp32|bf16] [--json]          training tokens/s, MFU, peak memory
  train     --config RUN.json [key=value ...] [--json] fine-tune (full, partial, lora, adapter, prompt)
  train     --resume RUN_DIR [--json]                  continue a run from its newest complete checkpoint
  export    --run RUN_DIR --format peft|merged --out DIR [--force] [--json]
                                                       PEFT adapter or merged Hugging Face folder
  export    --run RUN_DIR --format gguf --out FILE.gguf [--dtype f32|f16|bf16|q8_0] [--force] [--json]
                                                       merged model as one GGUF file for llama.cpp
  export    --run RUN_DIR --format gguf-lora|gguf-base --out FILE.gguf [--dtype ...] [--json]
                                                       LoRA adapter for llama.cpp (--lora) / its base model
  estimate  --model PATH --method M [options, docs/memory.md] [--explain] [--json]  memory per GPU before launch
  data      <subcommand> --store FILE [options] [--json]   dataset store: import, curate, review, snapshot
            (tunebench data help lists the subcommands; docs/data.md)
Without --model the bundled stories260k model is used. Errors: one line on stderr, exit status 1.
)";

std::string modelArg(const Args& args)
{
    return args.value("model", bundledModelDir());
}

LoadOptions loadOptions(const Args& args)
{
    LoadOptions o;
    o.dtype = args.value("dtype", "fp32");
    o.device = args.value("device", "auto");
    return o;
}

// A GGUF file's header: what llama.cpp will see (architecture, whether it is an adapter, tensor types).
int ggufInfo(const std::string& path, bool asJson, std::ostream& out)
{
    const GgufSummary s = readGgufSummary(path);
    auto meta = [&s](const std::string& key) {
        const auto it = s.metadata.find(key);
        return it == s.metadata.end() ? std::string() : it->second;
    };
    const std::map<uint32_t, std::string> names = {{0, "F32"}, {1, "F16"}, {8, "Q8_0"}, {30, "BF16"}};
    std::map<std::string, int64_t> types;
    for (const GgufTensorInfo& t : s.tensors) {
        const auto it = names.find(t.type);
        ++types[it == names.end() ? "type " + std::to_string(t.type) : it->second];
    }
    const std::string kind = meta("general.type").empty() ? "model" : meta("general.type");
    if (asJson) {
        json tensors = json::array();
        for (const GgufTensorInfo& t : s.tensors)
            tensors.push_back({{"name", t.name}, {"dims", t.dims}, {"type", t.type}});
        out << json{{"gguf_version", s.version}, {"bytes", s.fileSize}, {"architecture", meta("general.architecture")},
                    {"name", meta("general.name")}, {"type", kind}, {"tensor_count", s.tensors.size()},
                    {"tensor_types", types}, {"metadata", s.metadata}, {"tensors", tensors}}
                   .dump()
            << "\n";
        return 0;
    }
    out << "GGUF          v" << s.version << ", " << s.fileSize << " bytes\n"
        << "architecture  " << meta("general.architecture") << "\n"
        << "name          " << meta("general.name") << "\n"
        << "type          " << kind << "\n"
        << "tensors       " << s.tensors.size() << " (";
    bool first = true;
    for (const auto& [type, count] : types) {
        out << (first ? "" : ", ") << count << " " << type;
        first = false;
    }
    out << ")\n"
        << "metadata      " << s.metadata.size() << " keys\n";
    return 0;
}

int cmdInfo(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "json"});
    if (args.has("model") && args.value("model").ends_with(".gguf"))
        return ggufInfo(args.value("model"), args.flag("json"), out);
    ModelConfig c = loadModelConfig(modelArg(args));
    const int64_t params = parameterCount(c);
    if (args.flag("json")) {
        out << json{{"architecture", c.modelType}, {"parameters", params}, {"layers", c.numLayers},
                    {"hidden_size", c.hiddenSize}, {"vocab_size", c.vocabSize}, {"dtype", c.torchDtype}}
                   .dump()
            << "\n";
        return 0;
    }
    out << "architecture  " << c.modelType << "\n"
        << "parameters    " << params << "\n"
        << "layers        " << c.numLayers << "\n"
        << "hidden size   " << c.hiddenSize << "\n"
        << "heads         " << c.numHeads << " (kv " << c.numKvHeads << ", head dim " << c.headDim << ")\n"
        << "vocab size    " << c.vocabSize << "\n"
        << "context       " << c.maxPositions << "\n"
        << "dtype         " << c.torchDtype << "\n"
        << "tied head     " << (c.tieWordEmbeddings ? "yes" : "no") << "\n";
    return 0;
}

int cmdTokenize(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "text", "json", "no-special"});
    auto tok = loadTokenizer(modelArg(args));
    auto ids = tok->encode(args.value("text"), !args.flag("no-special"));
    if (args.flag("json")) {
        out << json{{"ids", ids}}.dump() << "\n";
        return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i)
        out << ids[i] << "\t" << tok->idToPiece(ids[i]) << "\n";
    return 0;
}

GenerateOptions generateOptions(const Args& args)
{
    GenerateOptions o;
    o.maxNewTokens = static_cast<int>(args.integer("max-new-tokens", 64));
    o.greedy = args.flag("greedy");
    o.temperature = args.number("temperature", 1.0);
    o.topK = static_cast<int>(args.integer("top-k", 0));
    o.topP = args.number("top-p", 1.0);
    o.repetitionPenalty = args.number("repetition-penalty", 1.0);
    o.seed = static_cast<uint64_t>(args.integer("seed", 0));
    if (args.has("stop"))
        o.stopStrings.push_back(args.value("stop"));
    if (o.maxNewTokens < 0)
        fail("option --max-new-tokens must not be negative");
    if (o.topP <= 0.0 || o.topP > 1.0)
        fail("option --top-p must be in (0, 1]");
    if (o.repetitionPenalty <= 0.0)
        fail("option --repetition-penalty must be positive");
    return o;
}

int cmdGenerate(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "run", "prompt", "max-new-tokens", "greedy", "temperature", "top-k", "top-p",
                    "repetition-penalty", "seed", "stop", "dtype", "device", "json"});
    const GenerateOptions options = generateOptions(args);
    std::unique_ptr<Model> model;
    std::string dir = modelArg(args);
    if (args.has("run")) {
        // The fine-tuned model of a run: its base model's tokenizer, its newest checkpoint's weights.
        if (args.has("model"))
            fail("generate: give --model or --run, not both");
        dir = RunStore(args.value("run")).readRunInfo().at("config").at("model").get<std::string>();
        model = loadTunedModel(args.value("run"), loadOptions(args));
    } else {
        model = Model::load(dir, loadOptions(args));
    }
    auto tok = loadTokenizer(dir);
    auto prompt = tok->encode(args.value("prompt"), true);
    const bool asJson = args.flag("json");
    TokenCallback stream;
    if (!asJson) {
        out << args.value("prompt") << std::flush;
        stream = [&out](int32_t, const std::string& text) {
            out << text << std::flush;
            return true;
        };
    }
    GenerateResult r = model->generate(prompt, options, tok.get(), stream);
    if (asJson) {
        out << json{{"prompt_ids", prompt}, {"generated_ids", r.tokens}, {"text", r.text},
                    {"stop_reason", r.stopReason}}
                   .dump()
            << "\n";
    } else {
        out << "\n";
    }
    return 0;
}

int cmdConvert(const Args& args, std::ostream& out, std::ostream& err)
{
    if (args.positional().size() >= 2 && args.positional()[1] == "gguf") {
        args.allowOnly({"model", "out", "dtype", "json"});
        ExportOptions o;
        o.outDir = args.value("out");
        if (args.has("dtype"))
            o.dtype = args.value("dtype");
        const ExportReport r = exportModelGguf(args.value("model"), o);
        if (args.flag("json")) {
            out << json{{"out", r.outDir}, {"dtype", o.dtype}, {"tensors", r.tensors}, {"bytes", r.bytes},
                        {"warnings", r.warnings}}
                       .dump()
                << "\n";
            return 0;
        }
        for (const std::string& w : r.warnings)
            err << "note: " << w << "\n";
        out << "wrote " << r.outDir << " from " << r.checkpoint << " (" << r.tensors << " tensors, " << o.dtype << ", "
            << r.bytes << " bytes)\n";
        return 0;
    }
    args.allowOnly({"checkpoint", "tokenizer", "out", "json"});
    if (args.positional().size() < 2 || args.positional()[1] != "llama2c")
        fail("convert: unknown source format (supported: convert llama2c --checkpoint F --tokenizer F --out DIR; "
             "convert gguf --model DIR --out FILE.gguf)");
    auto r = convertLlama2c(args.value("checkpoint"), args.value("tokenizer"), args.value("out"));
    if (args.flag("json")) {
        out << json{{"out", args.value("out")}, {"parameters", r.parameters}, {"layers", r.layers},
                    {"hidden_size", r.dim}, {"vocab_size", r.vocab}}
                   .dump()
            << "\n";
    } else {
        out << "wrote " << args.value("out") << ": llama, " << r.layers << " layers, dim " << r.dim << ", vocab "
            << r.vocab << ", " << r.parameters << " parameters\n";
    }
    return 0;
}

json benchOne(const std::string& name, const Model& model, int promptTokens, int newTokens, int repeats)
{
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> pick(3, static_cast<int32_t>(model.config().vocabSize) - 1);
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
    args.allowOnly({"model", "method", "batch", "seq", "steps", "warmup", "device", "precision", "json"});
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
    json j = {{"model", r.model}, {"method", r.method}, {"device", r.device}, {"threads", r.threads},
              {"parameters", r.parameters}, {"trainable_parameters", r.trainableParameters},
              {"batch", o.batch}, {"seq", o.seq}, {"tokens_per_s", r.tokensPerSecond},
              {"seconds_per_step", r.secondsPerStep}, {"model_flops_per_token", r.modelFlopsPerToken},
              {"achieved_flops", r.achievedFlops}, {"peak_matmul_flops", r.peakMatmulFlops}, {"mfu", r.mfu},
              {"peak_memory_bytes", r.peakMemoryBytes}, {"weights_bytes", r.weightsBytes},
              {"gradient_bytes", r.gradientBytes}, {"optimizer_state_bytes", r.optimizerStateBytes}};
    if (args.flag("json")) {
        out << j.dump() << "\n";
        return 0;
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s, %s (%lld of %lld parameters train), batch %d x seq %d on %s (%d threads):\n"
                  "  %.0f tokens/s, %.3f s/step, %.2f GFLOP/s = %.1f%% of the measured matmul peak (%.1f GFLOP/s), "
                  "peak memory %.0f MiB\n",
                  r.model.c_str(), r.method.c_str(), static_cast<long long>(r.trainableParameters),
                  static_cast<long long>(r.parameters), o.batch, o.seq, r.device.c_str(), r.threads, r.tokensPerSecond,
                  r.secondsPerStep, r.achievedFlops / 1e9, 100 * r.mfu, r.peakMatmulFlops / 1e9,
                  static_cast<double>(r.peakMemoryBytes) / (1 << 20));
    out << line;
    return 0;
}

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
        out << r["model"].get<std::string>() << " (" << r["parameters"].get<int64_t>() << " parameters, "
            << r["device"].get<std::string>() << "): prefill " << static_cast<int>(r["prefill_tokens_per_s"].get<double>())
            << " tokens/s, decode " << static_cast<int>(r["decode_tokens_per_s"].get<double>()) << " tokens/s\n";
    return 0;
}

// Prints progress; on a divergence diagnosis it stops the job (a terminal cannot answer the pause).
class CliEvents : public JobEvents {
public:
    CliEvents(std::ostream& out, std::ostream& err, int64_t logEvery) : m_out(out), m_err(err), m_logEvery(logEvery) {}
    void onStep(const StepMetrics& m) override
    {
        if (m_logEvery <= 0 || (m.step % m_logEvery != 0 && m.step != m.totalSteps))
            return;
        char line[256];
        std::snprintf(line, sizeof line,
                      "step %" PRId64 "/%" PRId64 "  epoch %.2f  loss %.4f  lr %.3g  grad norm %.3f  %.0f tok/s  "
                      "tensors %.1f MiB (peak %.1f)",
                      m.step, m.totalSteps, m.epoch, m.loss, m.lr, m.gradNorm, m.tokensPerSecond,
                      static_cast<double>(m.memoryCurrent) / (1 << 20), static_cast<double>(m.memoryPeak) / (1 << 20));
        m_out << line << std::endl;
    }
    void onEval(const EvalMetrics& e) override
    {
        char line[256];
        std::snprintf(line, sizeof line, "eval step %" PRId64 ": val loss %.4f (perplexity %.2f)", e.step, e.valLoss,
                      e.valPerplexity);
        m_out << line;
        if (e.generalLoss && e.generalLossBase)
            m_out << "  general holdout " << *e.generalLoss << " (base " << *e.generalLossBase << ")";
        m_out << std::endl;
    }
    void onCheckpoint(int64_t step, const std::string& dir) override { m_out << "saved " << dir << std::endl; }
    void onMemoryReport(const MemoryReport& r) override
    {
        m_out << "memory after the first step (estimated / measured, MiB):";
        for (const auto& item : r.items) {
            char part[128];
            std::snprintf(part, sizeof part, "  %s %.1f / %.1f", item.key.c_str(),
                          static_cast<double>(item.estimated) / (1 << 20), static_cast<double>(item.measured) / (1 << 20));
            m_out << part;
        }
        m_out << std::endl;
    }
    void onWarning(const std::string& message) override { m_err << "tunebench: warning: " << message << std::endl; }
    void onDiverged(const Diagnosis& d) override
    {
        m_err << "tunebench: training paused at step " << d.step << ": " << d.what << ". Likely cause: " << d.cause
              << ". Try: " << d.advice << "." << std::endl;
        diverged = true;
        if (job)
            job->stop();
    }
    TrainingJob* job = nullptr;
    bool diverged = false;

private:
    std::ostream& m_out;
    std::ostream& m_err;
    int64_t m_logEvery;
};

std::atomic<TrainingJob*> g_activeJob{nullptr};

int cmdTrain(const Args& args, std::ostream& out, std::ostream& err)
{
    args.allowOnly({"config", "resume", "json"});
    TrainConfig config;
    std::string resumeDir;
    std::vector<std::string> overrides;
    for (size_t i = 1; i < args.positional().size(); ++i) {
        if (args.positional()[i].find('=') == std::string::npos)
            fail("train: unexpected argument '", args.positional()[i], "' (overrides are key=value)");
        overrides.push_back(args.positional()[i]);
    }
    if (args.has("resume")) {
        if (!overrides.empty() || args.has("config"))
            fail("train: --resume takes the run's own config (no --config or key=value)");
        resumeDir = args.value("resume");
        RunStore store(resumeDir);
        config = parseTrainConfig(store.readRunInfo().at("config"), joinPath(resumeDir, "run.json"));
    } else {
        config = loadTrainConfig(args.value("config"), overrides);
    }
    CliEvents events(out, err, config.logEvery);
    TrainingJob job(config, &events, resumeDir);
    events.job = &job;
    g_activeJob = &job;
    auto previous = std::signal(SIGINT, [](int) {
        if (TrainingJob* j = g_activeJob.load())
            j->stop();  // atomics only: the loop ends after the current step and saves a checkpoint
    });
    job.runHere();
    std::signal(SIGINT, previous);
    g_activeJob = nullptr;
    if (job.state() == JobState::Failed)
        fail(job.error());
    const TrainSummary& s = job.summary();
    if (args.flag("json")) {
        out << json{{"run_dir", s.runDir},
                    {"steps", s.steps},
                    {"initial_loss", s.initialLoss},
                    {"final_loss", s.finalLoss},
                    {"val_loss", s.valLoss ? json(*s.valLoss) : json(nullptr)},
                    {"trainable_parameters", s.trainableParameters},
                    {"tokens_per_second", s.tokensPerSecond},
                    {"peak_memory_bytes", s.peakMemoryBytes}}
                   .dump()
            << "\n";
    } else {
        out << "run " << s.runDir << ": " << s.steps << " steps, loss " << s.initialLoss << " -> " << s.finalLoss;
        if (s.valLoss)
            out << ", val loss " << *s.valLoss;
        out << ", " << s.trainableParameters << " of " << s.totalParameters << " parameters trained\n";
    }
    return events.diverged ? 2 : 0;
}

int cmdExport(const Args& args, std::ostream& out, std::ostream& err)
{
    args.allowOnly({"run", "format", "out", "force", "json", "dtype"});
    ExportOptions o;
    o.format = args.value("format");
    o.outDir = args.value("out");
    o.force = args.flag("force");
    if (args.has("dtype")) {
        if (!o.format.starts_with("gguf"))
            fail("export: --dtype applies to the GGUF formats only");
        o.dtype = args.value("dtype");
    }
    ExportReport r = exportRun(args.value("run"), o);
    if (args.flag("json")) {
        json j{{"out", r.outDir}, {"format", r.format}, {"checkpoint", r.checkpoint}, {"files", r.files},
               {"tensors", r.tensors}, {"max_abs_change", r.maxAbsChange}};
        if (r.format.starts_with("gguf")) {
            j["dtype"] = o.dtype;
            j["bytes"] = r.bytes;
            j["warnings"] = r.warnings;
            if (r.lossTokens > 0)
                j["quantization"] = {{"loss_fp32", r.lossFp32}, {"loss_q8_0", r.lossQuantized}, {"tokens", r.lossTokens}};
        }
        out << j.dump() << "\n";
        return 0;
    }
    for (const std::string& w : r.warnings)
        err << "note: " << w << "\n";
    out << "exported " << r.checkpoint << " as " << r.format << " to " << r.outDir << " (" << r.tensors << " tensors";
    if (r.format.starts_with("gguf"))
        out << ", " << o.dtype << ", " << r.bytes << " bytes";
    out << ")\n";
    if (r.lossTokens > 0)
        out << "Q8_0 costs: loss " << r.lossFp32 << " (fp32) -> " << r.lossQuantized << " (Q8_0) on "
            << r.lossTokens << " validation tokens\n";
    if (r.format == "gguf-lora")
        out << "use it with the run's base model: tunebench export --run " << args.value("run")
            << " --format gguf-base --out base.gguf; llama-cli -m base.gguf --lora " << r.outDir << "\n";
    return 0;
}

} // namespace

int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err)
{
    if (argv.empty() || argv[0] == "help" || argv[0] == "--help" || argv[0] == "-h") {
        out << kUsage;
        return argv.empty() ? 1 : 0;
    }
    try {
        std::set<std::string> flags{"json", "greedy", "no-special", "force", "grad-checkpointing", "explain"};
        flags.insert(dataCommandFlags().begin(), dataCommandFlags().end());
        Args args(argv, flags);
        const std::string& cmd = argv[0];
        if (cmd == "info")
            return cmdInfo(args, out);
        if (cmd == "tokenize")
            return cmdTokenize(args, out);
        if (cmd == "generate")
            return cmdGenerate(args, out);
        if (cmd == "convert")
            return cmdConvert(args, out, err);
        if (cmd == "bench")
            return cmdBench(args, out);
        if (cmd == "train")
            return cmdTrain(args, out, err);
        if (cmd == "export")
            return cmdExport(args, out, err);
        if (cmd == "estimate")
            return cmdEstimate(args, out);
        if (cmd == "data")
            return cmdData(args, out, err);
        err << "tunebench: unknown command '" << cmd << "' (see tunebench help)\n";
        return 1;
    } catch (const Error& e) {
        err << "tunebench: " << e.what() << "\n";
    } catch (const std::exception& e) {
        // LibTorch errors carry a backtrace after the first line: keep the message only.
        std::string message = e.what();
        message = message.substr(0, message.find('\n'));
        err << "tunebench: " << message << "\n";
    }
    return 1;
}

} // namespace tb
