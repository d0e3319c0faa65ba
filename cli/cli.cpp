// The tunebench engine's command line: the commands the front (cli/front.cpp) hands over, with
// the front's own commands, usage and error boundary.
#include "cli/cli.h"

#include "cli/commands.h"

namespace tb {

int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err)
{
    if (!needsEngine(argv))
        return runFront(argv, out, err);
    return guarded(err, [&] {
        const Args args = parseCommandLine(argv);
        const std::string& cmd = argv[0];
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
        if (cmd == "eval")
            return cmdEval(args, out, err);
        if (cmd == "reward")
            return cmdReward(args, out, err);
        return cmdDataGenerate(args, out, err);  // needsEngine: the rest is a model's data command
    });
}

}  // namespace tb
