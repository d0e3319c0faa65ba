// Locating the bundled data, the user's data folder and Tunebench's own programs, for source-tree
// builds and installs.
#include "util/paths.h"

#include "util/error.h"
#include "util/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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
        // <prefix>/bin/tunebench, <prefix>/lib/tunebench/tunebench-engine
        const auto bin = exe.parent_path();
        for (const auto& prefix : {bin.parent_path(), bin.parent_path().parent_path()}) {
            const auto installed = prefix / "share" / "tunebench" / "datasets";
            if (isDirectory(installed.string()))
                return installed.string();
        }
    }
    return TB_SOURCE_DATA_DIR;
}

std::string userDataDir()
{
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg == '/')
        return joinPath(xdg, "tunebench");
    const char* home = std::getenv("HOME");
    return joinPath(joinPath(home && *home ? home : ".", ".local/share"), "tunebench");
}

std::string userDataDirProblem()
{
    const std::string dir = userDataDir();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return cat("cannot create the data folder ", dir, ": ", ec.message());
    const std::string probe = joinPath(dir, cat(".write-test-", getpid()));
    const int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0)
        return cat("cannot write in the data folder ", dir, ": ", std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
    return "";
}

std::string userOutputPath(const std::string& path)
{
    namespace fs = std::filesystem;
    const fs::path data(dataDir());
    if (path.empty() || data.empty() || data == fs::path(TB_SOURCE_DATA_DIR))
        return path;
    const fs::path share = data.lexically_normal().parent_path();  // .../share/tunebench
    const fs::path inside = fs::path(path).lexically_normal().lexically_relative(share);
    if (inside.empty() || *inside.begin() == "..")
        return path;
    return (fs::path(userDataDir()) / inside).lexically_normal().string();
}

std::string bundledModelDir()
{
    return joinPath(joinPath(dataDir(), "models"), "stories260k");
}

std::string installedProgram(const std::string& name, std::string* looked)
{
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        return {};
    const auto bin = self.parent_path();
    for (const auto& candidate : {bin / name, bin.parent_path() / "lib" / "tunebench" / name}) {
        if (looked)
            *looked += (looked->empty() ? "" : " and ") + candidate.string();
        if (access(candidate.c_str(), X_OK) == 0)
            return candidate.string();
    }
    return {};
}

}  // namespace tb
