// Project files: {"tunebench_project": 1, "model", "dataset": {...}, "config": <run config>,
// "runs": [...]}.
#include "project.h"
#include "util/json_depth.h"

#include <QFile>
#include <QSaveFile>

#include <nlohmann/json.hpp>

#include <exception>

namespace tb {

namespace {
constexpr int kVersion = 1;
}

bool writeProject(const QString& path, const Project& project, QString* error)
{
    nlohmann::json j;
    j["tunebench_project"] = kVersion;
    j["model"] = project.modelPath.toStdString();
    j["dataset"] = {{"train_file", project.trainFile.toStdString()},
                    {"val_file", project.valFile.toStdString()},
                    {"store", project.storePath.toStdString()}};
    j["config"] = toJson(project.config);
    j["runs"] = nlohmann::json::array();
    for (const QString& r : project.runs)
        j["runs"].push_back(r.toStdString());
    QSaveFile file(path);
    const std::string text = j.dump(2) + "\n";
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(text.data(), qint64(text.size())) != qint64(text.size()) || !file.commit()) {
        if (error)
            *error = QObject::tr("%1: cannot write (%2)").arg(path, file.errorString());
        return false;
    }
    return true;
}

bool readProject(const QString& path, Project* project, QString* error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = QObject::tr("%1: cannot open (%2)").arg(path, file.errorString());
        return false;
    }
    try {
        const std::string text = file.readAll().toStdString();
        checkJsonDepth(text, path.toStdString());
        const nlohmann::json j = nlohmann::json::parse(text);
        if (!j.is_object() || !j.contains("tunebench_project"))
            throw std::runtime_error("not a Tunebench project (no 'tunebench_project' key)");
        if (j["tunebench_project"].get<int>() > kVersion)
            throw std::runtime_error("written by a newer Tunebench (version " +
                                     std::to_string(j["tunebench_project"].get<int>()) + ")");
        Project p;
        p.modelPath = QString::fromStdString(j.value("model", std::string()));
        if (j.contains("dataset")) {
            p.trainFile = QString::fromStdString(j["dataset"].value("train_file", std::string()));
            p.valFile = QString::fromStdString(j["dataset"].value("val_file", std::string()));
            p.storePath = QString::fromStdString(j["dataset"].value("store", std::string()));
        }
        // Core validates the config and names any bad key.
        if (j.contains("config"))
            p.config = parseTrainConfig(j["config"], path.toStdString());
        p.config.sourcePath.clear();
        for (const auto& r : j.value("runs", nlohmann::json::array()))
            p.runs << QString::fromStdString(r.get<std::string>());
        *project = p;
        return true;
    } catch (const std::exception& e) {
        if (error)
            *error = QObject::tr("%1: %2").arg(path, QString::fromUtf8(e.what()));
        return false;
    }
}

}  // namespace tb
