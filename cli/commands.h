// The subcommands of the tunebench command line, one file each (cli/<name>_command.cpp), and the
// option helpers they share. Each returns the process exit status and throws tb::Error on bad
// input.
#pragma once

#include "cli/args.h"

#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace tb {

struct LoadOptions;

std::string modelArg(const Args& args);     // --model, else the bundled stories260k folder
LoadOptions loadOptions(const Args& args);  // --dtype, --device
// argv (without the program name) with every command's flags (cli/front.cpp).
Args parseCommandLine(const std::vector<std::string>& argv);
// The one error boundary: runs the command; a tb::Error or other exception becomes one line on err
// ("tunebench: ...") and exit status 1.
int guarded(std::ostream& err, const std::function<int()>& command);

int cmdInfo(const Args& args, std::ostream& out);
int cmdTokenize(const Args& args, std::ostream& out);
int cmdGenerate(const Args& args, std::ostream& out);
int cmdConvert(const Args& args, std::ostream& out, std::ostream& err);
int cmdBench(const Args& args, std::ostream& out);
// `bench dequant` (cli/quant_bench.cpp): the CUDA dequantisation kernels against the LibTorch
// path, checked and timed; exits 1 when a check fails.
int cmdBenchDequant(const Args& args, std::ostream& out);
int cmdTrain(const Args& args, std::ostream& out, std::ostream& err);
int cmdExport(const Args& args, std::ostream& out, std::ostream& err);
// Flags it reads: json, explain, grad-checkpointing (give them to Args as flags).
int cmdEstimate(const Args& args, std::ostream& out);
// argv[1] is "render"; reads the flag add-generation-prompt.
int cmdTemplate(const Args& args, std::ostream& out);
// `eval`, `eval score`, `eval compare`, `eval suite`; evalCommandFlags() are the flags they read.
// `eval suite` exits 2 when the gate fails.
int cmdEval(const Args& args, std::ostream& out, std::ostream& err);
const std::set<std::string>& evalCommandFlags();
// `eval blind` (a scorecard's two systems into a blind comparison set) and `eval pairs` (the
// preference pairs of the verdicts, JSONL; --summary: win rates and kappa), cli/eval_blind.cpp.
int cmdEvalBlind(const Args& args, std::ostream& out);
int cmdEvalPairs(const Args& args, std::ostream& out);
// `reward score` (cli/reward_command.cpp): a reward-model run's scores for the answers of a
// JSONL file; reads the flag json.
int cmdReward(const Args& args, std::ostream& out, std::ostream& err);
// argv[1] is the subcommand; dataCommandFlags() are the flags its subcommands read (merge them into
// Args').
int cmdData(const Args& args, std::ostream& out, std::ostream& err);
// The data subcommands that run a model, in the engine only (cli/data_generate.cpp): `data synth`
// and `data pairs rank STORE generate PROMPT`. isModelDataCommand (cli/data_util.cpp) tells them.
bool isModelDataCommand(const Args& args);
int cmdDataGenerate(const Args& args, std::ostream& out, std::ostream& err);
const std::set<std::string>& dataCommandFlags();
extern const char* const kDataUsage;
// `data render --packed` (cli/data_packed.cpp): the bins packed training makes of a store's
// records.
int cmdRenderPacked(const Args& args, std::ostream& out);

}  // namespace tb
