// Reading and checking the launchers' environment variables.
#include "dist/dist_env.h"

#include "util/error.h"

#include <cerrno>
#include <cstdlib>

extern char** environ;

namespace tb {
namespace {

int integerVariable(const std::map<std::string, std::string>& env, const std::string& name,
                    int fallback, int min, int max)
{
    const auto it = env.find(name);
    if (it == env.end() || it->second.empty())
        return fallback;
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0' || v < min || v > max)
        fail("environment variable ", name, "='", it->second, "' is not an integer in ", min, "..",
             max);
    return static_cast<int>(v);
}

}  // namespace

std::optional<DistEnv> distEnvFrom(const std::map<std::string, std::string>& env)
{
    if (!env.count("RANK"))
        return std::nullopt;
    DistEnv d;
    d.worldSize = integerVariable(env, "WORLD_SIZE", 0, 1, 1 << 16);
    if (d.worldSize == 0)
        fail("environment variable RANK is set but WORLD_SIZE is not (a launched rank needs both)");
    d.rank = integerVariable(env, "RANK", 0, 0, d.worldSize - 1);
    d.localWorldSize = integerVariable(env, "LOCAL_WORLD_SIZE", d.worldSize, 1, d.worldSize);
    d.localRank =
        integerVariable(env, "LOCAL_RANK", d.rank % d.localWorldSize, 0, d.localWorldSize - 1);
    if (const auto it = env.find("MASTER_ADDR"); it != env.end() && !it->second.empty())
        d.masterAddr = it->second;
    else if (d.worldSize > 1)
        fail("environment variable MASTER_ADDR is not set (the address of rank 0's store)");
    if (d.worldSize > 1 && !env.count("MASTER_PORT"))
        fail("environment variable MASTER_PORT is not set (the port of rank 0's store)");
    d.masterPort = integerVariable(env, "MASTER_PORT", d.masterPort, 1, 65535);
    d.timeoutSeconds = integerVariable(env, "TB_DIST_TIMEOUT", 0, 0, 24 * 3600);
    return d;
}

std::optional<DistEnv> distEnvFromEnvironment()
{
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string kv(*e);
        const auto eq = kv.find('=');
        if (eq != std::string::npos)
            env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    return distEnvFrom(env);
}

}  // namespace tb
