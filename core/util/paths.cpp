// Locating the bundled data folder for source-tree builds and installs.
#include "util/paths.h"

#include "util/file_util.h"

#include <cstdlib>
#include <filesystem>

#ifndef TB_SOURCE_DATA_DIR
#define TB_SOURCE_DATA_DIR ""
#endif

namespace tb {

std::string dataDir()
{
    if (const char* env = std::getenv("TUNEBENCH_DATA_DIR"); env && *env)
        return env;
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto installed = exe.parent_path().parent_path() / "share" / "tunebench" / "datasets";
        if (isDirectory(installed.string()))
            return installed.string();
    }
    return TB_SOURCE_DATA_DIR;
}

std::string bundledModelDir()
{
    return joinPath(joinPath(dataDir(), "models"), "stories260k");
}

}  // namespace tb
