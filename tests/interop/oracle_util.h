// Shared by the interop tests: running a Python oracle script of tests/interop/ in the pinned venv,
// and training the short runs whose exports the oracles load.
#pragma once

#include "train/job.h"
#include "train/train_config.h"

#include <QProcess>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace tbtest {

// Runs tests/interop/<script> with `args`; returns its stdout, or sets *error to why it failed.
inline QByteArray runOracleScript(const QString& script, const QStringList& args, QString* error)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::SeparateChannels);
    // Tiny models: one thread is fastest, and spinning OpenMP threads crawl on a busy 2-core
    // machine.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    // No progress bars: a failure's message is the end of stderr, which they would fill.
    env.insert(QStringLiteral("TQDM_DISABLE"), QStringLiteral("1"));
    env.insert(QStringLiteral("HF_HUB_DISABLE_PROGRESS_BARS"), QStringLiteral("1"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(TB_PYTHON),
            QStringList{QStringLiteral(TB_SOURCE_DIR "/tests/interop/") + script} + args);
    if (!p.waitForFinished(300000)) {
        *error = QStringLiteral("%1 %2 did not finish").arg(script, args.value(0));
        return {};
    }
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        // How it ended, then the end of stderr: a traceback's last lines say what failed.
        const QString how = p.exitStatus() == QProcess::NormalExit
                                ? QStringLiteral("exit code %1").arg(p.exitCode())
                                : QStringLiteral("crashed");
        *error = QStringLiteral("%1 %2 failed (%3):\n%4")
                     .arg(script, args.value(0), how,
                          QString::fromUtf8(p.readAllStandardError().right(900)));
        return {};
    }
    return p.readAllStandardOutput();
}

// A 4-step run of datasets/examples/<example>-tiny.json into runsDir/name (CPU, constant LR, seed
// 3), with `overrides` after those; returns the run folder, or "" with the reason appended to
// *errors.
inline std::string trainTinyRun(const std::string& runsDir, const char* example,
                                const std::string& name, std::vector<std::string> overrides,
                                QString* errors)
{
    overrides.insert(overrides.begin(),
                     {"output_dir=" + runsDir, "name=" + name, "device=cpu", "max_steps=4",
                      "batch_size=8", "optim.warmup_steps=0", "optim.schedule=constant",
                      "eval_every=0", "data.general_file=", "seed=3"});
    tb::TrainConfig config = tb::loadTrainConfig(
        std::string(TB_SOURCE_DIR "/datasets/examples/") + example + "-tiny.json", overrides);
    tb::TrainingJob job(config, nullptr);
    job.runHere();
    if (job.state() != tb::JobState::Finished) {
        *errors += QString::fromStdString(name + ": " + job.error() + "\n");
        return {};
    }
    return job.summary().runDir;
}

}  // namespace tbtest
