// The studio's data-parallel launch, without widgets: how many processes and which GPUs a run takes
// (LaunchSettings), the `tunebench train --nproc N --config FILE` command that starts them, and the
// run config the ranks read, written atomically as JSON.
#pragma once

#include "train/train_config.h"

#include <QList>
#include <QString>
#include <QStringList>

#include <string>

namespace tb {

struct LaunchSettings {
    int processes = 1;  // 1: the run trains inside the studio (a TrainingJob); N > 1: N ranks
    QList<int> gpus;    // CUDA devices the ranks take, in order (empty: no CUDA, or every device)

    bool operator==(const LaunchSettings&) const = default;
};

struct LaunchCommand {
    QString program;          // the tunebench executable
    QStringList arguments;    // train --nproc N --config FILE
    QStringList environment;  // KEY=VALUE on top of the studio's own environment
    QString configPath;
};

// The command line beside the studio's own executable (QCoreApplication::applicationDirPath()):
// tunebench (the build tree), else tunebench-engine (installed: both in lib/tunebench/).
QString tunebenchBeside(const QString& applicationDir);

// Where the run config of a launched run is written: its run folder, launch-config.json.
QString launchConfigPath(const QString& runDir);

// The command for `s.processes` ranks reading `configPath`: local rank r takes the r-th chosen
// GPU (CUDA_VISIBLE_DEVICES lists them; it is left alone when none are chosen).
LaunchCommand buildLaunchCommand(const LaunchSettings& s, const QString& program,
                                 const QString& configPath);

// Why these settings cannot launch a run on `device` ("auto", "cuda", "cpu") with `cudaDevices`
// CUDA devices present; empty when they can. More processes than chosen GPUs on a CUDA run, or
// no GPU chosen while there are some, are refused here; the ranks check the rest themselves.
QString launchProblem(const LaunchSettings& s, int cudaDevices, const std::string& device);

// `checked` (a config as parseTrainConfig returned it: absolute paths) as the run config the ranks
// read, written atomically (QSaveFile: a temporary file renamed over the target); false with the
// reason.
bool writeLaunchConfig(const TrainConfig& checked, const QString& path, QString* error);

}  // namespace tb
