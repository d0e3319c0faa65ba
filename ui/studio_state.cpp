// StudioState: shared session data with change signals.
#include "studio_state.h"

#include "model_switch.h"

#include "util/file_util.h"
#include "util/paths.h"

#include <QDir>
#include <QFileInfo>

namespace tb {

QString jobStateName(StudioJobState state)
{
    switch (state) {
    case StudioJobState::Idle:
        return QObject::tr("Idle");
    case StudioJobState::Running:
        return QObject::tr("Training");
    case StudioJobState::Paused:
        return QObject::tr("Paused");
    case StudioJobState::Stopping:
        return QObject::tr("Stopping");
    case StudioJobState::Finished:
        return QObject::tr("Finished");
    case StudioJobState::Failed:
        return QObject::tr("Failed");
    }
    return {};
}

namespace {

// One spelling per folder, so "dir", "dir/" and a relative path name the same model.
QString folderKey(const QString& path)
{
    const QFileInfo info(path);
    const QString canonical = info.canonicalFilePath();
    return canonical.isEmpty() ? QDir::cleanPath(info.absoluteFilePath()) : canonical;
}

}  // namespace

StudioState::StudioState(QObject* parent)
    : QObject(parent), m_config(defaultConfig()),
      m_choicesModel(folderKey(QString::fromStdString(m_config.model)))
{
}

TrainConfig StudioState::defaultConfig()
{
    TrainConfig c;
    c.name = "studio";
    c.model = bundledModelDir();
    c.outputDir = joinPath(userDataDir(), "runs");  // the CLI's bundled examples' runs too
    c.method = Method::Lora;
    c.lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    c.data.trainFile = dataDir() + "/tiny/train.jsonl";
    c.data.valFile = dataDir() + "/tiny/val.jsonl";
    c.data.chatTemplate = ChatTemplateFamily::Alpaca;
    c.data.maxLength = 96;
    c.optim.lr = 0.01;
    c.optim.warmupSteps = 5;
    c.batchSize = 16;
    c.maxSteps = 200;
    c.evalEvery = 50;
    c.seed = 1;
    return c;
}

void StudioState::setModel(const QString& path, const std::optional<ModelConfig>& config,
                           bool ownChatTemplate, const QStringList& missing)
{
    m_modelPath = path;
    m_modelConfig = config;
    m_modelMissing = config ? missing : QStringList();
    m_config.model = path.toStdString();
    m_modelNote.clear();
    // A folder that did not load leaves the choices to the model they were made for.
    if (config) {
        const QString key = folderKey(path);
        if (key != m_choicesModel) {
            const auto resets = resetForModel(m_config, *config, ownChatTemplate,
                                              defaultConfig().data.chatTemplate);
            m_modelNote = modelSwitchNote(QFileInfo(key).fileName(), *config, resets);
            m_choicesModel = key;
        }
    }
    Q_EMIT modelChanged();
    Q_EMIT configChanged(nullptr);
}

QString StudioState::modelMissingText() const
{
    if (m_modelMissing.isEmpty())
        return {};
    QStringList parts;
    if (m_modelMissing.contains(QLatin1String("tokenizer")))
        parts << tr("no tokenizer (tokenizer.json or tokenizer.model)");
    if (m_modelMissing.contains(QLatin1String("weights")))
        parts << tr("no weights (model.safetensors)");
    const QString name = QFileInfo(m_modelPath).fileName();
    return tr("%1 is only part of a model: %2. Training and generation need a full model folder "
              "(config, tokenizer and weights); the Model, Method and Memory pages work from the "
              "config alone.")
        .arg(name, parts.join(tr(", ")));
}

void StudioState::setConfig(const TrainConfig& config, QObject* origin)
{
    if (!origin)
        m_choicesModel = folderKey(QString::fromStdString(config.model));
    if (config == m_config)
        return;
    m_config = config;
    Q_EMIT configChanged(origin);
}

void StudioState::updateConfig(const std::function<void(TrainConfig&)>& change, QObject* origin)
{
    TrainConfig c = m_config;
    change(c);
    setConfig(c, origin);
}

void StudioState::setRuns(const QStringList& runDirs)
{
    m_runs = runDirs;
    Q_EMIT runsChanged();
    if (!m_runs.contains(m_selectedRun))
        setSelectedRun(m_runs.isEmpty() ? QString() : m_runs.last());
}

void StudioState::addRun(const QString& runDir)
{
    if (!m_runs.contains(runDir)) {
        m_runs.append(runDir);
        Q_EMIT runsChanged();
    }
    setSelectedRun(runDir);
}

void StudioState::setSelectedRun(const QString& runDir)
{
    if (runDir == m_selectedRun)
        return;
    m_selectedRun = runDir;
    Q_EMIT selectedRunChanged();
}

void StudioState::setStorePath(const QString& path)
{
    if (path == m_storePath)
        return;
    m_storePath = path;
    Q_EMIT storePathChanged(path);
}

void StudioState::setLaunch(const LaunchSettings& launch, QObject* origin)
{
    if (launch == m_launch)
        return;
    m_launch = launch;
    Q_EMIT launchChanged(origin);
}

void StudioState::setJobState(StudioJobState state)
{
    if (state == m_jobState)
        return;
    m_jobState = state;
    Q_EMIT jobStateChanged(state);
}

void StudioState::setMemoryNow(qint64 bytes, const QString& source)
{
    Q_EMIT memoryNowChanged(bytes, source);
}

}  // namespace tb
