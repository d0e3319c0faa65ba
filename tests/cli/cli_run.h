// Running the tunebench binary from a CLI test: its exit status and its stdout and stderr.
#pragma once

#include <QProcess>
#include <QStringList>

#include <string>

namespace tbtest {

struct CliRun {
    int exitCode = -1;  // -1: did not finish in time; -2: crashed
    std::string out, err;
};

inline CliRun runTunebench(const QStringList& args, int timeoutMs = 300000)
{
    QProcess p;
    p.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    CliRun r;
    if (!p.waitForFinished(timeoutMs))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput().toStdString();
    r.err = p.readAllStandardError().toStdString();
    return r;
}

}  // namespace tbtest
