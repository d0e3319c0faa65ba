// The tunebench front: usage, the options every command shares, the one error boundary, and the
// commands that run without LibTorch (see cli/cli.h).
#include "cli/cli.h"

#include "cli/commands.h"
#include "model/model.h"
#include "util/error.h"
#include "util/paths.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <unistd.h>

namespace tb {
namespace {

const char* const kUsage = R"(usage: tunebench <command> [options]

commands:
  info      --model PATH [--json]                      architecture and parameter count (PATH: folder or config.json;
                                                       a .gguf file: its header, tensor types, adapter or model)
  tokenize  --model DIR --text T [--json]              token ids of a text
  generate  --model DIR --prompt T [--max-new-tokens N] [--greedy] [--temperature X] [--top-k K]
            [--top-p P] [--repetition-penalty R] [--seed S] [--stop STR] [--dtype fp32|bf16|fp16]
            [--device cpu|cuda|auto] [--run RUN_DIR] [--chat [--template model|FAMILY]] [--json]
                                                       continue a prompt, streaming tokens to stdout
                                                       (--chat: the prompt is a user message in the
                                                       chat template; a run's own template by default)
                                                       (--run: the fine-tuned model of a training run)
  convert llama2c --checkpoint F --tokenizer F --out DIR   llama2.c model -> Hugging Face folder
  convert gguf --model DIR --out FILE.gguf [--dtype f32|f16|bf16|q8_0] [--json]
                                                       Hugging Face folder -> GGUF file for llama.cpp
  bench generate [--model DIR] [--prompt-tokens N] [--new-tokens N] [--repeats R] [--json]
                                                       prefill and decode tokens/s
  bench generate --prompts FILE.jsonl [--model DIR] [--batch B] [--new-tokens N] [--repeats R] [--json]
                                                       batched greedy generation, tokens/s (a line:
                                                       {"ids": [...]} or {"text": "..."})
  bench train [--model DIR|random-llama-25m] [--method lora|full|adapter|prompt] [--batch B] [--seq S] [--steps N]
            [--precision fp32|bf16] [--lr LR] [--clip NORM] [--unfused-loss] [--grad-checkpointing]
            [--profile] [--json]
                                                       training tokens/s, MFU, peak memory, time per
                                                       phase (--profile: per LibTorch operator, products by shape)
  bench dequant [--rows R] [--cols C] [--repeats N] [--json]
                                                       CUDA only: the dequantisation kernels checked
                                                       against the LibTorch path, and both timed
  train     --config RUN.json [key=value ...] [--json] fine-tune (full, partial, lora, adapter, prompt)
  train     --resume RUN_DIR [--json]                  continue a run from its newest complete checkpoint
  train     --nproc N [--master-port P] [--master-addr A] --config RUN.json|--resume RUN_DIR ...
                                                       N data-parallel ranks on this machine, their
                                                       output as one run (docs/distributed.md)
  export    --run RUN_DIR --format peft|merged --out DIR [--force] [--json]
                                                       PEFT adapter or merged Hugging Face folder
  export    --run RUN_DIR --format gguf --out FILE.gguf [--dtype f32|f16|bf16|q8_0] [--force] [--json]
                                                       merged model as one GGUF file for llama.cpp
  export    --run RUN_DIR --format gguf-lora|gguf-base --out FILE.gguf [--dtype ...] [--json]
                                                       LoRA adapter for llama.cpp (--lora) / its base model
  estimate  --model PATH --method M [options, docs/memory.md] [--explain] [--json]  memory per GPU before launch
  eval      --run RUN | --model DIR --data FILE | --store S --snapshot ID --metrics LIST
            [--max-new-tokens N] [--greedy | --temperature X --top-k K --top-p P --seed S] [--batch B]
            [--limit N] [--name NAME] [--glossary FILE] [--json]
                                                       answers for held-out prompts, scored with 95%
                                                       intervals: RUN/eval/NAME/results.json
  eval score --predictions FILE.jsonl --metrics LIST [--json]   score predictions made elsewhere
  eval compare --runs R1,R2 [--base DIR] [--base-quant none,nf4 [--base-quant-double]] [--data FILE]
            --metrics LIST [--out DIR] [--json]        base vs tuned scorecard (scorecard.json + .md);
                                                       --base-quant: the base once per format (QLoRA)
  eval suite --run RUN --suite FILE.jsonl [--no-base] [--json]   regression suite; exit 2 when a case
                                                       that passed on the base model or is required fails
  eval blind --store S --scorecard DIR [--a 0 --b 1] [--set NAME]   two systems' answers as a blind
                                                       comparison set (judged on the Evaluate page)
  eval pairs --store S [--set NAME] [--summary] [--json]   the verdicts' preference pairs (JSONL), or
                                                       win rates with intervals and kappa per annotator pair
  reward    score --run RUN_DIR --data FILE.jsonl [--device D] [--json]
                                                       a reward model's scores: pairs (chosen vs rejected,
                                                       accuracy) or rows of a prompt and its responses
  template  render --model DIR --messages FILE.json [--add-generation-prompt] [--template model|FAMILY]
            [--train-on all|last] [--json]             a conversation as the chat template renders it:
                                                       text, token ids, loss mask
  data      <subcommand> --store FILE [options] [--json]   dataset store: import, curate, review, snapshot
            (tunebench data help lists the subcommands; docs/data.md)
Without --model the bundled stories260k model is used. Errors: one line on stderr, exit status 1.
)";

bool isHelp(const std::vector<std::string>& argv)
{
    return argv.empty() || argv[0] == "help" || argv[0] == "--help" || argv[0] == "-h";
}

// `tunebench COMMAND ... --help` (or -h): that command's part of the usage.
bool asksCommandHelp(const std::vector<std::string>& argv)
{
    return argv.size() > 1 && std::any_of(argv.begin() + 1, argv.end(), [](const std::string& a) {
               return a == "--help" || a == "-h";
           });
}

// The usage lines of one command: each entry that starts with it, and the lines that go on it.
std::string commandUsage(const std::string& command)
{
    std::istringstream lines(kUsage);
    std::string line, out;
    bool inEntry = false;
    while (std::getline(lines, line)) {
        if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') {
            const size_t end = line.find(' ', 2);
            inEntry = line.substr(2, end == std::string::npos ? end : end - 2) == command;
        } else if (line.rfind("   ", 0) != 0) {
            inEntry = false;  // not an entry's continuation
        }
        if (inEntry)
            out += line + "\n";
    }
    if (out.empty())
        return "";
    static const std::set<std::string> bundledByDefault{"info", "tokenize", "generate", "bench",
                                                        "template"};
    if (bundledByDefault.count(command))
        out += "Without --model the bundled stories260k model is used.\n";
    return "usage: tunebench " + command + " [options]\n\n" + out;
}

}  // namespace

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

// eval's flags live here, with the parser, so that the front parses an eval command line too.
const std::set<std::string>& evalCommandFlags()
{
    static const std::set<std::string> flags{"rouge-stemmer", "no-base", "summary",
                                             "base-quant-double"};
    return flags;
}

Args parseCommandLine(const std::vector<std::string>& argv)
{
    std::set<std::string> flags{
        "json",    "greedy",       "no-special",  "force",   "grad-checkpointing",
        "packing", "quant-double", "quant-head",  "explain", "add-generation-prompt",
        "chat",    "profile",      "unfused-loss"};
    flags.insert(dataCommandFlags().begin(), dataCommandFlags().end());
    flags.insert(evalCommandFlags().begin(), evalCommandFlags().end());
    return Args(argv, flags);
}

int guarded(std::ostream& err, const std::function<int()>& command)
{
    try {
        return command();
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

bool needsEngine(const std::vector<std::string>& argv)
{
    static const std::set<std::string> engine{"generate", "convert", "bench", "train",
                                              "export",   "eval",    "reward"};
    if (isHelp(argv) || asksCommandHelp(argv))
        return false;
    if (engine.count(argv[0]))
        return true;
    if (argv[0] != "data")
        return false;
    try {
        return isModelDataCommand(parseCommandLine(argv));
    } catch (const std::exception&) {
        return false;  // the front reports the parse error
    }
}

int runFront(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err)
{
    if (isHelp(argv)) {
        out << kUsage;
        return argv.empty() ? 1 : 0;
    }
    if (asksCommandHelp(argv)) {
        if (argv[0] == "data")  // data and data pairs have usages of their own
            return runFront(argv.size() > 1 && argv[1] == "pairs"
                                ? std::vector<std::string>{"data", "pairs", "help"}
                                : std::vector<std::string>{"data", "help"},
                            out, err);
        const std::string usage = commandUsage(argv[0]);
        if (usage.empty()) {
            err << "tunebench: unknown command '" << argv[0] << "' (see tunebench help)\n";
            return 1;
        }
        out << usage;
        return 0;
    }
    return guarded(err, [&] {
        const Args args = parseCommandLine(argv);
        const std::string& cmd = argv[0];
        if (cmd == "info")
            return cmdInfo(args, out);
        if (cmd == "tokenize")
            return cmdTokenize(args, out);
        if (cmd == "estimate")
            return cmdEstimate(args, out);
        if (cmd == "data")
            return cmdData(args, out, err);
        if (cmd == "template")
            return cmdTemplate(args, out);
        err << "tunebench: unknown command '" << cmd << "' (see tunebench help)\n";
        return 1;
    });
}

std::string enginePath()
{
    return installedProgram("tunebench-engine");
}

int execEngine(char** argv, std::ostream& err)
{
    const std::string path = enginePath();
    if (path.empty()) {
        err << "tunebench: this command needs tunebench-engine, which is not installed next to "
               "this program nor in ../lib/tunebench/ (reinstall the tunebench package)\n";
        return 1;
    }
    execv(path.c_str(), argv);
    err << "tunebench: cannot run " << path << ": " << std::strerror(errno) << "\n";
    return 1;
}

}  // namespace tb
