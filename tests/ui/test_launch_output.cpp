// The studio's launched runs without widgets: the launcher's lines tagged with their rank, a byte
// stream split into lines at every possible cut, the JSONL tail against files grown in random
// chunks (a partial last line kept until it is complete, a shrunk file read again), metrics lines
// into a batch against the records core wrote, run.json as a plan against core's schedule, the
// failure message, and the launch command and its config file (read back by core).
#include "launch_command.h"
#include "launch_output.h"

#include "train/schedule.h"
#include "train/train_config.h"

#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

const char* kConfig = TB_SOURCE_DIR "/datasets/examples/lora-tiny.json";

// A step record as core writes it (toJson), with values that survive the JSON round trip exactly.
tb::StepMetrics step(int64_t n)
{
    tb::StepMetrics m;
    m.step = n;
    m.epoch = 0.125 * double(n);
    m.tokensSeen = 512 * n;
    m.loss = 3.0 - 0.0625 * double(n);
    m.lr = 1e-3 / double(n);
    m.gradNorm = 0.75 + double(n);
    m.tokensPerSecond = 1000.5 * double(n);
    m.memoryCurrent = (int64_t(1) << 20) * (10 + n);
    m.memoryPeak = (int64_t(1) << 20) * (40 + n);
    return m;
}

QByteArray line(const nlohmann::json& j)
{
    return QByteArray::fromStdString(j.dump());
}

void append(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::Append));
    QCOMPARE(f.write(bytes), bytes.size());
}

}  // namespace

class TestLaunchOutput : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void ranksOfLines()
    {
        using tb::LaunchLine;
        struct Case {
            const char* text;
            bool stderrLine;
            int rank;
            const char* body;
        };
        const Case cases[] = {
            {"step 3/40  epoch 0.19  loss 1.9463", false, 0, "step 3/40  epoch 0.19  loss 1.9463"},
            {"[rank 1] step 3/40", false, 1, "step 3/40"},
            {"[rank 12] tunebench: warning: slow", true, 12, "tunebench: warning: slow"},
            {"[rank 0] tunebench: boom", true, 0, "tunebench: boom"},
            {"[launch] rank 1 exited with status 1", true, LaunchLine::kLauncherRank,
             "rank 1 exited with status 1"},
            {"tunebench: train: --nproc must be 1 to 64", true, LaunchLine::kLauncherRank,
             "tunebench: train: --nproc must be 1 to 64"},
            {"[rank x] not a prefix", false, 0, "[rank x] not a prefix"},
            {"[rank 2]no space", false, 0, "[rank 2]no space"},
            {"", false, 0, ""},
        };
        for (const Case& c : cases) {
            const LaunchLine l = tb::parseLaunchLine(QString::fromUtf8(c.text), c.stderrLine);
            QVERIFY2(l.rank == c.rank, c.text);
            QCOMPARE(l.text, QString::fromUtf8(c.text));  // the prefix stays in the log
            QCOMPARE(tb::launchLineBody(l), QString::fromUtf8(c.body));
        }
    }
    // Every cut of a stream into two chunks, and random cuts into many, give the stream's lines.
    void splitterKeepsPartialLines()
    {
        const QByteArray text = "step 1\r\n[rank 1] x\n\nlast line without newline";
        const QList<QByteArray> expected = {"step 1", "[rank 1] x", ""};
        for (qsizetype cut = 0; cut <= text.size(); ++cut) {
            tb::LineSplitter s;
            QList<QByteArray> lines = s.feed(text.left(cut));
            lines += s.feed(text.mid(cut));
            QCOMPARE(lines, expected);
            QCOMPARE(s.pending(), QByteArray("last line without newline"));
            QCOMPARE(s.takeRest(), QByteArray("last line without newline"));
            QVERIFY(s.pending().isEmpty());
        }
        QRandomGenerator random(7);
        for (int trial = 0; trial < 200; ++trial) {
            tb::LineSplitter s;
            QList<QByteArray> lines;
            for (qsizetype at = 0; at < text.size();) {
                const qsizetype n = 1 + random.bounded(6);
                lines += s.feed(text.mid(at, n));
                at += n;
            }
            QCOMPARE(lines, expected);
        }
    }
    // A file grown in random chunks (cutting lines anywhere) reads back as core's lines, each
    // exactly once, and only complete ones.
    void tailReadsOnlyNewCompleteLines()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("metrics.jsonl"));
        tb::JsonlTail tail(path);
        QVERIFY(tail.poll().isEmpty());  // not written yet
        QCOMPARE(tail.offset(), qint64(0));
        QByteArray all;
        QList<QByteArray> expected;
        for (int n = 1; n <= 40; ++n) {
            expected << line(tb::toJson(step(n)));
            all += expected.back() + '\n';
        }
        QRandomGenerator random(11);
        QList<QByteArray> read;
        for (qsizetype at = 0; at < all.size();) {
            const qsizetype n = 1 + random.bounded(300);
            append(path, all.mid(at, n));
            at += n;
            const QList<QByteArray> got = tail.poll();
            for (const QByteArray& l : got)
                QVERIFY(nlohmann::json::accept(l.toStdString()));  // never a torn line
            read += got;
            QCOMPARE(tail.offset(), qint64(std::min(at, all.size())));  // every byte read once
        }
        QCOMPARE(read, expected);
        QVERIFY(tail.poll().isEmpty());
        // A small read budget splits a line: the rest comes with the next poll.
        tb::JsonlTail slow(path);
        QList<QByteArray> slowRead;
        for (int i = 0; i < 10000 && slowRead.size() < expected.size(); ++i)
            slowRead += slow.poll(97);
        QCOMPARE(slowRead, expected);
        // Rewritten shorter (a restarted run cuts its metrics): read again from the start.
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(expected[0] + '\n' + expected[1].left(10));
        f.close();
        QCOMPARE(tail.poll(), QList<QByteArray>{expected[0]});
        QCOMPARE(tail.restarts(), 1);
        append(path, expected[1].mid(10) + '\n');
        QCOMPARE(tail.poll(), QList<QByteArray>{expected[1]});
    }
    void metricsLinesIntoTheBatch()
    {
        tb::JobEventBatch b;
        const tb::StepMetrics s = step(3);
        QVERIFY(tb::addMetricsLine(line(tb::toJson(s)), 0, 40, b));
        QVERIFY(tb::addMetricsLine(line(tb::toJson(step(4))), 1, 40, b));
        tb::EvalMetrics e;
        e.step = 3;
        e.valLoss = 1.25;
        e.valPerplexity = 3.5;
        QVERIFY(tb::addMetricsLine(line(tb::toJson(e)), 0, 40, b));
        QVERIFY(tb::addMetricsLine(line(tb::toJson(e)), 1, 40, b));  // not rank 0's: skipped
        QVERIFY(tb::addMetricsLine(R"({"type":"memory","step":1,"seq":64})", 0, 40, b));
        QVERIFY(!tb::addMetricsLine(line(tb::toJson(s)).left(30), 0, 40, b));   // torn
        QVERIFY(!tb::addMetricsLine(R"({"type":"step","step":5})", 1, 40, b));  // no loss
        QCOMPARE(b.steps.size(), size_t(1));
        QCOMPARE(b.rankSteps.size(), size_t(2));
        QCOMPARE(b.evals.size(), size_t(1));
        QCOMPARE(b.rankSteps[0].rank, 0);
        QCOMPARE(b.rankSteps[1].rank, 1);
        for (const tb::StepMetrics* m : {&b.steps[0], &b.rankSteps[0].step}) {
            QCOMPARE(m->step, int64_t(3));
            QCOMPARE(m->totalSteps, int64_t(40));
            QCOMPARE(m->loss, s.loss);  // exact: JSON keeps a double's shortest round-trip form
            QCOMPARE(m->lr, s.lr);
            QCOMPARE(m->tokensPerSecond, s.tokensPerSecond);
            QCOMPARE(m->memoryCurrent, s.memoryCurrent);
            QCOMPARE(m->memoryPeak, s.memoryPeak);
        }
        QCOMPARE(b.rankSteps[1].step.memoryCurrent, step(4).memoryCurrent);
        QCOMPARE(b.evals[0].valLoss.value_or(0), 1.25);
    }
    void runInfoAsPlan()
    {
        tb::OptimOptions optim;
        optim.lr = 0.01;
        optim.warmupSteps = 5;
        const QByteArray gloo =
            R"({"planned_steps": 40, "trainable_parameters": 46304,
                "dist": {"world_size": 2, "backend": "gloo", "zero": 1}})";
        const auto plan = tb::planFromRunInfo(gloo, optim, QStringLiteral("/r"));
        QVERIFY(plan);
        QCOMPARE(plan->totalSteps, int64_t(40));
        QCOMPARE(plan->schedule, tb::plannedSchedule(optim, 40));
        QCOMPARE(plan->device, std::string("cpu"));
        QCOMPARE(plan->runDir, std::string("/r"));
        QCOMPARE(plan->trainableParameters, int64_t(46304));
        const QByteArray nccl = R"({"planned_steps": 8, "dist": {"backend": "nccl"}})";
        QCOMPARE(tb::planFromRunInfo(nccl, optim, {})->device, std::string("cuda"));
        QVERIFY(!tb::planFromRunInfo(gloo.left(20), optim, {}));  // incomplete
        QVERIFY(!tb::planFromRunInfo(R"({"config": {}})", optim, {}));
    }
    void failureMessage()
    {
        tb::LaunchFailure f;
        QCOMPARE(f.message(3), QStringLiteral("the launcher exited with status 3"));
        for (const char* text :
             {"[rank 1] tunebench: warning: the validation split is small",
              "[rank 1] tunebench: dist: rank 0 did not answer within 60 s (lost?)",
              "[rank 0] tunebench: a later error", "[launch] Ctrl-C: every rank stops",
              "[launch] rank 1 exited with status 1",
              "[launch] ranks 0 still running 75 s after rank 1 failed: SIGTERM"})
            f.note(tb::parseLaunchLine(QString::fromUtf8(text), true));
        QCOMPARE(f.message(1),
                 QStringLiteral("rank 1 exited with status 1; ranks 0 still running 75 s after "
                                "rank 1 failed: SIGTERM: [rank 1] tunebench: dist: rank 0 did not "
                                "answer within 60 s (lost?)"));
        tb::LaunchFailure own;  // the launcher's own error, before any rank
        own.note(tb::parseLaunchLine(QStringLiteral("tunebench: run.json: bad key"), true));
        QCOMPARE(own.message(1), QStringLiteral("the launcher exited with status 1: "
                                                "tunebench: run.json: bad key"));
    }
    void launchCommand()
    {
        QCOMPARE(tb::tunebenchBeside(QStringLiteral("/opt/tb/bin")),
                 QStringLiteral("/opt/tb/bin/tunebench"));
        QCOMPARE(tb::tunebenchBeside(QStringLiteral(TB_BINARY_DIR "/bin")),
                 QStringLiteral(TB_BINARY_DIR "/bin/tunebench"));  // the front, when both are there
        {
            QTemporaryDir installed;  // lib/tunebench/: the studio and the engine, no front
            const QString engine = installed.filePath(QStringLiteral("tunebench-engine"));
            QVERIFY(QFile::copy(QStringLiteral(TB_BINARY_DIR "/bin/tunebench-engine"), engine));
            QCOMPARE(tb::tunebenchBeside(installed.path()), engine);
        }
        QCOMPARE(tb::launchConfigPath(QStringLiteral("/runs/a")),
                 QStringLiteral("/runs/a/launch-config.json"));
        tb::LaunchSettings s;
        s.processes = 2;
        tb::LaunchCommand c = tb::buildLaunchCommand(s, QStringLiteral("/b/tunebench"),
                                                     QStringLiteral("/runs/a/launch-config.json"));
        QCOMPARE(c.program, QStringLiteral("/b/tunebench"));
        QCOMPARE(c.arguments, (QStringList{QStringLiteral("train"), QStringLiteral("--nproc"),
                                           QStringLiteral("2"), QStringLiteral("--config"),
                                           QStringLiteral("/runs/a/launch-config.json")}));
        QVERIFY(c.environment.isEmpty());  // CUDA_VISIBLE_DEVICES as the studio has it
        s.processes = 3;
        s.gpus = {1, 3, 0};
        c = tb::buildLaunchCommand(s, QStringLiteral("tb"), QStringLiteral("f"));
        QCOMPARE(c.arguments.at(2), QStringLiteral("3"));
        QCOMPARE(c.environment, QStringList{QStringLiteral("CUDA_VISIBLE_DEVICES=1,3,0")});
    }
    void launchProblems()
    {
        tb::LaunchSettings s;
        QVERIFY(tb::launchProblem(s, 0, "auto").contains(QStringLiteral("2 or more")));
        s.processes = 2;
        QVERIFY(tb::launchProblem(s, 0, "auto").isEmpty());  // CPU: Gloo ranks
        QVERIFY(tb::launchProblem(s, 4, "cpu").isEmpty());   // a CPU run ignores the GPUs
        QVERIFY(tb::launchProblem(s, 4, "auto").contains(QStringLiteral("choose the GPUs")));
        s.gpus = {2};
        QCOMPARE(tb::launchProblem(s, 4, "cuda"),
                 QStringLiteral("2 processes need 2 GPUs, 1 chosen (one GPU per process)"));
        s.gpus = {2, 5};
        QVERIFY(tb::launchProblem(s, 4, "cuda").contains(QStringLiteral("GPU 5 does not exist")));
        s.gpus = {3, 1};
        QVERIFY(tb::launchProblem(s, 4, "cuda").isEmpty());
    }
    // The file the ranks read is the checked config: core reads back the same run.
    void configFileRoundTrip()
    {
        QTemporaryDir dir;
        const tb::TrainConfig checked = tb::loadTrainConfig(kConfig, {"dist.zero=2"});
        const QString path = tb::launchConfigPath(dir.filePath(QStringLiteral("runs/a")));
        QString error;
        QVERIFY2(tb::writeLaunchConfig(checked, path, &error), qPrintable(error));
        const tb::TrainConfig back = tb::loadTrainConfig(path.toStdString());
        QCOMPARE(tb::toJson(back), tb::toJson(checked));
        QCOMPARE(back.dist.zero, 2);
        QCOMPARE(back.model, checked.model);  // absolute: the file moved, the paths did not
        QCOMPARE(QDir(dir.filePath(QStringLiteral("runs/a"))).entryList(QDir::Files),
                 QStringList{QStringLiteral("launch-config.json")});  // no temporary left
        QFile blocker(dir.filePath(QStringLiteral("file")));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        const QString bad = dir.filePath(QStringLiteral("file/launch-config.json"));
        QVERIFY(!tb::writeLaunchConfig(checked, bad, &error));
        QVERIFY(error.startsWith(bad));
    }
};

QTEST_GUILESS_MAIN(TestLaunchOutput)
#include "test_launch_output.moc"
