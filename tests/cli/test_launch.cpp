// The rank launcher with real processes (/bin/sh children): the environment of each rank, output
// as whole prefixed lines, a failing rank's status and the SIGTERM/SIGKILL timeline, a port in use,
// Ctrl-C forwarded, SLURM's environment adopted, and `tunebench train --nproc` end to end.
#include "cli/cli_run.h"
#include "test_util.h"

#include "cli/launch.h"

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

struct Launched {
    int status = -1;
    std::string out, err;
    double seconds = 0;
};

Launched launchShell(int nproc, const std::string& script, tb::LaunchOptions o = {})
{
    o.nproc = nproc;
    std::ostringstream out, err;
    QElapsedTimer timer;
    timer.start();
    Launched l;
    l.status = tb::launchRanks({"/bin/sh", "-c", script}, o, out, err);
    l.seconds = timer.elapsed() / 1000.0;
    l.out = out.str();
    l.err = err.str();
    return l;
}

std::vector<std::string> linesOf(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

std::multiset<std::string> lineSet(const std::string& text)
{
    auto lines = linesOf(text);
    return {lines.begin(), lines.end()};
}

// A socket bound to 127.0.0.1 (port 0: the kernel's choice), listening when asked; closed with it.
class BoundSocket {
public:
    explicit BoundSocket(bool listening)
    {
        m_fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t n = sizeof a;
        if (bind(m_fd, reinterpret_cast<sockaddr*>(&a), n) != 0 ||
            (listening && listen(m_fd, 1) != 0) ||
            getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
            qFatal("test socket: %s", std::strerror(errno));
        m_port = ntohs(a.sin_port);
    }
    ~BoundSocket() { close(); }
    void close()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }
    int port() const { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name)
    {
        if (const char* old = std::getenv(name))
            m_old = old;
        value ? setenv(name, value, 1) : unsetenv(name);
    }
    ~ScopedEnv() { m_old ? setenv(m_name, m_old->c_str(), 1) : unsetenv(m_name); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

std::string env(const char* name)
{
    const char* v = std::getenv(name);
    return v ? v : "<unset>";
}

// Sends SIGINT to this process once every path in `waitFor` exists (or after 20 s regardless).
void interruptWhenPresent(const std::vector<std::string>& waitFor)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline &&
           !std::all_of(waitFor.begin(), waitFor.end(),
                        [](const std::string& p) { return std::filesystem::exists(p); }))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(getpid(), SIGINT);
}

std::atomic<int> g_testInterrupts{0};
void countInterrupt(int)
{
    g_testInterrupts.fetch_add(1);
}

}  // namespace

class TestLaunch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void environmentPerRank();
    void threadsAndFreePort();
    void wholePrefixedLines();
    void longLinesNeverInterleave();
    void failingRankTimeline();
    void failingRankOthersFinish();
    void portInUse();
    void cannotStart();
    void interruptForwarded();
    void secondInterruptTerminates();
    void slurmEnvironment();
    void cliErrors();
    void cliStartsItsRanks();

private:
    QTemporaryDir m_dir;
    std::string path(const std::string& name) const
    {
        return m_dir.filePath(QString::fromStdString(name)).toStdString();
    }
};

void TestLaunch::environmentPerRank()
{
    ScopedEnv inherited("TB_TEST_INHERITED", "yes");
    ScopedEnv parentRank("RANK", "99");  // the parent's own RANK is replaced, not passed on
    ScopedEnv omp("OMP_NUM_THREADS", nullptr);
    int port;
    {
        BoundSocket probe(false);
        port = probe.port();
    }
    tb::LaunchOptions o;
    o.masterPort = port;
    o.timeoutSeconds = 7;
    o.threadsPerRank = 2;
    Launched l = launchShell(3,
                             "echo env $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK "
                             "$MASTER_ADDR $MASTER_PORT $TB_DIST_TIMEOUT $OMP_NUM_THREADS "
                             "$TB_TEST_INHERITED",
                             o);
    QCOMPARE(l.status, 0);
    QCOMPARE(l.err, std::string());
    const std::string rest = tbtest::numbered(" 127.0.0.1 ", port) + " 7 2 yes";
    std::multiset<std::string> expected{"env 0 3 0 3 0" + rest, "[rank 1] env 1 3 1 3 0" + rest,
                                        "[rank 2] env 2 3 2 3 0" + rest};
    QCOMPARE(lineSet(l.out), expected);
}

void TestLaunch::threadsAndFreePort()
{
    {
        ScopedEnv omp("OMP_NUM_THREADS", "5");  // the parent's value wins over threadsPerRank
        tb::LaunchOptions o;
        o.threadsPerRank = 3;
        Launched l = launchShell(2, "echo $OMP_NUM_THREADS", o);
        QCOMPARE(lineSet(l.out), (std::multiset<std::string>{"5", "[rank 1] 5"}));
    }
    ScopedEnv omp("OMP_NUM_THREADS", nullptr);
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const std::string share = std::to_string(std::max(1, cores / 2));
    Launched l = launchShell(2, "echo $OMP_NUM_THREADS $MASTER_PORT");
    QCOMPARE(l.status, 0);
    const auto lines = linesOf(l.out);
    QCOMPARE(lines.size(), size_t(2));
    std::string rank0 = lines[0].rfind("[rank", 0) == 0 ? lines[1] : lines[0];
    std::string rank1 = lines[0].rfind("[rank", 0) == 0 ? lines[0] : lines[1];
    QCOMPARE(rank1, "[rank 1] " + rank0);  // the same port for both
    QCOMPARE(rank0.substr(0, rank0.find(' ')), share);
    const int port = std::stoi(rank0.substr(rank0.find(' ') + 1));
    QVERIFY2(port > 0 && port < 65536, rank0.c_str());
}

void TestLaunch::wholePrefixedLines()
{
    Launched l = launchShell(2, "echo out-$RANK; echo err-$RANK >&2; echo more-$RANK; "
                                "printf 'partial-%s' $RANK; printf 'tail-%s' $RANK >&2");
    QCOMPARE(l.status, 0);
    QCOMPARE(lineSet(l.out),
             (std::multiset<std::string>{"out-0", "more-0", "partial-0", "[rank 1] out-1",
                                         "[rank 1] more-1", "[rank 1] partial-1"}));
    QCOMPARE(lineSet(l.err), (std::multiset<std::string>{"[rank 0] err-0", "[rank 0] tail-0",
                                                         "[rank 1] err-1", "[rank 1] tail-1"}));
    QVERIFY(l.out.back() == '\n' && l.err.back() == '\n');  // partial last lines ended
    // Each rank's lines keep their order.
    const auto lines = linesOf(l.out);
    auto at = [&](const std::string& s) { return std::find(lines.begin(), lines.end(), s); };
    QVERIFY(at("out-0") < at("more-0") && at("more-0") < at("partial-0"));
    QVERIFY(at("[rank 1] out-1") < at("[rank 1] more-1"));
}

void TestLaunch::longLinesNeverInterleave()
{
    // awk writes 4 KiB blocks, so each 3000-byte line reaches the launcher in pieces.
    const int n = 300, width = 3000;
    Launched l = launchShell(3, tb::cat("awk -v r=$RANK 'BEGIN { s = sprintf(\"%", width,
                                        "s\", \"\"); gsub(/ /, r, s); for (i = 0; i < ", n,
                                        "; i++) print r \":\" i \":\" s }'"));
    QCOMPARE(l.status, 0);
    std::vector<int> next(3, 0);
    for (const std::string& line : linesOf(l.out)) {
        const int rank = line.rfind("[rank ", 0) == 0 ? line[6] - '0' : 0;
        const std::string prefix = rank == 0 ? "" : tbtest::numbered("[rank ", rank) + "] ";
        std::string expected = prefix;
        expected += std::to_string(rank) + ":" + std::to_string(next[rank]) + ":";
        expected += std::string(width, static_cast<char>('0' + rank));
        QCOMPARE(line, expected);
        ++next[rank];
    }
    QCOMPARE(next, (std::vector<int>{n, n, n}));
}

void TestLaunch::failingRankTimeline()
{
    // Rank 0 fails; rank 2 stops on SIGTERM, rank 1 ignores it and needs SIGKILL.
    tb::LaunchOptions o;
    o.timeoutSeconds = 1;
    Launched l = launchShell(3,
                             "case $RANK in 0) sleep 0.2; exit 3;; 1) trap '' TERM; sleep 60;; "
                             "*) sleep 60;; esac",
                             o);
    QCOMPARE(l.status, 3);
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 0 exited with status 3\n"), l.err.c_str());
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 2 killed by signal SIGTERM\n"), l.err.c_str());
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 1 killed by signal SIGKILL\n"), l.err.c_str());
    QVERIFY(l.err.find("SIGTERM\n") < l.err.find("rank 2 killed"));
    // 0.2 s, then timeout + 15 s before SIGTERM, then 5 s before SIGKILL: 21.2 s, plus the 50 ms
    // polls; the upper bound leaves 4 s for a loaded machine.
    QVERIFY2(l.seconds >= 21.2 && l.seconds < 25.5, std::to_string(l.seconds).c_str());
}

void TestLaunch::failingRankOthersFinish()
{
    // The others end by themselves: no signal, and the first failure's status (a signal: 128+9).
    Launched l = launchShell(3, "case $RANK in 1) kill -KILL $$;; 2) sleep 0.5; exit 4;; "
                                "*) sleep 1;; esac");
    QCOMPARE(l.status, 128 + SIGKILL);
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 1 killed by signal SIGKILL\n"), l.err.c_str());
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 2 exited with status 4\n"), l.err.c_str());
    QVERIFY2(!tbtest::contains(l.err, "rank 0"), l.err.c_str());
    QVERIFY2(!tbtest::contains(l.err, "SIGTERM"), l.err.c_str());
    QVERIFY2(l.seconds < 6, std::to_string(l.seconds).c_str());
}

void TestLaunch::portInUse()
{
    BoundSocket taken(true);
    tb::LaunchOptions o;
    o.masterPort = taken.port();
    const std::string marker = path("started");
    const std::string script = "touch " + marker + ".$RANK";
    const std::string error = tbtest::errorOf([&] { launchShell(2, script, o); });
    QVERIFY2(tbtest::contains(error,
                              tbtest::numbered("port ", taken.port()) + " on 127.0.0.1 is in use"),
             error.c_str());
    QVERIFY(!std::filesystem::exists(marker + ".0") && !std::filesystem::exists(marker + ".1"));
    // Once freed, the same port is taken as given.
    taken.close();
    Launched l = launchShell(2, script + "; echo $MASTER_PORT", o);
    QCOMPARE(l.status, 0);
    QVERIFY(tbtest::contains(l.out, tbtest::numbered("[rank 1] ", o.masterPort) + "\n"));
    QVERIFY(std::filesystem::exists(marker + ".0") && std::filesystem::exists(marker + ".1"));
}

void TestLaunch::cannotStart()
{
    std::ostringstream out, err;
    tb::LaunchOptions o;
    o.nproc = 2;
    std::string error =
        tbtest::errorOf([&] { tb::launchRanks({"/nonexistent/tb-launch"}, o, out, err); });
    QVERIFY2(tbtest::contains(error, "cannot start /nonexistent/tb-launch: No such file"),
             error.c_str());
    error = tbtest::errorOf([&] { tb::launchRanks({"tb-launch-no-such-program"}, o, out, err); });
    QVERIFY2(tbtest::contains(error, "tb-launch-no-such-program: not found on PATH"),
             error.c_str());
}

void TestLaunch::interruptForwarded()
{
    // The previous handler (the test's own) must be back afterwards.
    struct sigaction mine {
    }, before{}, after{};
    mine.sa_handler = countInterrupt;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGINT, &mine, &before);
    const std::string ready = path("ready");
    std::thread interrupter(interruptWhenPresent,
                            std::vector<std::string>{ready + ".0", ready + ".1"});
    Launched l = launchShell(2, "trap 'echo stopping $RANK; exit 0' INT; touch " + ready +
                                    ".$RANK; i=0; while [ $i -lt 300 ]; do sleep 0.1; "
                                    "i=$((i+1)); done; exit 9");
    interrupter.join();
    QCOMPARE(l.status, 0);
    QCOMPARE(lineSet(l.out), (std::multiset<std::string>{"stopping 0", "[rank 1] stopping 1"}));
    QVERIFY2(tbtest::contains(l.err, "[launch] Ctrl-C"), l.err.c_str());
    QCOMPARE(g_testInterrupts.load(), 0);
    // Ranks that stop on the Ctrl-C exit 130 (as `tunebench train` does): the launcher's status
    // too, and no rank is reported as failed.
    std::thread again(interruptWhenPresent, std::vector<std::string>{ready + "2.0", ready + "2.1"});
    Launched stopped = launchShell(2, "trap 'exit 130' INT; touch " + ready +
                                          "2.$RANK; i=0; while [ $i -lt 300 ]; do sleep 0.1; "
                                          "i=$((i+1)); done; exit 9");
    again.join();
    QCOMPARE(stopped.status, 130);
    QVERIFY2(!tbtest::contains(stopped.err, "exited with status"), stopped.err.c_str());
    sigaction(SIGINT, nullptr, &after);
    QVERIFY(after.sa_handler == countInterrupt);
    kill(getpid(), SIGINT);  // reaches the test's handler again
    QCOMPARE(g_testInterrupts.load(), 1);
    sigaction(SIGINT, &before, nullptr);
}

void TestLaunch::secondInterruptTerminates()
{
    // The ranks note the first Ctrl-C and carry on; the second one terminates them.
    const std::string ready = path("alive"), noted = path("noted");
    std::thread interrupter([&] {
        interruptWhenPresent({ready + ".0", ready + ".1"});
        interruptWhenPresent({noted + ".0", noted + ".1"});
    });
    Launched l = launchShell(2, "trap 'touch " + noted + ".$RANK' INT; touch " + ready +
                                    ".$RANK; i=0; while [ $i -lt 300 ]; do sleep 0.1; "
                                    "i=$((i+1)); done; exit 9");
    interrupter.join();
    QCOMPARE(l.status, 128 + SIGTERM);
    QVERIFY(std::filesystem::exists(noted + ".0") && std::filesystem::exists(noted + ".1"));
    QVERIFY2(tbtest::contains(l.err, "[launch] Ctrl-C again: SIGTERM"), l.err.c_str());
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 0 killed by signal SIGTERM\n"), l.err.c_str());
    QVERIFY2(tbtest::contains(l.err, "[launch] rank 1 killed by signal SIGTERM\n"), l.err.c_str());
}

void TestLaunch::slurmEnvironment()
{
    ScopedEnv rank("RANK", nullptr), world("WORLD_SIZE", nullptr), local("LOCAL_RANK", nullptr),
        localWorld("LOCAL_WORLD_SIZE", nullptr), group("GROUP_RANK", nullptr),
        addr("MASTER_ADDR", "node0"), procid("SLURM_PROCID", "6"), ntasks("SLURM_NTASKS", "8"),
        localid("SLURM_LOCALID", "1"), nodeid("SLURM_NODEID", "2"),
        perNode("SLURM_NTASKS_PER_NODE", nullptr), tasks("SLURM_TASKS_PER_NODE", "3,2(x2),1");
    // Nodes hold 3, 2, 2, 1 tasks: rank 6 is node 2's second task.
    tb::adoptSchedulerEnvironment();
    QCOMPARE(env("RANK"), std::string("6"));
    QCOMPARE(env("WORLD_SIZE"), std::string("8"));
    QCOMPARE(env("LOCAL_RANK"), std::string("1"));
    QCOMPARE(env("LOCAL_WORLD_SIZE"), std::string("2"));
    QCOMPARE(env("GROUP_RANK"), std::string("2"));
    // RANK set: left alone.
    setenv("SLURM_PROCID", "7", 1);
    tb::adoptSchedulerEnvironment();
    QCOMPARE(env("RANK"), std::string("6"));
    // SLURM_NTASKS_PER_NODE first; SLURM_TASKS_PER_NODE's entry for the node otherwise.
    unsetenv("RANK");
    setenv("SLURM_NODEID", "3", 1);
    tb::adoptSchedulerEnvironment();
    QCOMPARE(env("RANK"), std::string("7"));
    QCOMPARE(env("LOCAL_WORLD_SIZE"), std::string("1"));
    unsetenv("RANK");
    setenv("SLURM_NTASKS_PER_NODE", "4", 1);
    tb::adoptSchedulerEnvironment();
    QCOMPARE(env("LOCAL_WORLD_SIZE"), std::string("4"));
    // Bad input: no MASTER_ADDR for a world of 8, a rank that is not a number or out of range.
    unsetenv("RANK");
    unsetenv("MASTER_ADDR");
    std::string error = tbtest::errorOf([] { tb::adoptSchedulerEnvironment(); });
    QVERIFY2(tbtest::contains(error, "MASTER_ADDR is not set"), error.c_str());
    QCOMPARE(env("RANK"), std::string("<unset>"));
    setenv("MASTER_ADDR", "node0", 1);
    setenv("SLURM_PROCID", "x", 1);
    error = tbtest::errorOf([] { tb::adoptSchedulerEnvironment(); });
    QVERIFY2(tbtest::contains(error, "SLURM_PROCID='x': expected an integer from 0 to 7"),
             error.c_str());
    setenv("SLURM_PROCID", "8", 1);
    QVERIFY(tbtest::contains(tbtest::errorOf([] { tb::adoptSchedulerEnvironment(); }),
                             "SLURM_PROCID='8'"));
    // Not under SLURM: nothing.
    unsetenv("SLURM_PROCID");
    tb::adoptSchedulerEnvironment();
    QCOMPARE(env("RANK"), std::string("<unset>"));
}

void TestLaunch::cliErrors()
{
    ScopedEnv rank("RANK", nullptr);
    const std::string config = path("missing-run.json");
    const QString c = QString::fromStdString(config);
    struct Case {
        QStringList args;
        std::string message;
    };
    const std::vector<Case> cases = {
        {{"--nproc", "0"}, "--nproc must be an integer from 1 to 64, got 0"},
        {{"--nproc", "65"}, "--nproc must be an integer from 1 to 64, got 65"},
        {{"--nproc", "x"}, "option --nproc expects an integer, got 'x'"},
        {{"--nproc", "2", "--master-port", "70000"}, "--master-port must be from 1 to 65535"},
        {{"--master-port", "29500"}, "--master-port and --master-addr go with --nproc"},
    };
    for (const Case& k : cases) {
        tbtest::CliRun r = tbtest::runTunebench(QStringList{"train", "--config", c} + k.args);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(tbtest::contains(r.err, k.message), r.err.c_str());
        QVERIFY2(!tbtest::contains(r.err, "[rank"), r.err.c_str());  // no rank was started
    }
    ScopedEnv launched("RANK", "0");
    tbtest::CliRun r = tbtest::runTunebench({"train", "--nproc", "2", "--config", c});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(tbtest::contains(r.err, "tunebench: train: --nproc given while RANK is set (this "
                                     "process is already one rank of a launched run)"),
             r.err.c_str());
}

void TestLaunch::cliStartsItsRanks()
{
    // A bad config fails once, in the launcher, before any rank starts.
    ScopedEnv rank("RANK", nullptr);
    const std::string config = path("missing-run.json");
    tbtest::CliRun bad =
        tbtest::runTunebench({"train", "--nproc=2", "--master-addr", "127.0.0.1", "--master-port=0",
                              "--config", QString::fromStdString(config), "lr=0.001"});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(tbtest::contains(bad.err, "tunebench: " + config + ": cannot open"), bad.err.c_str());
    QVERIFY2(!tbtest::contains(bad.err, "[rank "), bad.err.c_str());
    // Two real ranks of tunebench, without the launcher's options (else each would refuse
    // --nproc): one run of world size 2, rank 0's summary unprefixed, rank 1 quiet.
    const QString out = QString::fromStdString(path("runs"));
    tbtest::CliRun r = tbtest::runTunebench(
        {"train", "--nproc=2", "--master-port=0", "--config",
         QStringLiteral(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json"), "name=pair",
         "output_dir=" + out, "max_steps=2", "batch_size=4", "eval_every=0"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY2(tbtest::contains(r.out, "\nrun " + path("runs") + "/pair: 2 steps"), r.out.c_str());
    QVERIFY2(!tbtest::contains(r.out, "[rank 1] step"), r.out.c_str());
    QVERIFY2(!tbtest::contains(r.err, "RANK is set"), r.err.c_str());
    QFile info(out + QStringLiteral("/pair/run.json"));
    QVERIFY(info.open(QIODevice::ReadOnly));
    QVERIFY(info.readAll().contains("\"world_size\": 2"));
}

QTEST_GUILESS_MAIN(TestLaunch)
#include "test_launch.moc"
