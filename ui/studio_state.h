// StudioState: the session every page shares (model, method and hyperparameters, dataset files,
// runs, job state); pages read it and announce changes through its signals, never through each
// other.
//
// One owner, no echo: a page changes the config through updateConfig(change, this); configChanged
// carries that origin, and the page that made the change does not rewrite its widgets in answer
// (they already show the value, and rewriting them would reset the user's cursor and uncommitted
// edits); it only refreshes what it derives from the config. Every other page (origin != itself)
// rewrites its widgets. Changes from outside any page (a project opened, the model, tests) have no
// origin: everyone updates.
#pragma once

#include "launch_command.h"
#include "model/config.h"
#include "tokenizer/chat_template.h"
#include "train/train_config.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>

namespace tb {

enum class StudioJobState { Idle, Running, Paused, Stopping, Finished, Failed };
QString jobStateName(StudioJobState state);

class StudioState : public QObject {
    Q_OBJECT
public:
    explicit StudioState(QObject* parent = nullptr);

    // The run config the studio starts from: LoRA on the bundled model and tiny dataset, a short
    // run.
    static TrainConfig defaultConfig();

    const QString& modelPath() const { return m_modelPath; }
    const std::optional<ModelConfig>& modelConfig() const { return m_modelConfig; }
    // A model folder opened (config: nullopt when it did not load; ownChatTemplate: whether it has
    // a chat template of its own). Opening a model other than
    // the one the config's choices were made for resets every option that depends on the
    // architecture to this model's defaults (model_switch.h), in the same change; reopening that
    // model (a project with its own model) keeps them. One modelChanged, one configChanged.
    // missing: what the folder lacks beside its config ("tokenizer", "weights"): a config alone
    // opens for the Model, Method and Memory pages; Train and Playground say what is missing.
    void setModel(const QString& path, const std::optional<ModelConfig>& config,
                  bool ownChatTemplate, const QStringList& missing = {});
    const QStringList& modelMissing() const { return m_modelMissing; }
    // "llama-3.1-8b is only part of a model: no tokenizer (…), no weights (…). …"; empty when the
    // open model has everything (or none is open).
    QString modelMissingText() const;
    // What the last setModel reset, as a sentence for the Model page ("Opened gpt2 (GPT-2): LoRA
    // targets q_proj, v_proj → c_attn; ..."); empty when it kept the config's choices.
    const QString& modelNote() const { return m_modelNote; }

    // The method, hyperparameters, dataset files and run shape (config.model follows setModel).
    // A config set from outside any page (origin nullptr: a project opened, a test) brings choices
    // made for its own config.model, which opening that model then keeps.
    const TrainConfig& config() const { return m_config; }
    void setConfig(const TrainConfig& config, QObject* origin = nullptr);
    void updateConfig(const std::function<void(TrainConfig&)>& change, QObject* origin = nullptr);

    // Run directories known to this session (newest last) and the one the Playground and Export
    // use.
    const QStringList& runs() const { return m_runs; }
    void setRuns(const QStringList& runDirs);
    void addRun(const QString& runDir);
    QString selectedRun() const { return m_selectedRun; }
    void setSelectedRun(const QString& runDir);

    // The project's dataset store (a .tbstore file) that the Data page shows; empty until one is
    // open.
    const QString& storePath() const { return m_storePath; }
    void setStorePath(const QString& path);

    // How many processes the next run trains in, and on which GPUs (the Train page's Processes
    // box); 1: in this process. The run's ZeRO stage is the config's dist.zero.
    const LaunchSettings& launch() const { return m_launch; }
    void setLaunch(const LaunchSettings& launch, QObject* origin = nullptr);

    StudioJobState jobState() const { return m_jobState; }
    void setJobState(StudioJobState state);

    // Tensor memory right now or at the last step (bytes) and where it was measured, for the status
    // bar.
    void setMemoryNow(qint64 bytes, const QString& source);

Q_SIGNALS:
    void modelChanged();
    void configChanged(QObject* origin);  // origin: the page that changed it, or nullptr
    void runsChanged();
    void selectedRunChanged();
    void jobStateChanged(tb::StudioJobState state);
    void storePathChanged(const QString& path);
    void launchChanged(QObject* origin);
    void memoryNowChanged(qint64 bytes, const QString& source);

private:
    QString m_modelPath;
    std::optional<ModelConfig> m_modelConfig;
    QStringList m_modelMissing;
    TrainConfig m_config;
    QString m_choicesModel;  // the model folder the config's architecture-dependent options fit
    QString m_modelNote;
    QStringList m_runs;
    QString m_selectedRun;
    QString m_storePath;
    LaunchSettings m_launch;
    StudioJobState m_jobState = StudioJobState::Idle;
};

}  // namespace tb
