// The launch command and its config file.
#include "launch_command.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QSaveFile>

namespace tb {

QString tunebenchBeside(const QString& applicationDir)
{
    const QDir dir(applicationDir);
    const QString front = dir.filePath(QStringLiteral("tunebench"));
    const QString engine = dir.filePath(QStringLiteral("tunebench-engine"));
    // Installed, the studio and the engine share lib/tunebench/ (the front is in bin/).
    return !QFileInfo(front).isExecutable() && QFileInfo(engine).isExecutable() ? engine : front;
}

QString launchConfigPath(const QString& runDir)
{
    return QDir(runDir).filePath(QStringLiteral("launch-config.json"));
}

LaunchCommand buildLaunchCommand(const LaunchSettings& s, const QString& program,
                                 const QString& configPath)
{
    LaunchCommand c;
    c.program = program;
    c.configPath = configPath;
    c.arguments = {QStringLiteral("train"), QStringLiteral("--nproc"), QString::number(s.processes),
                   QStringLiteral("--config"), configPath};
    if (!s.gpus.isEmpty()) {
        QStringList ids;
        for (int g : s.gpus)
            ids << QString::number(g);
        c.environment << QStringLiteral("CUDA_VISIBLE_DEVICES=") + ids.join(QLatin1Char(','));
    }
    return c;
}

QString launchProblem(const LaunchSettings& s, int cudaDevices, const std::string& device)
{
    if (s.processes < 2)
        return QCoreApplication::translate("tb::LaunchSettings",
                                           "a launch takes 2 or more processes, not %1")
            .arg(s.processes);
    if (device == "cpu" || cudaDevices <= 0)
        return {};
    if (s.gpus.isEmpty())
        return QCoreApplication::translate("tb::LaunchSettings",
                                           "choose the GPUs the %1 processes train on")
            .arg(s.processes);
    for (int g : s.gpus)
        if (g < 0 || g >= cudaDevices)
            return QCoreApplication::translate("tb::LaunchSettings",
                                               "GPU %1 does not exist (%2 CUDA devices)")
                .arg(g)
                .arg(cudaDevices);
    if (s.processes > s.gpus.size())
        return QCoreApplication::translate("tb::LaunchSettings",
                                           "%1 processes need %1 GPUs, %2 chosen (one GPU per "
                                           "process)")
            .arg(s.processes)
            .arg(s.gpus.size());
    return {};
}

bool writeLaunchConfig(const TrainConfig& checked, const QString& path, QString* error)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSaveFile file(path);
    const std::string text = toJson(checked).dump(2) + "\n";
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(text.data(), qint64(text.size())) != qint64(text.size()) || !file.commit()) {
        if (error)
            *error = QStringLiteral("%1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

}  // namespace tb
