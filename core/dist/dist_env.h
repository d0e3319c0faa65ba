// Where this process stands in a data-parallel run, from the launchers' standard environment
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT): what
// `tunebench train --nproc`, torchrun, srun (through the CLI's adoption) and Kubernetes set.
// Torch-free.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace tb {

struct DistEnv {
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
    std::string masterAddr = "127.0.0.1";
    int masterPort = 29500;
    int timeoutSeconds =
        0;  // TB_DIST_TIMEOUT (the launcher's --timeout); 0: the run's dist.timeout_s
};

// nullopt when RANK is unset (a single process). Throws tb::Error naming the variable when one is
// malformed or inconsistent (RANK >= WORLD_SIZE, a missing MASTER_PORT with WORLD_SIZE > 1, ...).
std::optional<DistEnv> distEnvFromEnvironment();
// The same from a given environment (tests).
std::optional<DistEnv> distEnvFrom(const std::map<std::string, std::string>& env);

}  // namespace tb
