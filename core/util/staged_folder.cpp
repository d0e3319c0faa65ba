// Folders written whole or not at all: staging beside the target, flush, swap, delete the old.
#include "util/staged_folder.h"

#include "util/error.h"
#include "util/file_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace tb {
namespace {

namespace fs = std::filesystem;

// "a/b/name" -> ("a/b", "name"), a trailing slash ignored.
std::pair<std::string, std::string> parentAndName(const std::string& target)
{
    fs::path p = fs::path(target).lexically_normal();
    if (!p.has_filename())
        p = p.parent_path();
    std::string parent = p.parent_path().string();
    return {parent.empty() ? "." : parent, p.filename().string()};
}

}  // namespace

bool isStaleWork(const std::string& name, const std::string& prefix)
{
    if (name.rfind(prefix, 0) != 0)
        return false;
    size_t mark = name.rfind(".tmp-");
    if (mark == std::string::npos)
        mark = name.rfind(".old-");
    if (mark == std::string::npos || mark + 1 < prefix.size())  // the prefix may end in its '.'
        return false;
    long pid = 0;
    try {
        pid = std::stol(name.substr(mark + 5));
    } catch (const std::exception&) {
        return true;
    }
    if (pid <= 0 || pid == static_cast<long>(::getpid()))
        return true;
    return processGone(pid);
}

void replaceFolder(const std::string& staging, const std::string& target)
{
    const auto [parent, name] = parentAndName(target);
    std::error_code ec;
    if (fileExists(target) &&
        ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
        fs::remove_all(staging, ec);  // now holds the replaced folder
    } else if (fileExists(target)) {
        // No atomic exchange on this file system: move the old folder aside, the new one in.
        const std::string old = joinPath(parent, "." + name + ".old-" + std::to_string(::getpid()));
        fs::remove_all(old, ec);
        if (::rename(target.c_str(), old.c_str()) != 0)
            fail(target, ": cannot move aside (", std::strerror(errno), ")");
        if (::rename(staging.c_str(), target.c_str()) != 0) {
            const int err = errno;
            ::rename(old.c_str(), target.c_str());  // put the previous folder back
            fail(target, ": cannot rename into place (", std::strerror(err), ")");
        }
        fs::remove_all(old, ec);
    } else if (::rename(staging.c_str(), target.c_str()) != 0) {
        fail(target, ": cannot rename into place (", std::strerror(errno), ")");
    }
    syncPath(parent, true);
}

void checkReplaceableFolder(const std::string& target,
                            const std::function<bool(const std::string&)>& written,
                            const std::string& what)
{
    if (!fileExists(target))
        return;
    if (!isDirectory(target))
        fail(what, ": ", target, " exists and is not a folder");
    for (const auto& entry : fs::directory_iterator(target)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || !written(name))
            fail(what, ": ", target, " holds '", name, "', which no ", what, " writes; the ", what,
                 " replaces its folder whole, so choose a new or empty folder (or one holding "
                 "only a previous ",
                 what, ")");
    }
}

StagedFolder::StagedFolder(const std::string& target) : m_target(target)
{
    const auto [parent, name] = parentAndName(target);
    if (name.empty() || name == "." || name == "..")
        fail(target, ": not a folder name to write");
    if (fileExists(target) && !isDirectory(target))
        fail(target, ": exists and is not a folder");
    makeDirectories(parent);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(parent, ec))
        if (isStaleWork(entry.path().filename().string(), "." + name + "."))
            fs::remove_all(entry.path(), ec);
    m_staging = joinPath(parent, "." + name + ".tmp-" + std::to_string(::getpid()));
    fs::remove_all(m_staging, ec);
    if (!fs::create_directory(m_staging, ec))
        fail(m_staging, ": cannot create (", ec ? ec.message() : "it exists", ")");
}

StagedFolder::~StagedFolder()
{
    if (!m_committed) {
        std::error_code ec;
        fs::remove_all(m_staging, ec);
    }
}

void StagedFolder::commit()
{
    for (const auto& entry : fs::recursive_directory_iterator(m_staging))
        syncPath(entry.path().string(), entry.is_directory());
    syncPath(m_staging, true);
    replaceFolder(m_staging, m_target);
    m_committed = true;
}

}  // namespace tb
