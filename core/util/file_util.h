// Small file helpers shared by core: whole-file reads and atomic writes (temp file + fsync +
// rename).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tb {

// Reads a whole file; throws tb::Error naming the path when it cannot.
std::string readFile(const std::string& path);

// Writes bytes to path atomically: a crash leaves either the old file or the new one, never a torn
// one.
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Flushes a file, or a folder's entries, to disk; throws tb::Error naming the path.
void syncPath(const std::string& path, bool directory);
// After a rename into `path`'s folder: flushes the folder's entries, so a power cut cannot undo
// the rename (best effort: a file system that cannot flush a folder is left as it is).
void syncParentFolder(const std::string& path);

// The same for bytes written in pieces (buffered): a temp file beside `path` that commit() flushes
// to disk and renames over it; without commit() (an error on the way) it is removed.
class AtomicFileWriter {
public:
    explicit AtomicFileWriter(const std::string& path);
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
    void write(std::string_view bytes);
    void commit();

private:
    void flush();
    void writeAll(std::string_view bytes);
    static constexpr size_t kBuffer = size_t(1) << 20;
    std::string m_path, m_tmp, m_buffer;
    int m_fd = -1;
};

// Removes "PATH.tmp.PID" files (AtomicFileWriter's, the GGUF writer's) whose writer is gone: a
// process killed mid-write leaves its temporary, gigabytes for a model, and the next write of PATH
// clears it. A temporary of a live process, or one written in the last two minutes, is kept.
void removeStaleTemporaries(const std::string& path);
// Whether process `pid` is gone (no such process here; a pid in another PID namespace, which this
// process cannot see, also reads as gone: callers that can, check the file's age too).
bool processGone(long pid);

// Creates a folder and its parents (nothing when it exists); throws tb::Error naming it.
void makeDirectories(const std::string& path);
bool fileExists(const std::string& path);
bool isDirectory(const std::string& path);
std::string joinPath(const std::string& dir, const std::string& name);

}  // namespace tb
