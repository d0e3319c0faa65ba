// tunebench-studio: starts the studio itself (tunebench-studio-app, which links LibTorch) and
// relays its output, signals and exit status. The launcher loads no LibTorch (its libraries: Qt and
// the C++ runtime), so when the studio cannot start (a LibTorch library missing or broken, the
// program itself missing) it still runs and says what is wrong in one dialog, and in one line on
// stderr, where a desktop user would otherwise see nothing at all. In --screenshot(s) mode, or with
// TB_NO_DIALOG set, only the line.
#include "util/paths.h"

#include <QApplication>
#include <QMessageBox>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

volatile sig_atomic_t g_child = 0;

void forward(int signal)
{
    if (g_child > 0)
        kill(pid_t(g_child), signal);
}

// The line of `output` that says why a program did not start: the dynamic loader's "error while
// loading shared libraries" or the exec failure the child reports; empty when there is none.
std::string startFailure(const std::string& output)
{
    size_t begin = 0;
    while (begin < output.size()) {
        size_t end = output.find('\n', begin);
        if (end == std::string::npos)
            end = output.size();
        const std::string line = output.substr(begin, end - begin);
        if (line.find("error while loading shared libraries") != std::string::npos ||
            line.rfind("cannot execute ", 0) == 0)
            return line;
        begin = end + 1;
    }
    return {};
}

int report(int argc, char** argv, const std::string& problem)
{
    std::fprintf(stderr, "tunebench-studio: cannot start the studio: %s\n", problem.c_str());
    bool unattended = std::getenv("TB_NO_DIALOG") != nullptr;
    for (int i = 1; i < argc; ++i)
        unattended = unattended || std::strncmp(argv[i], "--screenshot", 12) == 0;
    if (!unattended) {
        QApplication app(argc, argv);
        QMessageBox::critical(
            nullptr, QStringLiteral("Tunebench Studio"),
            QStringLiteral("Tunebench Studio cannot start:\n\n%1\n\nReinstall the tunebench "
                           "package (sudo apt install --reinstall tunebench).")
                .arg(QString::fromStdString(problem)));
    }
    return 1;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string looked;
    const std::string app = tb::installedProgram("tunebench-studio-app", &looked);
    if (app.empty())
        return report(argc, argv,
                      "tunebench-studio-app is not installed (looked for " + looked + ")");

    int errPipe[2];
    if (pipe2(errPipe, O_CLOEXEC) != 0)
        return report(argc, argv, std::string("pipe: ") + std::strerror(errno));
    const pid_t child = fork();
    if (child < 0)
        return report(argc, argv, std::string("fork: ") + std::strerror(errno));
    if (child == 0) {
        dup2(errPipe[1], STDERR_FILENO);  // dup2 clears close-on-exec on the copy
        argv[0] = const_cast<char*>(app.c_str());
        execv(app.c_str(), argv);
        std::fprintf(stderr, "cannot execute %s: %s\n", app.c_str(), std::strerror(errno));
        _exit(127);
    }
    close(errPipe[1]);
    g_child = child;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        std::signal(s, forward);

    // Relay the studio's stderr as it comes, keeping its start for the diagnosis.
    std::string head;
    char buffer[4096];
    for (;;) {
        const ssize_t n = read(errPipe[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (write(STDERR_FILENO, buffer, size_t(n)) < 0) {
            // stderr closed: keep reading so that the studio never blocks on a full pipe
        }
        if (head.size() < 16384)
            head.append(buffer, size_t(n));
    }
    close(errPipe[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    const int code = WEXITSTATUS(status);
    if (code == 127) {
        if (const std::string why = startFailure(head); !why.empty())
            return report(argc, argv, why);
    }
    return code;
}
