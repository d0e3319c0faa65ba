// Folders written whole or not at all: files go into a hidden staging folder beside the target,
// which is swapped in at the end, so a kill at any instant leaves the old folder or the new one.
#pragma once

#include "util/file_util.h"  // syncPath

#include <functional>
#include <string>

namespace tb {

// Whether `name` (an entry of a folder) is staging work "<prefix>*.tmp-PID" or "<prefix>*.old-PID"
// whose writer is gone: no process with that id, or this process (an attempt that failed earlier).
bool isStaleWork(const std::string& name, const std::string& prefix);

// Puts the folder `staging` in place of `target` (a sibling): an atomic exchange where the file
// system has one, else the old folder moved aside first and put back if the rename fails; then the
// old folder is deleted and the parent flushed. `staging` must be flushed by the caller.
void replaceFolder(const std::string& staging, const std::string& target);

// Throws tb::Error unless `target` is new, or a folder whose entries are all files that
// `written(name)` accepts (what the writer that replaces it writes), so replacing it whole never
// sweeps away a folder of the user's other files. `what` names the writer ("export").
void checkReplaceableFolder(const std::string& target,
                            const std::function<bool(const std::string&)>& written,
                            const std::string& what);

// A folder written through path() and swapped in by commit() in place of `target` (which may exist:
// its whole content is replaced). Without commit() (an error on the way) the staging folder is
// removed; staging folders of writers that were killed are removed when the next one starts.
class StagedFolder {
public:
    explicit StagedFolder(const std::string& target);
    ~StagedFolder();
    StagedFolder(const StagedFolder&) = delete;
    StagedFolder& operator=(const StagedFolder&) = delete;
    const std::string& path() const { return m_staging; }  // where the files go
    void commit();  // flushes every file and the folder, then replaceFolder

private:
    std::string m_target, m_staging;
    bool m_committed = false;
};

}  // namespace tb
