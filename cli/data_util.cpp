// What the `data` subcommands share, and which of them need the engine.
#include "cli/data_util.h"

#include "cli/commands.h"
#include "data/store/store.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/utf8.h"

#include <cstdlib>

namespace tb {

std::string dataUser(const Args& args)
{
    if (args.has("who"))
        return args.value("who");
    // The login name, when it is text (the history and --json hold text).
    const char* user = std::getenv("USER");
    return user && *user && invalidUtf8At(user) < 0 ? user : "tunebench";
}

std::unique_ptr<DataStore> openExistingStore(const std::string& path, const std::string& hint)
{
    if (!fileExists(path))
        fail(path, ": no such dataset store", hint);
    return DataStore::open(path, false);
}

void printResult(std::ostream& out, const Args& args, const nlohmann::json& j,
                 const std::string& text)
{
    // Bytes that are not UTF-8 (a stored value from before arguments were checked, a reason
    // quoting a file's raw bytes) print as U+FFFD rather than failing after the work is done.
    if (args.flag("json"))
        out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
        out << text;
}

PairsCall pairsCallOf(const Args& args)
{
    PairsCall c;
    const auto& p = args.positional();
    size_t next = 3;
    if (args.has("store")) {
        c.store = args.value("store");
    } else {
        if (p.size() < 4)
            fail("data pairs ", p[2], ": missing the store (data pairs ", p[2], " STORE ...)");
        c.store = p[3];
        next = 4;
    }
    c.rest.assign(p.begin() + long(next), p.end());
    return c;
}

bool isModelDataCommand(const Args& args)
{
    const auto& p = args.positional();
    if (p.size() >= 2 && p[1] == "synth")
        return true;
    if (p.size() < 3 || p[1] != "pairs" || p[2] != "rank")
        return false;
    const size_t next = args.has("store") ? 3 : 4;
    return p.size() > next && p[next] == "generate";
}

}  // namespace tb
