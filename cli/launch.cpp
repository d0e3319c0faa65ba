// The rank launcher of `tunebench train --nproc N` (POSIX: fork/exec, pipes, poll, process
// groups) and the adoption of SLURM's environment; see cli/launch.h and docs/distributed.md.
#include "cli/launch.h"

#include "cli/args.h"
#include "train/run_store.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char** environ;

namespace tb {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTermGraceSeconds = 15;  // beyond the collectives' timeout, before SIGTERM
constexpr int kKillGraceSeconds = 5;   // after SIGTERM, before SIGKILL
constexpr size_t kMaxLineBytes = 1 << 20;

// ---- Ctrl-C: the handler only counts and wakes the poll loop (a self-pipe), which forwards.

std::atomic<int> g_interrupts{0};
volatile sig_atomic_t g_wakeFd = -1;

void onInterrupt(int)
{
    g_interrupts.fetch_add(1);
    const int saved = errno;
    if (g_wakeFd >= 0) {
        const char c = 0;
        [[maybe_unused]] ssize_t n = write(g_wakeFd, &c, 1);
    }
    errno = saved;
}

class InterruptForwarding {
public:
    InterruptForwarding()
    {
        if (pipe2(m_wake, O_CLOEXEC | O_NONBLOCK) != 0)
            fail("launch: cannot create a pipe: ", std::strerror(errno));
        g_interrupts = 0;
        g_wakeFd = m_wake[1];
        struct sigaction sa {};
        sa.sa_handler = onInterrupt;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &m_previous);
    }
    ~InterruptForwarding()
    {
        sigaction(SIGINT, &m_previous, nullptr);
        g_wakeFd = -1;
        close(m_wake[0]);
        close(m_wake[1]);
    }
    InterruptForwarding(const InterruptForwarding&) = delete;
    InterruptForwarding& operator=(const InterruptForwarding&) = delete;
    int wakeFd() const { return m_wake[0]; }
    void drain() const
    {
        char buffer[64];
        while (read(m_wake[0], buffer, sizeof buffer) > 0) {
        }
    }

private:
    int m_wake[2] = {-1, -1};
    struct sigaction m_previous {};
};

// ---- The port of the rank-0 store.

int resolvePort(const std::string& addr, int port)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
        fail("launch: master address '", addr, "' does not resolve: ", gai_strerror(rc));
    const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int bound = -1, bindErrno = 0;
    if (fd >= 0) {
        // As the store binds: a port left in TIME_WAIT is free, one with a listener is not.
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        bound = bind(fd, found->ai_addr, found->ai_addrlen);
        bindErrno = errno;
    }
    freeaddrinfo(found);
    if (fd < 0)
        fail("launch: cannot open a socket: ", std::strerror(errno));
    if (bound != 0) {
        close(fd);
        if (bindErrno == EADDRINUSE)
            fail("port ", port, " on ", addr, " is in use (another run's store?): give another ",
                 "--master-port, or none to pick a free one");
        fail("launch: cannot bind ", addr, ":", port, ": ", std::strerror(bindErrno),
             " (--master-addr must be an address of this machine)");
    }
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
    close(fd);
    if (local.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port);
    return ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port);
}

// ---- What each child runs with.

std::string executablePath(const std::string& name)
{
    if (name.find('/') != std::string::npos)
        return name;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (size_t begin = 0; begin <= dirs.size();) {
        size_t end = std::min(dirs.find(':', begin), dirs.size());
        std::string dir = dirs.substr(begin, end - begin);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0)
            return candidate;
        begin = end + 1;
    }
    fail("launch: cannot start ", name, ": not found on PATH");
}

std::vector<std::string> rankEnvironment(int rank, const LaunchOptions& o, int port)
{
    std::vector<std::pair<std::string, std::string>> set = {
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(o.nproc)},
        {"LOCAL_RANK", std::to_string(rank)},
        {"LOCAL_WORLD_SIZE", std::to_string(o.nproc)},
        {"GROUP_RANK", "0"},
        {"MASTER_ADDR", o.masterAddr},
        {"MASTER_PORT", std::to_string(port)},
        {"TB_DIST_TIMEOUT", std::to_string(o.timeoutSeconds)},
    };
    if (!std::getenv("OMP_NUM_THREADS")) {
        int threads = o.threadsPerRank;
        if (threads <= 0)
            threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / o.nproc);
        set.emplace_back("OMP_NUM_THREADS", std::to_string(threads));
    }
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        std::string entry = *e;
        std::string key = entry.substr(0, entry.find('='));
        if (std::none_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == key; }))
            env.push_back(std::move(entry));
    }
    for (const auto& [key, value] : set)
        env.push_back(key + "=" + value);
    return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings)
{
    std::vector<char*> p;
    for (std::string& s : strings)
        p.push_back(s.data());
    p.push_back(nullptr);
    return p;
}

std::string signalName(int sig)
{
    static const std::pair<int, const char*> names[] = {
        {SIGINT, "SIGINT"},   {SIGTERM, "SIGTERM"}, {SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"},
        {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
        {SIGHUP, "SIGHUP"},   {SIGPIPE, "SIGPIPE"}, {SIGQUIT, "SIGQUIT"}};
    for (const auto& [number, name] : names)
        if (number == sig)
            return name;
    return cat("signal ", sig);
}

// ---- One child's output: whole lines, prefixed unless it is rank 0's stdout.

struct OutputPipe {
    int fd = -1;
    std::ostream* sink = nullptr;
    std::string prefix;
    std::string pending;  // a line not yet ended

    void emit(std::string_view line) { *sink << prefix << line << '\n'; }
    void feed(const char* data, size_t n)
    {
        pending.append(data, n);
        size_t begin = 0;
        for (size_t nl; (nl = pending.find('\n', begin)) != std::string::npos; begin = nl + 1)
            emit(std::string_view(pending).substr(begin, nl - begin));
        pending.erase(0, begin);
        if (pending.size() >= kMaxLineBytes) {
            emit(pending);
            pending.clear();
        }
    }
    // Reads what is there now (the fd is non-blocking); closes it at end of file.
    void readAvailable(int maxReads)
    {
        char buffer[65536];
        for (int i = 0; fd >= 0 && i < maxReads; ++i) {
            ssize_t n = read(fd, buffer, sizeof buffer);
            if (n > 0) {
                feed(buffer, static_cast<size_t>(n));
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else {
                if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                    finish();
                return;
            }
        }
    }
    void finish()
    {
        if (!pending.empty())
            emit(pending);  // a partial last line, ended here
        pending.clear();
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
};

struct Rank {
    pid_t pid = -1;
    bool running = false;
    OutputPipe stdoutPipe, stderrPipe;
};

// The children: started one by one, signalled as process groups, and killed and reaped by the
// destructor when the launcher leaves early (an exception), so none outlives launchRanks.
class RankProcesses {
public:
    RankProcesses(const LaunchOptions& o, std::ostream& out, std::ostream& err) : m_ranks(o.nproc)
    {
        for (int r = 0; r < o.nproc; ++r) {
            const std::string prefix = cat("[rank ", r, "] ");
            m_ranks[r].stdoutPipe = {-1, &out, r == 0 ? "" : prefix, ""};
            m_ranks[r].stderrPipe = {-1, &err, prefix, ""};
        }
    }
    ~RankProcesses()
    {
        for (Rank& rank : m_ranks) {
            if (rank.running) {
                kill(-rank.pid, SIGKILL);
                kill(rank.pid, SIGKILL);
                while (waitpid(rank.pid, nullptr, 0) < 0 && errno == EINTR) {
                }
            }
            rank.stdoutPipe.finish();
            rank.stderrPipe.finish();
        }
    }
    RankProcesses(const RankProcesses&) = delete;
    RankProcesses& operator=(const RankProcesses&) = delete;

    std::vector<Rank>& ranks() { return m_ranks; }
    void start(int r, const std::string& path, std::vector<std::string> argv,
               std::vector<std::string> env);
    // Sends sig to every rank still running (its whole process group).
    void signalAll(int sig)
    {
        for (Rank& rank : m_ranks)
            if (rank.running && kill(-rank.pid, sig) != 0)
                kill(rank.pid, sig);
    }
    std::string runningList() const
    {
        std::string list;
        for (size_t r = 0; r < m_ranks.size(); ++r)
            if (m_ranks[r].running)
                list += (list.empty() ? "" : ", ") + std::to_string(r);
        return list;
    }

private:
    std::vector<Rank> m_ranks;
};

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void execChild(const char* path, char* const* argv, char* const* envp, int outFd,
                            int errFd, int statusFd, pid_t parent)
{
    // Its own session (and so its own process group, as torchrun gives its workers): the
    // terminal's Ctrl-C goes to the launcher, which forwards it, and the scheduler shares the CPU
    // between the ranks as between separate programs rather than as one session's.
    setsid();
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // the launcher killed outright: the ranks follow
    if (getppid() != parent)
        _exit(127);
#else
    (void)parent;
#endif
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null > 0)
        dup2(null, 0);
    else if (null == 0)
        fcntl(0, F_SETFD, 0);
    dup2(outFd, 1);
    dup2(errFd, 2);
    execve(path, argv, envp);
    const int error = errno;
    [[maybe_unused]] ssize_t n = write(statusFd, &error, sizeof error);
    _exit(127);
}

void RankProcesses::start(int r, const std::string& path, std::vector<std::string> argv,
                          std::vector<std::string> env)
{
    int outPipe[2], errPipe[2], statusPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0)
        fail("launch: cannot create a pipe: ", std::strerror(errno));
    m_ranks[r].stdoutPipe.fd = outPipe[0];
    if (pipe2(errPipe, O_CLOEXEC) != 0) {
        close(outPipe[1]);
        fail("launch: cannot create a pipe: ", std::strerror(errno));
    }
    m_ranks[r].stderrPipe.fd = errPipe[0];
    if (pipe2(statusPipe, O_CLOEXEC) != 0) {
        close(outPipe[1]);
        close(errPipe[1]);
        fail("launch: cannot create a pipe: ", std::strerror(errno));
    }
    std::vector<char*> argvp = pointers(argv), envp = pointers(env);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0)
        execChild(path.c_str(), argvp.data(), envp.data(), outPipe[1], errPipe[1], statusPipe[1],
                  parent);
    const int forkErrno = errno;
    close(outPipe[1]);
    close(errPipe[1]);
    close(statusPipe[1]);
    if (pid < 0) {
        close(statusPipe[0]);
        fail("launch: cannot start rank ", r, ": fork: ", std::strerror(forkErrno));
    }
    m_ranks[r].pid = pid;
    m_ranks[r].running = true;
    int execErrno = 0;
    ssize_t n;
    while ((n = read(statusPipe[0], &execErrno, sizeof execErrno)) < 0 && errno == EINTR) {
    }
    close(statusPipe[0]);
    for (int fd : {outPipe[0], errPipe[0]})
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (n > 0) {
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        m_ranks[r].running = false;
        fail("launch: cannot start ", path, ": ", std::strerror(execErrno));
    }
}

// ---- The loop: output, exits, the fault timeline and Ctrl-C.

class Supervisor {
public:
    Supervisor(RankProcesses& processes, const LaunchOptions& o, const InterruptForwarding& wake,
               std::ostream& out, std::ostream& err)
        : m_processes(processes), m_options(o), m_wake(wake), m_out(out), m_err(err)
    {
    }
    int run()
    {
        while (!m_processes.runningList().empty()) {
            waitForOutput();
            forwardInterrupts();
            reap();
            escalate();
            m_out.flush();
            m_err.flush();
        }
        for (Rank& rank : m_processes.ranks())  // what they wrote last, then partial lines
            for (OutputPipe* p : {&rank.stdoutPipe, &rank.stderrPipe}) {
                p->readAvailable(16);
                p->finish();
            }
        m_out.flush();
        m_err.flush();
        return m_status;
    }

private:
    void waitForOutput()
    {
        std::vector<pollfd> fds{{m_wake.wakeFd(), POLLIN, 0}};
        std::vector<OutputPipe*> pipes;
        for (Rank& rank : m_processes.ranks())
            for (OutputPipe* p : {&rank.stdoutPipe, &rank.stderrPipe})
                if (p->fd >= 0) {
                    fds.push_back({p->fd, POLLIN, 0});
                    pipes.push_back(p);
                }
        // Exits are seen by polling waitpid: no SIGCHLD handler to take from the host program.
        if (poll(fds.data(), fds.size(), 50) <= 0)
            return;
        if (fds[0].revents)
            m_wake.drain();
        for (size_t i = 0; i < pipes.size(); ++i)
            if (fds[i + 1].revents)
                pipes[i]->readAvailable(4);
    }
    void forwardInterrupts()
    {
        for (const int seen = g_interrupts.load(); m_interrupts < seen;) {
            ++m_interrupts;
            if (m_interrupts == 1) {
                m_err << "[launch] Ctrl-C: every rank stops after its current step (again: "
                         "SIGTERM)\n";
                m_processes.signalAll(SIGINT);
            } else if (m_interrupts == 2) {
                m_err << "[launch] Ctrl-C again: SIGTERM to ranks " << m_processes.runningList()
                      << " (again: SIGKILL)\n";
                m_processes.signalAll(SIGTERM);
            } else {
                m_err << "[launch] SIGKILL to ranks " << m_processes.runningList() << "\n";
                m_processes.signalAll(SIGKILL);
            }
        }
    }
    void reap()
    {
        std::vector<Rank>& ranks = m_processes.ranks();
        for (size_t r = 0; r < ranks.size(); ++r) {
            int status = 0;
            if (!ranks[r].running || waitpid(ranks[r].pid, &status, WNOHANG) != ranks[r].pid)
                continue;
            ranks[r].running = false;
            int code = 0;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 130 && m_interrupts > 0) {
                // Stopped by the Ctrl-C this launcher forwarded: a stop, not a failure.
                if (!m_failed)
                    m_status = 130;
            } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
                code = WEXITSTATUS(status);
                m_err << "[launch] rank " << r << " exited with status " << code << "\n";
            } else if (WIFSIGNALED(status)) {
                code = 128 + WTERMSIG(status);
                m_err << "[launch] rank " << r << " killed by signal "
                      << signalName(WTERMSIG(status)) << "\n";
            }
            if (code != 0 && !m_failed) {
                m_failed = static_cast<int>(r);
                m_status = code;
                m_termAt = Clock::now() +
                           std::chrono::seconds(m_options.timeoutSeconds + kTermGraceSeconds);
            }
        }
    }
    // A rank failed: the others stop by themselves when their collectives time out; past that,
    // SIGTERM, then SIGKILL.
    void escalate()
    {
        const std::string running = m_processes.runningList();
        if (!m_failed || running.empty())
            return;
        const auto now = Clock::now();
        if (!m_killAt && now >= *m_termAt) {
            m_err << "[launch] ranks " << running << " still running "
                  << m_options.timeoutSeconds + kTermGraceSeconds << " s after rank " << *m_failed
                  << " failed: SIGTERM\n";
            m_processes.signalAll(SIGTERM);
            m_killAt = now + std::chrono::seconds(kKillGraceSeconds);
        } else if (m_killAt && !m_killed && now >= *m_killAt) {
            m_err << "[launch] ranks " << running << " still running " << kKillGraceSeconds
                  << " s after SIGTERM: SIGKILL\n";
            m_processes.signalAll(SIGKILL);
            m_killed = true;
        }
    }

    RankProcesses& m_processes;
    const LaunchOptions& m_options;
    const InterruptForwarding& m_wake;
    std::ostream& m_out;
    std::ostream& m_err;
    int m_status = 0;
    int m_interrupts = 0;
    std::optional<int> m_failed;  // the first rank that failed
    std::optional<Clock::time_point> m_termAt, m_killAt;
    bool m_killed = false;
};

long long environmentInteger(const char* name, long long low, long long high)
{
    const char* text = std::getenv(name);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < low || v > high)
        fail(name, "='", text, "': expected an integer from ", low, " to ", high);
    return v;
}

// "2(x3),1" (SLURM_TASKS_PER_NODE): the tasks on node `node`, counting from 0.
std::optional<long long> tasksOnNode(const std::string& spec, long long node)
{
    long long first = node;
    size_t pos = 0;
    while (pos < spec.size()) {
        char* end = nullptr;
        const long long tasks = std::strtoll(spec.c_str() + pos, &end, 10);
        if (end == spec.c_str() + pos)
            return std::nullopt;
        pos = static_cast<size_t>(end - spec.c_str());
        long long repeat = 1;
        if (spec.compare(pos, 2, "(x") == 0) {
            repeat = std::strtoll(spec.c_str() + pos + 2, &end, 10);
            pos = spec.find(')', pos);
            pos = pos == std::string::npos ? spec.size() : pos + 1;
        }
        if (first < repeat)
            return tasks;
        first -= repeat;
        if (pos < spec.size() && spec[pos] == ',')
            ++pos;
    }
    return std::nullopt;
}

void adoptSlurm()
{
    if (std::getenv("RANK") || !std::getenv("SLURM_PROCID"))
        return;
    const char* tasksName = std::getenv("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
    if (!std::getenv(tasksName))
        fail("SLURM_PROCID is set but SLURM_NTASKS is not: start the ranks with srun");
    const long long world = environmentInteger(tasksName, 1, 1 << 20);
    const long long rank = environmentInteger("SLURM_PROCID", 0, world - 1);
    const long long localRank =
        std::getenv("SLURM_LOCALID") ? environmentInteger("SLURM_LOCALID", 0, world - 1) : rank;
    const long long node =
        std::getenv("SLURM_NODEID") ? environmentInteger("SLURM_NODEID", 0, world - 1) : 0;
    std::optional<long long> localWorld;
    if (std::getenv("SLURM_NTASKS_PER_NODE"))
        localWorld = environmentInteger("SLURM_NTASKS_PER_NODE", 1, world);
    else if (const char* spec = std::getenv("SLURM_TASKS_PER_NODE"))
        localWorld = tasksOnNode(spec, node);
    if (world > 1 && !std::getenv("MASTER_ADDR"))
        fail("srun started ", world, " ranks but MASTER_ADDR is not set: export it (the first ",
             "node: scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1) and MASTER_PORT");
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(localRank).c_str(), 1);
    if (localWorld)
        setenv("LOCAL_WORLD_SIZE", std::to_string(*localWorld).c_str(), 1);
    setenv("GROUP_RANK", std::to_string(node).c_str(), 1);
}

}  // namespace

int launchRanks(const std::vector<std::string>& argv, const LaunchOptions& options,
                std::ostream& out, std::ostream& err)
{
    if (argv.empty())
        fail("launch: no command to start");
    if (options.nproc < 1)
        fail("launch: nproc must be at least 1, got ", options.nproc);
    if (options.masterPort < 0 || options.masterPort > 65535)
        fail("launch: port ", options.masterPort, " is not a TCP port (1 to 65535, 0: a free one)");
    const int port = resolvePort(options.masterAddr, options.masterPort);
    const std::string path = executablePath(argv[0]);
    InterruptForwarding interrupts;
    RankProcesses processes(options, out, err);
    for (int r = 0; r < options.nproc; ++r)
        processes.start(r, path, argv, rankEnvironment(r, options, port));
    return Supervisor(processes, options, interrupts, out, err).run();
}

namespace {

TrainConfig runConfig(const Args& args)
{
    if (args.has("resume")) {
        const std::string dir = args.value("resume");
        return parseTrainConfig(RunStore(dir).readRunInfo().at("config"),
                                joinPath(dir, "run.json"));
    }
    std::vector<std::string> overrides;
    for (size_t i = 1; i < args.positional().size(); ++i)
        overrides.push_back(args.positional()[i]);
    return loadTrainConfig(args.value("config"), overrides);
}

}  // namespace

int launchFromArgs(const Args& args, std::ostream& out, std::ostream& err)
{
    if (!args.has("nproc"))
        fail("train: --master-port and --master-addr go with --nproc (under torchrun or srun, ",
             "export MASTER_ADDR and MASTER_PORT)");
    if (std::getenv("RANK"))
        fail("train: --nproc given while RANK is set (this process is already one rank of a ",
             "launched run)");
    LaunchOptions o;
    const long long nproc = args.integer("nproc", 0);
    if (nproc < 1 || nproc > 64)
        fail("train: --nproc must be an integer from 1 to 64, got ", args.value("nproc"));
    o.nproc = static_cast<int>(nproc);
    const long long port = args.integer("master-port", 0);
    if (port < 0 || port > 65535)
        fail("train: --master-port must be from 1 to 65535 (0 or none: a free one), got ", port);
    o.masterPort = static_cast<int>(port);
    o.masterAddr = args.value("master-addr", o.masterAddr);
    // The run's config is read once here, so a bad one fails before any rank starts; its
    // dist.timeout_s bounds how long the ranks (and the launcher) wait for a lost one.
    o.timeoutSeconds = runConfig(args).dist.timeoutSeconds;
    if (std::getenv("TB_DIST_TIMEOUT"))
        o.timeoutSeconds = static_cast<int>(environmentInteger("TB_DIST_TIMEOUT", 1, 86400));
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        fail("train --nproc: cannot find this executable (/proc/self/exe): ", std::strerror(errno));
    std::vector<std::string> argv{std::string(self, static_cast<size_t>(n))};
    for (std::string& a : args.argvWithout({"nproc", "master-port", "master-addr"}))
        argv.push_back(std::move(a));
    return launchRanks(argv, o, out, err);
}

void adoptSchedulerEnvironment()
{
    adoptSlurm();
    // A rank's stdout is usually a launcher's pipe: whole lines as they are written, not blocks.
    if (std::getenv("RANK"))
        std::setvbuf(stdout, nullptr, _IOLBF, 0);
}

}  // namespace tb
