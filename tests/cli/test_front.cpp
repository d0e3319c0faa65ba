// The command line's two executables (cli/cli.h): the front, `tunebench`, runs the commands that
// need no LibTorch without loading it and hands the others to `tunebench-engine`, found next to it
// (the build tree) or in ../lib/tunebench/ (installed). In an installed layout the bundled data is
// found under share/tunebench/ and a bundled example's runs go to the user's XDG data folder.
#include "test_util.h"
#include "util/paths.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

const QString kBin = QStringLiteral(TB_BINARY_DIR "/bin");

struct Run {
    int exitCode = -1;  // -1: did not finish, -2: crashed
    std::string out, err;
};

Run run(const QString& program, const QStringList& args,
        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    Run r;
    if (!p.waitForFinished(180000))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

bool copyTree(const QString& from, const QString& to)
{
    QDir().mkpath(to);
    const QDir source(from);
    for (const QFileInfo& entry :
         source.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString target = to + QChar('/') + entry.fileName();
        if (entry.isDir() ? !copyTree(entry.filePath(), target)
                          : !QFile::copy(entry.filePath(), target))
            return false;
    }
    return true;
}

// The files under a folder, relative to it.
QStringList filesUnder(const QString& dir)
{
    QStringList files;
    QDirIterator it(dir, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext())
        files << QDir(dir).relativeFilePath(it.next());
    files.sort();
    return files;
}

}  // namespace

class TestFront : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The front's dynamic section names no LibTorch library (readelf, binutils).
    void frontLinksNoLibTorch()
    {
        const Run r = run(QStringLiteral("readelf"), {QStringLiteral("-d"), kBin + "/tunebench"});
        if (r.exitCode != 0)
            QSKIP("readelf (binutils) is not installed");
        QVERIFY2(tbtest::contains(r.out, "libsqlite3"), r.out.c_str());  // it did list the NEEDED
        for (const char* lib : {"libtorch", "libc10", "libcuda", "libgomp", "libQt"})
            QVERIFY2(!tbtest::contains(r.out, lib), lib);
        const Run engine =
            run(QStringLiteral("readelf"), {QStringLiteral("-d"), kBin + "/tunebench-engine"});
        QVERIFY(tbtest::contains(engine.out, "libc10"));
    }

    // Alone (no engine beside it), the front still runs its own commands, and names what is
    // missing for the others in one line; a broken engine is reported with the reason.
    void frontWithoutEngine()
    {
        QTemporaryDir dir;
        const QString front = dir.path() + "/tunebench";
        QVERIFY(QFile::copy(kBin + "/tunebench", front));
        Run r = run(front, {"data", "help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(tbtest::contains(r.out, "usage: tunebench data <subcommand>"));
        r = run(front, {"info", "--json"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(nlohmann::json::parse(r.out).value("parameters", int64_t(0)), int64_t(260032));
        // COMMAND --help: that command's usage, engine commands included (no engine needed).
        r = run(front, {"train", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(tbtest::contains(r.out, "usage: tunebench train") &&
                     tbtest::contains(r.out, "--resume RUN_DIR") &&
                     tbtest::contains(r.out, "--nproc N") && !tbtest::contains(r.out, "export"),
                 r.out.c_str());
        r = run(front, {"eval", "suite", "-h"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(tbtest::contains(r.out, "eval suite --run RUN") &&
                     tbtest::contains(r.out, "eval compare") && !tbtest::contains(r.out, "reward"),
                 r.out.c_str());
        r = run(front, {"info", "--model", "x", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(tbtest::contains(r.out, "info      --model PATH") &&
                     tbtest::contains(r.out, "bundled stories260k") &&
                     !tbtest::contains(r.out, "tokenize"),
                 r.out.c_str());
        r = run(front, {"data", "import", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(tbtest::contains(r.out, "usage: tunebench data <subcommand>"));
        r = run(front, {"data", "pairs", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(tbtest::contains(r.out, "data pairs"), r.out.c_str());
        r = run(front, {"frobnicate", "--help"});
        QCOMPARE(r.exitCode, 1);
        r = run(front, {"frobnicate"});
        QCOMPARE(r.exitCode, 1);
        QCOMPARE(r.err,
                 std::string("tunebench: unknown command 'frobnicate' (see tunebench help)\n"));

        r = run(front, {"generate", "--prompt", "Once"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(tbtest::contains(r.err, "needs tunebench-engine, which is not installed"),
                 r.err.c_str());
        QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1L);

        // data synth runs a model: it is the engine's, so it too needs the engine.
        r = run(front, {"data", "synth", "--store", dir.path() + "/s.tbstore"});
        QVERIFY2(tbtest::contains(r.err, "needs tunebench-engine"), r.err.c_str());

        tbtest::writeText(dir, "tunebench-engine", "not a program\n");
        QFile::setPermissions(dir.path() + "/tunebench-engine",
                              QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        r = run(front, {"train", "--config", "x.json"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(tbtest::contains(r.err, "cannot run " + dir.path().toStdString() +
                                             "/tunebench-engine: Exec format error"),
                 r.err.c_str());
    }

    // The XDG rule for the user's data folder, which paths move there, and the start-up check of
    // it (a folder that cannot be made is named with the reason).
    void userDataFolder()
    {
        QTemporaryDir dir;
        const QByteArray oldXdg = qgetenv("XDG_DATA_HOME"), oldHome = qgetenv("HOME");
        qputenv("XDG_DATA_HOME", (dir.path() + "/xdg").toUtf8());
        QCOMPARE(QString::fromStdString(tb::userDataDir()), dir.path() + "/xdg/tunebench");
        QCOMPARE(tb::userDataDirProblem(), std::string());
        QVERIFY(QFileInfo(dir.path() + "/xdg/tunebench").isDir());
        QCOMPARE(QDir(dir.path() + "/xdg/tunebench")
                     .entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList());  // the write probe is removed

        qputenv("XDG_DATA_HOME", "relative/ignored");  // the spec: only absolute paths count
        qputenv("HOME", dir.path().toUtf8());
        QCOMPARE(QString::fromStdString(tb::userDataDir()), dir.path() + "/.local/share/tunebench");

        tbtest::writeText(dir, "a-file", "x");
        qputenv("XDG_DATA_HOME", (dir.path() + "/a-file/data").toUtf8());
        const std::string problem = tb::userDataDirProblem();
        QVERIFY2(tbtest::contains(problem, "cannot create the data folder " +
                                               dir.path().toStdString() + "/a-file/data/tunebench"),
                 problem.c_str());

        // A source-tree build keeps every output path; an installed data folder's share/ moves.
        qputenv("XDG_DATA_HOME", (dir.path() + "/xdg").toUtf8());
        qunsetenv("TUNEBENCH_DATA_DIR");
        QCOMPARE(tb::userOutputPath(TB_SOURCE_DIR "/runs"), std::string(TB_SOURCE_DIR "/runs"));
        qputenv("TUNEBENCH_DATA_DIR", (dir.path() + "/usr/share/tunebench/datasets").toUtf8());
        QCOMPARE(QString::fromStdString(
                     tb::userOutputPath((dir.path() + "/usr/share/tunebench/runs").toStdString())),
                 dir.path() + "/xdg/tunebench/runs");
        QCOMPARE(tb::userOutputPath("/srv/runs"), std::string("/srv/runs"));
        qunsetenv("TUNEBENCH_DATA_DIR");
        qputenv("XDG_DATA_HOME", oldXdg);
        qputenv("HOME", oldHome);
    }

    // The installed layout: bin/tunebench, lib/tunebench/tunebench-engine,
    // share/tunebench/datasets. Both find the data there; the bundled example trains into
    // $XDG_DATA_HOME/tunebench/runs and nothing is written under share/.
    void installedLayout()
    {
        QTemporaryDir prefix;
        QVERIFY(QDir().mkpath(prefix.path() + "/bin"));
        QVERIFY(QDir().mkpath(prefix.path() + "/lib/tunebench"));
        QVERIFY(QFile::copy(kBin + "/tunebench", prefix.path() + "/bin/tunebench"));
        QVERIFY(QFile::copy(kBin + "/tunebench-engine",
                            prefix.path() + "/lib/tunebench/tunebench-engine"));
        const QString data = prefix.path() + "/share/tunebench/datasets";
        QVERIFY(copyTree(QStringLiteral(TB_SOURCE_DIR "/datasets/examples"), data + "/examples"));
        QVERIFY(copyTree(QStringLiteral(TB_SOURCE_DIR "/datasets/tiny"), data + "/tiny"));
        QVERIFY(copyTree(QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k"),
                         data + "/models/stories260k"));
        const QStringList before = filesUnder(prefix.path() + "/share");

        QTemporaryDir home;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("TUNEBENCH_DATA_DIR");
        env.insert("XDG_DATA_HOME", home.path() + "/data");
        const QString tb = prefix.path() + "/bin/tunebench";

        Run r = run(tb, {"template", "render", "--messages", "/nonexistent.json"}, env);
        QCOMPARE(r.exitCode, 1);  // the front's own command, with the installed bundled model
        QVERIFY2(tbtest::contains(r.err, "/nonexistent.json"), r.err.c_str());

        r = run(tb,
                {"train", "--config", data + "/examples/lora-tiny.json", "max_steps=2",
                 "eval_every=0", "name=installed", "--json"},
                env);
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const QString runDir = home.path() + "/data/tunebench/runs/installed";
        QVERIFY2(QFileInfo(runDir + "/run.json").isFile(), r.out.c_str());
        // The engine, in lib/tunebench/, used the installed model (the run records its folder).
        const auto runJson =
            nlohmann::json::parse(tb::readFile((runDir + "/run.json").toStdString()));
        QVERIFY2(tbtest::contains(runJson.dump(), data.toStdString() + "/models/stories260k"),
                 runJson.dump().c_str());
        QCOMPARE(filesUnder(prefix.path() + "/share"), before);
    }
};

QTEST_GUILESS_MAIN(TestFront)
#include "test_front.moc"
