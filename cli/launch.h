// Starting the ranks of a data-parallel run on this machine (`tunebench train --nproc N`): N child
// processes of one command with torchrun's environment contract, their output merged into one
// stream, a failing rank or Ctrl-C passed on to the others; and adopting SLURM's environment.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tb {

class Args;

struct LaunchOptions {
    int nproc = 1;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 0;       // 0: pick a free one
    int timeoutSeconds = 60;  // the ranks' collective timeout, passed on as TB_DIST_TIMEOUT
    int threadsPerRank = 0;   // OMP_NUM_THREADS unless the parent has one; 0: max(1, cores / nproc)
};

// Runs argv (argv[0]: a path, or a name looked up on PATH) as ranks 0..nproc-1 and waits for all
// of them. Each child gets the parent's environment plus RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, GROUP_RANK=0, MASTER_ADDR, MASTER_PORT, TB_DIST_TIMEOUT and (when the parent
// has none) OMP_NUM_THREADS; stdin is /dev/null and each child leads its own process group, so
// the terminal's Ctrl-C reaches the launcher only, which forwards it (a second one: SIGTERM, a
// third: SIGKILL). Rank 0's stdout lines go to `out` as they are; every other line goes to `out`
// (stdout) or `err` (stderr) prefixed "[rank R] ". When a rank fails, the others get
// timeoutSeconds + 15 s to stop by themselves, then SIGTERM, then 5 s later SIGKILL.
// Returns 0 when every rank exits 0, else the first failing rank's status (128 + signal).
// Throws tb::Error before starting any child when the port is in use or the address cannot be
// bound, and when argv cannot be started; no child outlives the call.
int launchRanks(const std::vector<std::string>& argv, const LaunchOptions& options,
                std::ostream& out, std::ostream& err);

// `train --nproc N [--master-port P] [--master-addr A] ...`: this executable (/proc/self/exe) with
// the same arguments minus those three, through launchRanks. TB_DIST_TIMEOUT in the environment
// sets timeoutSeconds. Refuses when RANK is set (this process is already one rank).
int launchFromArgs(const Args& args, std::ostream& out, std::ostream& err);

// Under SLURM's srun (RANK unset, SLURM_PROCID set): sets RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE and GROUP_RANK from SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE (else this node's entry of SLURM_TASKS_PER_NODE) and SLURM_NODEID.
// MASTER_ADDR is the user's to export; a world of more than one rank without it is an error.
// Leaves the environment as it is when RANK is set or SLURM_PROCID is not. In a rank (RANK set),
// it also makes stdout line-buffered, so a launcher's pipe gets each progress line when written.
void adoptSchedulerEnvironment();

}  // namespace tb
