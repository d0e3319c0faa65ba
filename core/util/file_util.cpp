// Whole-file reads and atomic writes for core.
#include "util/file_util.h"

#include "util/error.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tb {

void syncPath(const std::string& path, bool directory)
{
    const int fd =
        ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        fail(path, ": cannot open to flush (", std::strerror(errno), ")");
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0)
        fail(path, ": cannot flush to disk (", std::strerror(err), ")");
}

void syncParentFolder(const std::string& path)
{
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    try {
        syncPath(parent.empty() ? std::string(".") : parent.string(), true);
    } catch (const Error&) {
        // best effort: the file is in place whether or not its folder could be flushed
    }
}

std::string readFile(const std::string& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        fail(path, ": is a folder, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, ": cannot open (", std::strerror(errno), ")");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        fail(path, ": read error");
    return bytes;
}

void removeStaleTemporaries(const std::string& path)
{
    namespace fs = std::filesystem;
    const fs::path target(path);
    const std::string prefix = target.filename().string() + ".tmp.";
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
            continue;
        const std::string digits = name.substr(prefix.size());
        if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
            continue;
        const long pid = std::stol(digits);
        if (pid <= 0 || pid == static_cast<long>(::getpid()))
            continue;  // this process's own is truncated and reused by its writer
        // Untouched for two minutes too: a writer in another PID namespace (a container on a
        // shared volume) has a pid this process cannot see, but its temporary keeps growing.
        const auto age = fs::file_time_type::clock::now() - it->last_write_time(ec);
        if (ec || age < std::chrono::minutes(2))
            continue;
        if (processGone(pid)) {
            std::error_code removed;
            fs::remove(it->path(), removed);
        }
    }
}

bool processGone(long pid)
{
    return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : m_path(path), m_tmp(path + ".tmp." + std::to_string(::getpid()))
{
    removeStaleTemporaries(path);
    m_fd = ::open(m_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (m_fd < 0)
        fail(m_tmp, ": cannot create (", std::strerror(errno), ")");
}

AtomicFileWriter::~AtomicFileWriter()
{
    if (m_fd >= 0) {
        ::close(m_fd);
        ::unlink(m_tmp.c_str());
    }
}

void AtomicFileWriter::write(std::string_view bytes)
{
    if (m_buffer.size() + bytes.size() < kBuffer) {
        m_buffer.append(bytes);
        return;
    }
    flush();
    writeAll(bytes);  // large pieces go straight to the file
}

void AtomicFileWriter::flush()
{
    writeAll(m_buffer);
    m_buffer.clear();
}

void AtomicFileWriter::writeAll(std::string_view bytes)
{
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(m_fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail(m_tmp, ": write failed (", std::strerror(errno), ")");
        }
        done += static_cast<size_t>(n);
    }
}

void AtomicFileWriter::commit()
{
    flush();
    const int fd = m_fd;
    m_fd = -1;
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(m_tmp.c_str());
        fail(m_tmp, ": cannot flush to disk");
    }
    if (::rename(m_tmp.c_str(), m_path.c_str()) != 0) {
        int err = errno;
        ::unlink(m_tmp.c_str());
        fail(m_path, ": cannot replace (", std::strerror(err), ")");
    }
    syncParentFolder(m_path);
}

void writeFileAtomic(const std::string& path, std::string_view bytes)
{
    AtomicFileWriter out(path);
    out.write(bytes);
    out.commit();
}

void makeDirectories(const std::string& path)
{
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec)
        fail(path, ": cannot create the folder (", ec.message(), ")");
}

bool fileExists(const std::string& path)
{
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool isDirectory(const std::string& path)
{
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
}

std::string joinPath(const std::string& dir, const std::string& name)
{
    return (std::filesystem::path(dir) / name).string();
}

}  // namespace tb
