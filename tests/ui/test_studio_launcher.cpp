// tunebench-studio, the studio's launcher (app/studio/launcher_main.cpp): it starts
// tunebench-studio-app with the same arguments, relays its output, exit status and SIGTERM, and
// when the studio cannot start (missing, a library the loader cannot find, not a program) says so
// in one line naming the reason (the dialog is off here: TB_NO_DIALOG). Stand-in studios are
// shell scripts; the last case starts the real one.
#include "test_util.h"

#include <QtTest>

#include <csignal>

namespace {

const QString kBin = QStringLiteral(TB_BINARY_DIR "/bin");

struct Run {
    int exitCode = -1;
    QString out, err;
};

Run run(const QString& program, const QStringList& args, int killAfterMs = -1)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("TB_NO_DIALOG"), QStringLiteral("1"));
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (killAfterMs >= 0) {
        p.waitForReadyRead(10000);  // the stand-in says when its trap is set
        QTest::qWait(killAfterMs);
        ::kill(pid_t(p.processId()), SIGTERM);
    }
    Run r;
    if (!p.waitForFinished(120000))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

// The launcher copied into a folder of its own, optionally with a stand-in studio beside it.
QString launcherIn(const QTemporaryDir& dir, const std::string& app = {})
{
    const QString launcher = dir.filePath(QStringLiteral("tunebench-studio"));
    QFile::copy(kBin + QStringLiteral("/tunebench-studio"), launcher);
    if (!app.empty()) {
        const QString path =
            QString::fromStdString(tbtest::writeText(dir, "tunebench-studio-app", app));
        QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    }
    return launcher;
}

}  // namespace

class TestStudioLauncher : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void missingStudio()
    {
        QTemporaryDir dir;
        const Run r = run(launcherIn(dir), {});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(
            r.err.startsWith(QStringLiteral("tunebench-studio: cannot start the studio: "
                                            "tunebench-studio-app is not installed (looked for ")),
            qPrintable(r.err));
        QVERIFY(r.err.contains(QStringLiteral("/lib/tunebench/tunebench-studio-app")));
    }

    void missingLibrary()
    {
        QTemporaryDir dir;
        const Run r = run(launcherIn(dir, "#!/bin/sh\n"
                                          "echo \"$0: error while loading shared libraries: "
                                          "libc10.so: cannot open shared object file: No such "
                                          "file or directory\" >&2\nexit 127\n"),
                          {});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("tunebench-studio: cannot start the studio: ") +
                                dir.path() +
                                QStringLiteral("/tunebench-studio-app: error while loading shared "
                                               "libraries: libc10.so: cannot open shared object")),
                 qPrintable(r.err));
    }

    void notAProgram()
    {
        QTemporaryDir dir;
        const Run r = run(launcherIn(dir, "this is not a program\n"), {});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains(QStringLiteral("cannot start the studio: cannot execute ") +
                                dir.path() +
                                QStringLiteral("/tunebench-studio-app: Exec format error")),
                 qPrintable(r.err));
    }

    // Arguments in, output and exit status out, unchanged; an exit of 127 without a loader
    // message is the studio's own status.
    void relaysArgumentsOutputAndStatus()
    {
        QTemporaryDir dir;
        const QString launcher =
            launcherIn(dir, "#!/bin/sh\necho \"args: $*\"\necho 'to stderr' >&2\nexit 3\n");
        Run r = run(launcher, {QStringLiteral("my store.tbstore"), QStringLiteral("--flag")});
        QCOMPARE(r.exitCode, 3);
        QCOMPARE(r.out, QStringLiteral("args: my store.tbstore --flag\n"));
        QCOMPARE(r.err, QStringLiteral("to stderr\n"));
    }

    void forwardsSigterm()
    {
        QTemporaryDir dir;
        const QString launcher =
            launcherIn(dir, "#!/bin/sh\ntrap 'exit 42' TERM\necho ready\nsleep 30 &\nwait\n");
        const Run r = run(launcher, {}, 200);
        QCOMPARE(r.exitCode, 42);
    }

    void startsTheRealStudio()
    {
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("shot.png"));
        const Run r =
            run(kBin + QStringLiteral("/tunebench-studio"), {QStringLiteral("--screenshot"), png});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(QFileInfo(png).size() > 10000);
    }
};

QTEST_GUILESS_MAIN(TestStudioLauncher)
#include "test_studio_launcher.moc"
