// Data parallelism with real processes on Gloo: 2 ranks against 1 process with the same global
// batch, ZeRO-1/2 against ZeRO-0, resuming on the same and another world size, a killed rank, a
// mismatched rank, torch's own launcher starting our binary, and the sampler's rule.
#include "cli/cli_run.h"
#include "dist/dist_env.h"
#include "dist/fingerprint.h"
#include "dist/sampler.h"
#include "model/safetensors.h"
#include "test_util.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <set>

using namespace tbtest;

namespace {

const QString kConfig = QStringLiteral(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json");
int g_port = 29700 + (QCoreApplication::applicationPid() % 200) * 10;

struct Rank {
    int exitCode = -1;
    std::string out, err;
};

QProcessEnvironment rankEnv(int rank, int world, int port)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));  // two ranks on two cores
    if (world > 0) {
        env.insert(QStringLiteral("RANK"), QString::number(rank));
        env.insert(QStringLiteral("WORLD_SIZE"), QString::number(world));
        env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
        env.insert(QStringLiteral("MASTER_PORT"), QString::number(port));
    }
    return env;
}

// `world` ranks of `tunebench train args...` (world 0: one plain process); per-rank extra args.
std::vector<Rank> train(int world, const QStringList& args,
                        const std::map<int, QStringList>& extra = {}, int timeoutMs = 300000)
{
    const int port = g_port++;
    const int n = std::max(world, 1);
    std::vector<std::unique_ptr<QProcess>> ps;
    for (int r = 0; r < n; ++r) {
        auto p = std::make_unique<QProcess>();
        p->setProcessEnvironment(rankEnv(r, world, port));
        QStringList a = QStringList{QStringLiteral("train")} + args;
        if (extra.count(r))
            a += extra.at(r);
        p->start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), a);
        ps.push_back(std::move(p));
    }
    std::vector<Rank> out(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
        auto& p = *ps[static_cast<size_t>(r)];
        if (!p.waitForFinished(timeoutMs)) {
            p.kill();
            p.waitForFinished();
        } else {
            out[size_t(r)].exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
        }
        out[size_t(r)].out = p.readAllStandardOutput().toStdString();
        out[size_t(r)].err = p.readAllStandardError().toStdString();
    }
    return out;
}

QStringList runArgs(const QTemporaryDir& dir, const QString& name, const QStringList& more)
{
    return QStringList{QStringLiteral("--config"),     kConfig,
                       QStringLiteral("name=") + name, QStringLiteral("output_dir=") + dir.path(),
                       QStringLiteral("eval_every=0"), QStringLiteral("log_every=100")} +
           more;
}

std::vector<QJsonObject> metrics(const QString& runDir)
{
    std::vector<QJsonObject> out;
    QFile f(runDir + QStringLiteral("/metrics.jsonl"));
    if (!f.open(QIODevice::ReadOnly))
        return out;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (!line.trimmed().isEmpty())
            out.push_back(QJsonDocument::fromJson(line).object());
    return out;
}

std::vector<double> losses(const QString& runDir)
{
    std::vector<double> out;
    for (const QJsonObject& m : metrics(runDir))
        if (m.contains(QStringLiteral("loss")) && m.contains(QStringLiteral("grad_norm")))
            out.push_back(m.value(QStringLiteral("loss")).toDouble());
    return out;
}

// The memory report's measured (or estimated) bytes of an item ("optimizer_states", "gradients").
int64_t measured(const QString& runDir, const QString& item,
                 const QString& which = QStringLiteral("measured"))
{
    for (const QJsonObject& m : metrics(runDir))
        if (m.value(QStringLiteral("type")).toString() == QStringLiteral("memory"))
            return static_cast<int64_t>(m.value(item).toObject().value(which).toDouble());
    return -1;
}

using Tensors = std::map<std::string, std::vector<float>>;

Tensors readTensors(const std::string& path)
{
    Tensors out;
    const auto file = tb::SafetensorsFile::open(path);
    for (const tb::TensorInfo& t : file->header().tensors) {
        const auto* p = reinterpret_cast<const float*>(file->data(t));
        out[t.name].assign(p, p + t.numel());
    }
    return out;
}

QString lastCheckpoint(const QString& runDir)
{
    QDir d(runDir + QStringLiteral("/checkpoints"));
    int best = -1;
    for (const QString& e : d.entryList({QStringLiteral("step-*")}, QDir::Dirs))
        best = std::max(best, e.mid(5).toInt());
    return d.filePath(QStringLiteral("step-") + QString::number(best));
}

double maxDiff(const Tensors& a, const Tensors& b)
{
    if (a.size() != b.size())
        return INFINITY;
    double m = 0;
    for (const auto& [name, va] : a) {
        const auto it = b.find(name);
        if (it == b.end() || it->second.size() != va.size())
            return INFINITY;
        for (size_t i = 0; i < va.size(); ++i)
            m = std::max(m, std::fabs(double(va[i]) - double(it->second[i])));
    }
    return m;
}

double maxLossDiff(const std::vector<double>& a, const std::vector<double>& b)
{
    if (a.size() != b.size() || a.empty())
        return INFINITY;
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i)
        m = std::max(m, std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i])));
    return m;
}

Tensors trainable(const QString& runDir)
{
    return readTensors(
        (lastCheckpoint(runDir) + QStringLiteral("/trainable.safetensors")).toStdString());
}

bool allOk(const std::vector<Rank>& ranks)
{
    bool ok = true;
    for (size_t r = 0; r < ranks.size(); ++r)
        if (ranks[r].exitCode != 0) {
            qWarning("rank %zu exited %d: %s", r, ranks[r].exitCode, ranks[r].err.c_str());
            ok = false;
        }
    return ok;
}

}  // namespace

class TestDist : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void samplerSharesEveryIndexOnce();
    void environmentIsChecked();
    void fingerprintNamesTheField();
    void twoRanksEqualOneProcess_data();
    void twoRanksEqualOneProcess();
    void zeroStagesEqualZero0();
    void resumeOnSameAndOtherWorldSize();
    void killedRankStopsTheOthers();
    void mismatchedRankStopsEveryRank();
    void torchrunStartsOurBinary();
    void badDistConfig();
    void runWithoutCheckpointRestartsFromZero();
    void tooFewSequencesForTheRanks();
    void ctrlCOnTheLauncherStopsEveryRank();
};

void TestDist::samplerSharesEveryIndexOnce()
{
    for (int world : {1, 2, 3, 8}) {
        for (int n : {0, 1, 2, 5, 7, 16, 33}) {
            std::vector<int64_t> global(static_cast<size_t>(n));
            for (int i = 0; i < n; ++i)
                global[size_t(i)] = 100 + i * 3;
            std::vector<int64_t> joined;
            size_t smallest = SIZE_MAX, largest = 0;
            for (int r = 0; r < world; ++r) {
                const auto share = tb::rankShare(global, r, world);
                smallest = std::min(smallest, share.size());
                largest = std::max(largest, share.size());
                joined.insert(joined.end(), share.begin(), share.end());
            }
            QCOMPARE(joined, global);  // contiguous, in rank order, each index once
            QVERIFY(largest - smallest <= 1);
        }
    }
    QVERIFY(contains(errorOf([] { tb::rankShare({1, 2}, 2, 2); }), "outside a world of 2"));
}

void TestDist::environmentIsChecked()
{
    QVERIFY(!tb::distEnvFrom({}));
    const auto d = tb::distEnvFrom({{"RANK", "1"},
                                    {"WORLD_SIZE", "4"},
                                    {"LOCAL_RANK", "1"},
                                    {"LOCAL_WORLD_SIZE", "2"},
                                    {"MASTER_ADDR", "10.0.0.5"},
                                    {"MASTER_PORT", "29400"}});
    QVERIFY(d);
    QCOMPARE(d->rank, 1);
    QCOMPARE(d->worldSize, 4);
    QCOMPARE(d->localWorldSize, 2);
    QCOMPARE(d->masterAddr, std::string("10.0.0.5"));
    QCOMPARE(d->masterPort, 29400);
    QVERIFY(contains(errorOf([] { tb::distEnvFrom({{"RANK", "0"}}); }), "WORLD_SIZE is not"));
    QVERIFY(contains(errorOf([] {
                         tb::distEnvFrom({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
                     }),
                     "RANK='2' is not an integer in 0..1"));
    QVERIFY(
        contains(errorOf([] {
                     tb::distEnvFrom({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}});
                 }),
                 "MASTER_PORT is not set"));
    QVERIFY(contains(errorOf([] {
                         tb::distEnvFrom({{"RANK", "0"},
                                          {"WORLD_SIZE", "2"},
                                          {"MASTER_ADDR", "h"},
                                          {"MASTER_PORT", "http"}});
                     }),
                     "MASTER_PORT='http'"));
}

void TestDist::fingerprintNamesTheField()
{
    const nlohmann::json a = {{"config", {{"lora", {{"rank", 8}}}, {"lr", 0.1}}}, {"data", "x"}};
    nlohmann::json b = a;
    QCOMPARE(tb::firstDifference(a, b), std::string());
    b["config"]["lora"]["rank"] = 4;
    QCOMPARE(tb::firstDifference(a, b), std::string("config.lora.rank (8 vs 4)"));
    nlohmann::json c = a;
    c["data"] = "y";
    const std::string e = errorOf([&] { tb::checkFingerprints({a.dump(), a.dump(), c.dump()}); });
    QVERIFY2(contains(e, "rank 2 differs from rank 0 in data (\"x\" vs \"y\")"), e.c_str());
}

void TestDist::twoRanksEqualOneProcess_data()
{
    QTest::addColumn<QString>("method");
    QTest::addColumn<double>("lossTolerance");
    QTest::addColumn<double>("weightTolerance");
    // The two runs differ only in fp32 summation order: one process sums 8 sequences' gradients in
    // one batch, two ranks sum 4 each and then the two halves. That is a few ulps (~1e-7
    // relative) per gradient; AdamW divides by sqrt(v), so early steps pass such differences
    // through at up to lr (0.01) per step. Measured over 6 steps: LoRA 2e-7 (loss, relative) and
    // 1.8e-5 (weights, max abs); full fine-tuning, whose every weight moves by lr per step, 3.3e-5
    // and 2.0e-4. The bounds are ten or more times those and far below a real bug (a lost rank's
    // gradient changes the loss by ~1e-1 from step 2).
    QTest::newRow("lora") << QStringLiteral("lora") << 1e-5 << 2e-4;
    QTest::newRow("full") << QStringLiteral("full") << 1e-3 << 2e-3;
}

void TestDist::twoRanksEqualOneProcess()
{
    QFETCH(QString, method);
    QFETCH(double, lossTolerance);
    QFETCH(double, weightTolerance);
    QTemporaryDir dir;
    const QStringList common{QStringLiteral("method=") + method, QStringLiteral("max_steps=6")};
    QVERIFY(allOk(train(0, runArgs(dir, QStringLiteral("one"),
                                   common + QStringList{QStringLiteral("batch_size=8")}))));
    const auto two = train(2, runArgs(dir, QStringLiteral("two"),
                                      common + QStringList{QStringLiteral("batch_size=4")}));
    QVERIFY(allOk(two));
    const auto a = losses(dir.filePath(QStringLiteral("one")));
    const auto b = losses(dir.filePath(QStringLiteral("two")));
    QCOMPARE(a.size(), size_t(6));
    QVERIFY2(maxLossDiff(a, b) < lossTolerance, qPrintable(QString::number(maxLossDiff(a, b))));
    const double w = maxDiff(trainable(dir.filePath(QStringLiteral("one"))),
                             trainable(dir.filePath(QStringLiteral("two"))));
    qInfo("%s: loss %.3g, weights %.3g (max abs difference)", qPrintable(method), maxLossDiff(a, b),
          w);
    QVERIFY2(w < weightTolerance, qPrintable(QString::number(w)));
    // The first step starts from the same weights and reads the same 8 sequences: the same loss
    // to print precision, and training moved it.
    QVERIFY(std::fabs(a[0] - b[0]) < 1e-6);
    QVERIFY(a.back() < a.front());
    // Rank 1 records its own progress and memory beside rank 0's metrics.jsonl: the same steps
    // and global losses.
    std::vector<double> rank1;
    QFile rankFile(dir.filePath(QStringLiteral("two/ranks/rank-1.jsonl")));
    QVERIFY(rankFile.open(QIODevice::ReadOnly));
    for (const QByteArray& line : rankFile.readAll().split('\n'))
        if (!line.trimmed().isEmpty()) {
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            QVERIFY(o.value(QStringLiteral("memory_peak_bytes")).toDouble() > 0);
            rank1.push_back(o.value(QStringLiteral("loss")).toDouble());
        }
    QCOMPARE(rank1, b);
    // One summary, from rank 0; rank 1 prints no step lines.
    QVERIFY(contains(two[0].out, "run "));
    QVERIFY(!contains(two[1].out, "step "));
}

void TestDist::zeroStagesEqualZero0()
{
    QTemporaryDir dir;
    const QStringList common{QStringLiteral("max_steps=5"), QStringLiteral("batch_size=4")};
    for (int zero : {0, 1, 2})
        QVERIFY(allOk(
            train(2, runArgs(dir, QStringLiteral("z%1").arg(zero),
                             common + QStringList{QStringLiteral("dist.zero=%1").arg(zero)}))));
    const QString z0 = dir.filePath(QStringLiteral("z0"));
    for (int zero : {1, 2}) {
        const QString z = dir.filePath(QStringLiteral("z%1").arg(zero));
        // Element-wise the same AdamW arithmetic on the same summed gradients; only the gradient
        // norm's squares are added in another order (over shards), in float64 on both sides, so
        // the clipping factor rounds the same (dist/grad_norm.h): in practice bit for bit (in
        // fp32 the factors differed by an ulp, and Adam took that to 1.4e-5 by step 5).
        const double loss = maxLossDiff(losses(z0), losses(z));
        const double weights = maxDiff(trainable(z0), trainable(z));
        qInfo("ZeRO-%d vs ZeRO-0: loss %.3g, weights %.3g (max abs difference)", zero, loss,
              weights);
        QVERIFY2(loss < 1e-6, qPrintable(QString::number(loss)));
        QVERIFY2(weights < 1e-6, qPrintable(QString::number(weights)));
        // Per rank, exactly half of ZeRO-0's optimizer states (46,304 trainable parameters:
        // one bucket, an even count, no padding); ZeRO-2 halves the gradients too.
        const int64_t states0 = measured(z0, QStringLiteral("optimizer_states"));
        QVERIFY(states0 > 0);
        QCOMPARE(measured(z, QStringLiteral("optimizer_states")) * 2, states0);
        const int64_t grads0 = measured(z0, QStringLiteral("gradients"));
        QCOMPARE(measured(z, QStringLiteral("gradients")) * (zero == 2 ? 2 : 1), grads0);
        QVERIFY(QFile::exists(lastCheckpoint(z) + QStringLiteral("/optimizer-rank-1.safetensors")));
    }
    // The planner's per-rank shares (docs/memory.md) are what each rank measured, exactly.
    for (int zero : {0, 1, 2})
        for (const QString& item :
             {QStringLiteral("optimizer_states"), QStringLiteral("gradients")}) {
            const QString z = dir.filePath(QStringLiteral("z%1").arg(zero));
            QCOMPARE(measured(z, item, QStringLiteral("estimated")), measured(z, item));
        }
}

void TestDist::resumeOnSameAndOtherWorldSize()
{
    QTemporaryDir dir;
    const QStringList common{QStringLiteral("max_steps=6"), QStringLiteral("batch_size=4"),
                             QStringLiteral("save_every=3"), QStringLiteral("keep_checkpoints=5"),
                             QStringLiteral("dist.zero=1"),
                             // Batches of similar length are cut for the global batch, so one
                             // process at batch_size 8 reads the two ranks' order (it read
                             // another before, cut for 8 where the ranks' was cut for 4).
                             QStringLiteral("data.group_by_length=true")};
    QVERIFY(allOk(train(2, runArgs(dir, QStringLiteral("whole"), common))));
    const QString whole = dir.filePath(QStringLiteral("whole"));
    for (const QString& name : {QStringLiteral("same"), QStringLiteral("one")}) {
        // A copy of the run as it stood at step 3 (the step-6 checkpoint removed).
        const QString copy = dir.filePath(name);
        QVERIFY(QProcess::execute(QStringLiteral("cp"), {QStringLiteral("-r"), whole, copy}) == 0);
        QVERIFY(QDir(copy + QStringLiteral("/checkpoints/step-6")).removeRecursively());
    }
    const auto same = train(2, {QStringLiteral("--resume"), dir.filePath(QStringLiteral("same"))});
    QVERIFY(allOk(same));
    QVERIFY(contains(same[0].err, "resumed from"));
    // The same world size on the CPU: bit-exact.
    QCOMPARE(maxDiff(trainable(whole), trainable(dir.filePath(QStringLiteral("same")))), 0.0);
    QCOMPARE(losses(dir.filePath(QStringLiteral("same"))), losses(whole));
    // One process from two ranks' ZeRO-1 shards: the moments re-assembled whole, batch_size 8 so
    // the global batch stays 8; equal within the summation-order tolerance of the test above.
    const auto one = train(0, {QStringLiteral("--resume"), dir.filePath(QStringLiteral("one"))});
    QVERIFY(allOk(one));
    QVERIFY2(contains(one[0].err, "batch_size 8 per rank keeps the global batch of 8"),
             one[0].err.c_str());
    QVERIFY(maxLossDiff(losses(dir.filePath(QStringLiteral("one"))), losses(whole)) < 1e-5);
    QVERIFY(maxDiff(trainable(whole), trainable(dir.filePath(QStringLiteral("one")))) < 2e-4);
}

void TestDist::killedRankStopsTheOthers()
{
    QTemporaryDir dir;
    const int port = g_port++;
    const QStringList args =
        QStringList{QStringLiteral("train")} +
        runArgs(dir, QStringLiteral("killed"),
                {QStringLiteral("max_steps=100000"), QStringLiteral("batch_size=2"),
                 QStringLiteral("save_every=5"), QStringLiteral("keep_checkpoints=3"),
                 QStringLiteral("dist.zero=2"), QStringLiteral("dist.timeout_s=10"),
                 QStringLiteral("log_every=1")});
    QProcess r0, r1;
    r0.setProcessEnvironment(rankEnv(0, 2, port));
    r1.setProcessEnvironment(rankEnv(1, 2, port));
    r0.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    r1.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    // Past a few checkpoints, then rank 1 dies mid-run.
    std::string out0;
    for (int i = 0; i < 600 && !contains(out0, "step 23/"); ++i) {
        r0.waitForReadyRead(100);
        out0 += r0.readAllStandardOutput().toStdString();
    }
    QVERIFY2(contains(out0, "step 23/"), out0.c_str());
    ::kill(static_cast<pid_t>(r1.processId()), SIGKILL);
    QElapsedTimer clock;
    clock.start();
    QVERIFY(r0.waitForFinished(60000));  // bounded: dist.timeout_s plus the heartbeat check
    r1.waitForFinished();
    const std::string err0 = r0.readAllStandardError().toStdString();
    QVERIFY(r0.exitCode() != 0);
    QVERIFY2(contains(err0, "rank 1"), err0.c_str());
    QVERIFY2(clock.elapsed() < 30000, qPrintable(QString::number(clock.elapsed())));
    // Every checkpoint folder is complete; resuming continues from the newest.
    const QString run = dir.filePath(QStringLiteral("killed"));
    const QString last = lastCheckpoint(run);
    QVERIFY(QFile::exists(last + QStringLiteral("/manifest.json")));
    QVERIFY(QFile::exists(last + QStringLiteral("/optimizer-rank-1.safetensors")));
    const int lastStep = QDir(last).dirName().mid(5).toInt();
    QVERIFY(lastStep >= 20);
    // Resuming continues after the newest complete checkpoint (not from step 1).
    QProcess s0, s1;
    s0.setProcessEnvironment(rankEnv(0, 2, port + 1));
    s1.setProcessEnvironment(rankEnv(1, 2, port + 1));
    s0.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"),
             {QStringLiteral("train"), QStringLiteral("--resume"), run});
    s1.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"),
             {QStringLiteral("train"), QStringLiteral("--resume"), run});
    std::string resumed;
    for (int i = 0;
         i < 600 && !contains(resumed, QStringLiteral("step %1/").arg(lastStep + 2).toStdString());
         ++i) {
        s0.waitForReadyRead(100);
        resumed += s0.readAllStandardOutput().toStdString();
    }
    QVERIFY2(contains(resumed, QStringLiteral("step %1/").arg(lastStep + 2).toStdString()),
             resumed.c_str());
    QVERIFY(!contains(resumed, "step 1/"));
    // Now rank 0, which holds the store, dies: rank 1 says so in one message, without c10d's
    // warning and its 20-frame C++ backtrace from the closed socket.
    s0.kill();
    s0.waitForFinished();
    QVERIFY(s1.waitForFinished(60000));
    const std::string err1 = s1.readAllStandardError().toStdString();
    QVERIFY(s1.exitCode() != 0);
    QVERIFY2(contains(err1, "rank 0"), err1.c_str());
    QVERIFY2(!contains(err1, "frame #") && !contains(err1, "Exception raised from"), err1.c_str());
}

void TestDist::mismatchedRankStopsEveryRank()
{
    QTemporaryDir dir;
    const auto ranks =
        train(2,
              runArgs(dir, QStringLiteral("mismatch"),
                      {QStringLiteral("max_steps=2"), QStringLiteral("batch_size=4")}),
              {{1, {QStringLiteral("lora.rank=4")}}});
    for (const Rank& r : ranks) {
        QVERIFY(r.exitCode != 0);
        QVERIFY2(contains(r.err, "rank 1 differs from rank 0 in config.lora.rank (8 vs 4)"),
                 r.err.c_str());
    }
    QVERIFY(losses(dir.filePath(QStringLiteral("mismatch"))).empty());  // nothing trained
}

void TestDist::torchrunStartsOurBinary()
{
    QTemporaryDir dir;
    QVERIFY(
        allOk(train(0, runArgs(dir, QStringLiteral("one"),
                               {QStringLiteral("max_steps=4"), QStringLiteral("batch_size=8")}))));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(TB_PYTHON),
            QStringList{QStringLiteral("-m"), QStringLiteral("torch.distributed.run"),
                        QStringLiteral("--nproc-per-node"), QStringLiteral("2"),
                        QStringLiteral("--master-port"), QString::number(g_port++),
                        QStringLiteral("--no-python"),
                        QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), QStringLiteral("train")} +
                runArgs(dir, QStringLiteral("torchrun"),
                        {QStringLiteral("max_steps=4"), QStringLiteral("batch_size=4")}));
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto a = losses(dir.filePath(QStringLiteral("one")));
    const auto b = losses(dir.filePath(QStringLiteral("torchrun")));
    QCOMPARE(b.size(), size_t(4));
    QVERIFY(maxLossDiff(a, b) < 1e-5);
    QFile info(dir.filePath(QStringLiteral("torchrun/run.json")));
    QVERIFY(info.open(QIODevice::ReadOnly));
    const QJsonObject dist =
        QJsonDocument::fromJson(info.readAll()).object().value(QStringLiteral("dist")).toObject();
    QCOMPARE(dist.value(QStringLiteral("world_size")).toInt(), 2);
    QCOMPARE(dist.value(QStringLiteral("backend")).toString(), QStringLiteral("gloo"));
}

void TestDist::badDistConfig()
{
    QTemporaryDir dir;
    const auto zero3 =
        train(0, runArgs(dir, QStringLiteral("z3"), {QStringLiteral("dist.zero=3")}));
    QVERIFY(zero3[0].exitCode != 0);
    QVERIFY2(contains(zero3[0].err, "dist.zero") && contains(zero3[0].err, "3 is not offered"),
             zero3[0].err.c_str());
    const auto dpo = train(2, {QStringLiteral("--config"),
                               QStringLiteral(TB_SOURCE_DIR "/datasets/examples/dpo-tiny.json"),
                               QStringLiteral("output_dir=") + dir.path()});
    QVERIFY(dpo[0].exitCode != 0);
    QVERIFY2(contains(dpo[0].err, "data parallelism"), dpo[0].err.c_str());
    // Rank 1 cannot reach a store that nobody hosts: it fails naming the address.
    QProcess lone;
    lone.setProcessEnvironment(rankEnv(1, 2, 1));  // port 1: nothing listens there
    QStringList args = QStringList{QStringLiteral("train")} +
                       runArgs(dir, QStringLiteral("lone"), {QStringLiteral("dist.timeout_s=2")});
    lone.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    QVERIFY(lone.waitForFinished(60000));
    const std::string err = lone.readAllStandardError().toStdString();
    QVERIFY(lone.exitCode() != 0);
    QVERIFY2(contains(err, "cannot reach the store at 127.0.0.1:1"), err.c_str());
}

void TestDist::runWithoutCheckpointRestartsFromZero()
{
    QTemporaryDir dir;
    QVERIFY(allOk(train(0, runArgs(dir, QStringLiteral("r"), {QStringLiteral("max_steps=3")}))));
    const QString run = dir.filePath(QStringLiteral("r"));
    const auto before = losses(run);
    // As if killed before its first checkpoint: run.json and some metrics, no checkpoint.
    QVERIFY(QDir(run + QStringLiteral("/checkpoints")).removeRecursively());
    const QString metrics = run + QStringLiteral("/metrics.jsonl");
    QVERIFY(QFile::resize(metrics, QFileInfo(metrics).size() / 2));  // cut mid-run as well
    QVERIFY(losses(run).size() < before.size());
    const auto again = train(0, {QStringLiteral("--resume"), run});
    QVERIFY(allOk(again));
    QVERIFY2(contains(again[0].err, "starting it again from step 0"), again[0].err.c_str());
    QCOMPARE(before.size(), size_t(3));
    QCOMPARE(losses(run), before);  // the same seeded run, its metrics from step 0 only
    QVERIFY(QFileInfo::exists(run + QStringLiteral("/checkpoints/step-3")));  // trained again
}

void TestDist::tooFewSequencesForTheRanks()
{
    QTemporaryDir dir;
    const std::string file =
        writeText(dir, "one.jsonl", "{\"instruction\": \"Hi\", \"output\": \"Hello.\"}\n");
    const auto ranks =
        train(2, runArgs(dir, QStringLiteral("few"),
                         {QStringLiteral("data.train_file=") + QString::fromStdString(file),
                          QStringLiteral("data.val_file=") + QString::fromStdString(file)}));
    for (const Rank& r : ranks) {
        QVERIFY(r.exitCode != 0);
        QVERIFY2(contains(r.err, "2 ranks but the training set has 1 sequence(s)"), r.err.c_str());
    }
}

void TestDist::ctrlCOnTheLauncherStopsEveryRank()
{
    QTemporaryDir dir;
    QProcess launcher;
    QProcessEnvironment env = rankEnv(0, 0, 0);
    launcher.setProcessEnvironment(env);
    launcher.start(
        QStringLiteral(TB_BINARY_DIR "/bin/tunebench"),
        QStringList{QStringLiteral("train"), QStringLiteral("--nproc"), QStringLiteral("2")} +
            runArgs(dir, QStringLiteral("sigint"),
                    {QStringLiteral("max_steps=100000"), QStringLiteral("batch_size=2"),
                     QStringLiteral("log_every=1")}));
    std::string out;
    for (int i = 0; i < 600 && !contains(out, "step 5/"); ++i) {
        launcher.waitForReadyRead(100);
        out += launcher.readAllStandardOutput().toStdString();
    }
    QVERIFY2(contains(out, "step 5/"), out.c_str());
    ::kill(static_cast<pid_t>(launcher.processId()), SIGINT);
    QVERIFY(launcher.waitForFinished(60000));
    out += launcher.readAllStandardOutput().toStdString();
    const std::string err = launcher.readAllStandardError().toStdString();
    // 130, the shell's status for an interrupted command: a script tells it from a finished run.
    QVERIFY2(launcher.exitCode() == 130, err.c_str());
    QVERIFY2(!contains(err, "exited with status"), err.c_str());
    // Both ranks stopped after the same step: one checkpoint there, with both shards' step.
    const QString run = dir.filePath(QStringLiteral("sigint"));
    const QString last = lastCheckpoint(run);
    QVERIFY(QFile::exists(last + QStringLiteral("/manifest.json")));
    const int stopped = QDir(last).dirName().mid(5).toInt();
    QVERIFY(stopped >= 5);
    QVERIFY2(
        contains(out, QStringLiteral("run %1: stopped after step %2 (checkpoint saved; continue "
                                     "with tunebench train --resume %1), %2 steps")
                          .arg(run)
                          .arg(stopped)
                          .toStdString()),
        out.c_str());
    std::vector<double> rank1;
    QFile rankFile(run + QStringLiteral("/ranks/rank-1.jsonl"));
    QVERIFY(rankFile.open(QIODevice::ReadOnly));
    int64_t lastRank1 = 0;
    for (const QByteArray& line : rankFile.readAll().split('\n'))
        if (!line.trimmed().isEmpty())
            lastRank1 =
                QJsonDocument::fromJson(line).object().value(QStringLiteral("step")).toInteger();
    QCOMPARE(lastRank1, int64_t(stopped));
}

QTEST_MAIN(TestDist)
#include "test_dist.moc"
