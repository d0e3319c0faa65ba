// The tunebench command line: info, tokenize, generate, convert llama2c, bench generate.
#include "cli/cli.h"

#include "cli/args.h"
#include "model/config.h"
#include "model/llama2c.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <random>

namespace tb {
namespace {

using nlohmann::json;

const char* kUsage = R"(usage: tunebench <command> [options]

commands:
  info      --model PATH [--json]                      architecture and parameter count (PATH: folder or config.json)
  tokenize  --model DIR --text T [--json]              token ids of a text
  generate  --model DIR --prompt T [--max-new-tokens N] [--greedy] [--temperature X] [--top-k K]
            [--top-p P] [--repetition-penalty R] [--seed S] [--stop STR] [--dtype fp32|bf16|fp16]
            [--device cpu|cuda|auto] [--json]           continue a prompt, streaming tokens to stdout
  convert llama2c --checkpoint F --tokenizer F --out DIR   llama2.c model -> Hugging Face folder
  bench generate [--model DIR] [--prompt-tokens N] [--new-tokens N] [--repeats R] [--json]
                                                       prefill and decode tokens/s
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

int cmdInfo(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "json"});
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
    args.allowOnly({"model", "prompt", "max-new-tokens", "greedy", "temperature", "top-k", "top-p",
                    "repetition-penalty", "seed", "stop", "dtype", "device", "json"});
    const std::string dir = modelArg(args);
    const GenerateOptions options = generateOptions(args);
    auto model = Model::load(dir, loadOptions(args));
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

int cmdConvert(const Args& args, std::ostream& out)
{
    args.allowOnly({"checkpoint", "tokenizer", "out", "json"});
    if (args.positional().size() < 2 || args.positional()[1] != "llama2c")
        fail("convert: unknown source format (supported: convert llama2c --checkpoint F --tokenizer F --out DIR)");
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

// A random Llama of about 25M parameters, the benchmark's mid-size model.
ModelConfig benchLlamaConfig()
{
    ModelConfig c;
    c.architecture = Architecture::Llama;
    c.modelType = "llama";
    c.sourcePath = "random-llama-25m";
    c.vocabSize = 32000;
    c.hiddenSize = 384;
    c.intermediateSize = 1024;
    c.numLayers = 8;
    c.numHeads = 6;
    c.numKvHeads = 6;
    c.headDim = 64;
    c.maxPositions = 2048;
    c.normEps = 1e-5;
    c.tieWordEmbeddings = true;
    return c;
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

int cmdBench(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "prompt-tokens", "new-tokens", "repeats", "dtype", "device", "json"});
    if (args.positional().size() < 2 || args.positional()[1] != "generate")
        fail("bench: unknown benchmark (supported: bench generate)");
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
        auto random = Model::createRandom(benchLlamaConfig(), loadOptions(args), 0);
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

} // namespace

int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err)
{
    if (argv.empty() || argv[0] == "help" || argv[0] == "--help" || argv[0] == "-h") {
        out << kUsage;
        return argv.empty() ? 1 : 0;
    }
    try {
        Args args(argv, {"json", "greedy", "no-special"});
        const std::string& cmd = argv[0];
        if (cmd == "info")
            return cmdInfo(args, out);
        if (cmd == "tokenize")
            return cmdTokenize(args, out);
        if (cmd == "generate")
            return cmdGenerate(args, out);
        if (cmd == "convert")
            return cmdConvert(args, out);
        if (cmd == "bench")
            return cmdBench(args, out);
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
