// `tunebench train`: a run from a config (or resumed from its run directory), progress on the
// console.
#include "cli/commands.h"

#include "cli/console.h"
#include "cli/interrupt.h"
#include "cli/launch.h"
#include "train/job.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/file_util.h"
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>

namespace tb {

using nlohmann::json;

int cmdTrain(const Args& args, std::ostream& out, std::ostream& err)
{
    args.allowOnly({"config", "resume", "json", "nproc", "master-port", "master-addr"});
    if (args.has("nproc") || args.has("master-port") || args.has("master-addr"))
        return launchFromArgs(args, out, err);  // N ranks of this command (cli/launch.cpp)
    adoptSchedulerEnvironment();                // srun's SLURM_PROCID etc. as RANK etc.
    TrainConfig config;
    std::string resumeDir;
    std::vector<std::string> overrides;
    for (size_t i = 1; i < args.positional().size(); ++i) {
        if (args.positional()[i].find('=') == std::string::npos)
            fail("train: unexpected argument '", args.positional()[i],
                 "' (overrides are key=value)");
        overrides.push_back(args.positional()[i]);
    }
    if (args.has("resume")) {
        if (!overrides.empty() || args.has("config"))
            fail("train: --resume takes the run's own config (no --config or key=value)");
        resumeDir = args.value("resume");
        RunStore store(resumeDir);
        config =
            parseTrainConfig(store.readRunInfo().at("config"), joinPath(resumeDir, "run.json"));
    } else {
        config = loadTrainConfig(args.value("config"), overrides);
    }
    // Ranks other than 0 of a launched run report warnings and errors only: rank 0 speaks for it.
    const char* rank = std::getenv("RANK");
    std::ostringstream quiet;
    const bool speaks = !rank || std::string(rank) == "0";
    ConsoleEvents events(speaks ? out : quiet, err, config.logEvery);
    TrainingJob job(config, &events, resumeDir);
    events.job = &job;
    {
        InterruptGuard interrupt(job);
        job.runHere();
    }
    // Ctrl-C while the model loads: no step, no checkpoint; the interrupted command's status.
    if (job.state() == JobState::Failed && InterruptGuard::received() &&
        job.error().starts_with("stopped while loading")) {
        err << "tunebench: " << job.error() << "\n";
        return 130;
    }
    if (job.state() == JobState::Failed)
        fail(job.error());
    const TrainSummary& s = job.summary();
    // Stopped by this process's Ctrl-C: the shell's status for an interrupted command, so a script
    // tells a stopped run from a finished one. (A rank that stopped because another one was
    // interrupted exits 0, as external launchers read any other status as a failure.)
    const int status = events.diverged ? 2 : s.stopped && InterruptGuard::received() ? 130 : 0;
    if (!speaks)
        return status;
    if (args.flag("json")) {
        out << toJson(s).dump() << "\n";
    } else {
        out << "run " << s.runDir << ": ";
        if (s.stopped)
            out << "stopped after step " << s.steps
                << (s.steps > 0 ? " (checkpoint saved; continue with " : " (continue with ")
                << "tunebench train --resume " << s.runDir << "), ";
        out << s.steps << " steps, loss " << s.initialLoss << " -> " << s.finalLoss;
        if (s.valLoss)
            out << ", val loss " << *s.valLoss << " (step " << s.valLossStep << ")";
        out << ", " << s.trainableParameters << " of " << s.totalParameters
            << " parameters trained";
        if (s.stopPrompts > 0)
            out << ", stop rate " << (100 * s.stopStopped + s.stopPrompts / 2) / s.stopPrompts
                << "% (" << s.stopStopped << " of " << s.stopPrompts
                << " held-out answers end with a stop token)";
        out << "\n";
        if (s.packing)
            out << formatPacking(*s.packing) << "\n";
    }
    return status;
}

}  // namespace tb
