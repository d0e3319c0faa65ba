// Model page: folder picker, background loading of config and tokenizer, a summary tree.
#include "model_page.h"

#include "studio_state.h"

#include "model/config.h"
#include "model/safetensors.h"
#include "peft/trainable_count.h"
#include "tokenizer/tokenizer.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMimeData>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QSplitter>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <functional>

namespace tb {

ModelSummary summarizeModel(const QString& path)
{
    ModelSummary s;
    s.path = path;
    try {
        ModelConfig c = loadModelConfig(path.toStdString());
        s.architecture = QString::fromStdString(c.modelType);
        s.parameters = parameterCount(c);
        s.layers = c.numLayers;
        s.hiddenSize = c.hiddenSize;
        s.vocabSize = c.vocabSize;
        s.context = c.maxPositions;
        s.heads = c.numHeads;
        s.kvHeads = c.numKvHeads;
        s.dtype = QString::fromStdString(c.torchDtype);
        s.tokenizer = QString::fromStdString(loadTokenizer(path.toStdString())->kind());
        s.config = c;
        const Checkpoint checkpoint = Checkpoint::open(path.toStdString());
        for (const std::string& name : checkpoint.names()) {
            const TensorInfo* info = checkpoint.find(name)->info;
            ModelSummary::Tensor t;
            t.name = QString::fromStdString(name);
            t.dtype = QString::fromLatin1(dtypeName(info->dtype));
            for (int64_t d : info->shape)
                t.shape << d;
            s.tensors << t;
        }
    } catch (const std::exception& e) {
        s.error = QString::fromUtf8(e.what());
    }
    return s;
}

ModelPage::ModelPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
{
    auto* layout = new QVBoxLayout(this);
    auto* row = new QHBoxLayout();
    m_path = new QLineEdit(this);
    m_path->setPlaceholderText(tr("Model folder (config.json + safetensors)"));
    m_browse = new QPushButton(tr("Open…"), this);
    row->addWidget(m_path, 1);
    row->addWidget(m_browse);
    layout->addLayout(row);
    m_info = new QTreeWidget(this);
    m_info->setColumnCount(2);
    m_info->setHeaderLabels({tr("Property"), tr("Value")});
    m_info->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_info->setRootIsDecorated(false);
    setAcceptDrops(true);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_info);
    m_tensors = new QTreeWidget(split);
    m_tensors->setHeaderLabels({tr("Module / tensor"), tr("Shape"), tr("Parameters"), tr("Under the method")});
    m_tensors->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_tensors->setAlternatingRowColors(true);
    split->addWidget(m_tensors);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);
    if (m_state)
        connect(m_state, &StudioState::configChanged, this, &ModelPage::showTensors);
    m_status = new QLabel(this);
    layout->addWidget(m_status);

    connect(m_browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open model folder"), m_path->text());
        if (!dir.isEmpty())
            openModel(dir);
    });
    connect(m_path, &QLineEdit::returnPressed, this, [this] { openModel(m_path->text()); });
    connect(&m_watcher, &QFutureWatcher<ModelSummary>::finished, this, [this] {
        m_summary = m_watcher.result();
        showSummary(m_summary);
        Q_EMIT modelOpened(m_summary);
    });
}

void ModelPage::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls() && event->mimeData()->urls().first().isLocalFile())
        event->acceptProposedAction();
}

void ModelPage::dropEvent(QDropEvent* event)
{
    QString path = event->mimeData()->urls().first().toLocalFile();
    if (QFileInfo(path).isFile())
        path = QFileInfo(path).absolutePath();  // a dropped config.json or weight file opens its folder
    openModel(path);
    event->acceptProposedAction();
}

void ModelPage::openModel(const QString& path)
{
    m_path->setText(path);
    m_status->setText(tr("Loading %1…").arg(path));
    m_watcher.setFuture(QtConcurrent::run(summarizeModel, path));
}

void ModelPage::showSummary(const ModelSummary& s)
{
    m_info->clear();
    if (!s.error.isEmpty()) {
        m_status->setText(tr("Error: %1").arg(s.error));
        return;
    }
    auto add = [this](const QString& key, const QString& value) {
        new QTreeWidgetItem(m_info, {key, value});
    };
    add(tr("Architecture"), s.architecture);
    add(tr("Parameters"), QLocale().toString(s.parameters));
    add(tr("Layers"), QString::number(s.layers));
    add(tr("Hidden size"), QString::number(s.hiddenSize));
    add(tr("Attention heads"), tr("%1 (key/value %2)").arg(s.heads).arg(s.kvHeads));
    add(tr("Vocabulary"), QString::number(s.vocabSize));
    add(tr("Context length"), QString::number(s.context));
    add(tr("Stored dtype"), s.dtype);
    add(tr("Tokenizer"), s.tokenizer);
    add(tr("Tensors"), QString::number(s.tensors.size()));
    // The module tree: one node per dotted prefix, tensors as leaves with their shapes.
    m_tensors->clear();
    QHash<QString, QTreeWidgetItem*> nodes;
    for (const ModelSummary::Tensor& t : s.tensors) {
        const QStringList parts = t.name.split(QLatin1Char('.'));
        QTreeWidgetItem* parent = nullptr;
        QString prefix;
        for (int i = 0; i + 1 < parts.size(); ++i) {
            prefix += (prefix.isEmpty() ? QString() : QStringLiteral(".")) + parts[i];
            QTreeWidgetItem*& node = nodes[prefix];
            if (!node) {
                node = parent ? new QTreeWidgetItem(parent, {parts[i]}) : new QTreeWidgetItem(m_tensors, {parts[i]});
            }
            parent = node;
        }
        QStringList dims;
        qint64 numel = 1;
        for (qint64 d : t.shape) {
            dims << QString::number(d);
            numel *= d;
        }
        const QStringList columns{parts.last(), QStringLiteral("[%1] %2").arg(dims.join(QStringLiteral(", ")), t.dtype),
                                  QLocale().toString(numel)};
        auto* leaf = parent ? new QTreeWidgetItem(parent, columns) : new QTreeWidgetItem(m_tensors, columns);
        leaf->setData(0, Qt::UserRole, t.name);
        leaf->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
    }
    for (int i = 0; i < m_tensors->topLevelItemCount(); ++i)
        m_tensors->topLevelItem(i)->setExpanded(true);
    showTensors();
    m_status->setText(tr("Loaded %1").arg(s.path));
}

void ModelPage::showTensors()
{
    if (!m_state || !m_summary.config)
        return;
    // Core decides which checkpoint tensors train under the chosen method; a module shows its tensors' roles.
    const TrainConfig& run = m_state->config();
    const QColor trains(0x27, 0xae, 0x60), lora(0xe0, 0x7b, 0x39);
    std::function<QString(QTreeWidgetItem*)> mark = [&](QTreeWidgetItem* item) -> QString {
        QString role;
        if (item->childCount() == 0) {
            const std::string name = item->data(0, Qt::UserRole).toString().toStdString();
            role = QString::fromStdString(tensorTrainingRole(*m_summary.config, run, name));
        } else {
            QSet<QString> roles;
            for (int i = 0; i < item->childCount(); ++i)
                roles << mark(item->child(i));
            role = roles.size() == 1 ? *roles.begin() : tr("partly");
        }
        item->setText(3, role);
        item->setForeground(3, role == QLatin1String("trains") ? trains
                               : role == QLatin1String("LoRA") ? lora
                                                               : palette().color(QPalette::PlaceholderText));
        return role;
    };
    for (int i = 0; i < m_tensors->topLevelItemCount(); ++i)
        mark(m_tensors->topLevelItem(i));
}

} // namespace tb
