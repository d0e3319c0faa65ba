// A Tunebench project file (.tunebench, JSON): the model, the dataset files, the method and
// hyperparameters (core's run config) and the runs. Written atomically (QSaveFile).
#pragma once

#include "train/train_config.h"

#include <QString>
#include <QStringList>

namespace tb {

struct Project {
    QString modelPath;
    QString trainFile, valFile;  // JSONL dataset files
    QString storePath;           // the project's dataset store (SQLite)
    TrainConfig config;          // method, hyperparameters, output folder
    QStringList runs;            // run directories
};

// Throws nothing: returns false and sets error (naming the file and what was wrong).
bool writeProject(const QString& path, const Project& project, QString* error);
bool readProject(const QString& path, Project* project, QString* error);

}  // namespace tb
