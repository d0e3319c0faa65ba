// Model page: folder picker, background loading of config and tokenizer, a summary tree.
#include "model_page.h"

#include "tokenizer/model_template.h"

#include "catalog_chooser.h"
#include "studio_state.h"

#include "model/config.h"
#include "model/config_tree.h"
#include "model/layer_list.h"
#include "model/rope_text.h"
#include "model/safetensors.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "tokenizer/tokenizer.h"
#include "util/file_util.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QPushButton>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <functional>

namespace tb {

namespace {

// The checkpoint's tensors from its safetensors headers.
void readCheckpoint(const std::string& dir, ModelSummary& s)
{
    const Checkpoint checkpoint = Checkpoint::open(dir);
    for (const std::string& name : checkpoint.names()) {
        const TensorInfo* info = checkpoint.find(name)->info;
        ModelSummary::Tensor t;
        t.name = QString::fromStdString(name);
        t.dtype = QString::fromLatin1(dtypeName(info->dtype));
        for (int64_t d : info->shape)
            t.shape << d;
        s.tensors << t;
    }
}

// No weights: the tensors a checkpoint of the config holds, in the dtype config.json names.
void readConfigTensors(const ModelConfig& c, ModelSummary& s)
{
    s.tensorsFromConfig = true;
    for (const ConfigTensor& ct : configTensors(c)) {
        ModelSummary::Tensor t;
        t.name = QString::fromStdString(ct.name);
        t.dtype = QString::fromStdString(c.torchDtype);
        for (int64_t d : ct.shape)
            t.shape << d;
        s.tensors << t;
    }
}

}  // namespace

ModelSummary summarizeModel(const QString& path)
{
    ModelSummary s;
    s.path = path;
    // A config.json opens its folder; another config file stands alone.
    const QFileInfo info(path);
    if (info.isFile() && info.fileName() == QLatin1String("config.json"))
        s.path = info.absolutePath();
    const std::string dir = QFileInfo(s.path).isDir() ? s.path.toStdString() : std::string();
    auto has = [&dir](std::initializer_list<const char*> files) {
        for (const char* f : files)
            if (!dir.empty() && fileExists(joinPath(dir, f)))
                return true;
        return false;
    };
    try {
        ModelConfig c = loadModelConfig(s.path.toStdString());
        s.architecture = QString::fromStdString(c.modelType);
        s.parameters = parameterCount(c);
        s.layers = c.numLayers;
        s.hiddenSize = c.hiddenSize;
        s.vocabSize = c.vocabSize;
        s.context = c.maxPositions;
        s.heads = c.numHeads;
        s.kvHeads = c.numKvHeads;
        s.dtype = QString::fromStdString(c.torchDtype);
        s.config = c;
        // Read through the folder caches, so the counts the method and memory pages ask for on
        // the GUI thread find them read (peft/trainable_tokens.h).
        if (has({"tokenizer.model", "tokenizer.json"}))
            s.tokenizer = QString::fromStdString(folderTokenizer(dir)->kind());
        else
            s.missing << QStringLiteral("tokenizer");
        if (!dir.empty()) {
            folderEndOfTurnTokens(dir);
            try {
                if (const auto own = ChatTemplate::fromModel(dir)) {
                    s.ownChatTemplate = true;
                    s.chatTemplateOrigin = QString::fromStdString(own->origin());
                    s.stopTokens = own->endOfTurnTokens();
                }
            } catch (const std::exception& e) {
                s.chatTemplateError = QString::fromUtf8(e.what());
            }
        }
        if (has({"model.safetensors", "model.safetensors.index.json"})) {
            readCheckpoint(dir, s);
        } else {
            s.missing << QStringLiteral("weights");
            readConfigTensors(c, s);
        }
    } catch (const std::exception& e) {
        s.error = QString::fromUtf8(e.what());
    }
    return s;
}

ModelPage::ModelPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
{
    auto* layout = new QVBoxLayout(this);
    // What opening this model reset: a note above the trees, not a dialog.
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("modelNote"));
    m_note->setWordWrap(true);
    m_note->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_note->setFrameShape(QFrame::StyledPanel);
    m_note->setContentsMargins(6, 4, 6, 4);
    m_note->hide();
    auto* row = new QHBoxLayout();
    m_path = new QLineEdit(this);
    m_path->setPlaceholderText(tr("Model folder (config.json + safetensors)"));
    m_browse = new QPushButton(tr("Open…"), this);
    row->addWidget(m_path, 1);
    row->addWidget(m_browse);
    layout->addLayout(row);
    layout->addWidget(m_note);
    m_info = new QStandardItemModel(0, 2, this);
    m_info->setHorizontalHeaderLabels({tr("Property"), tr("Value")});
    setAcceptDrops(true);
    auto* split = new QSplitter(Qt::Horizontal, this);
    m_infoView = new QTreeView(split);
    m_infoView->setModel(m_info);
    m_infoView->setRootIsDecorated(false);
    m_infoView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_infoView->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    split->addWidget(m_infoView);
    m_tensors = new QStandardItemModel(0, 4, this);
    m_tensors->setHorizontalHeaderLabels(
        {tr("Module / tensor"), tr("Shape"), tr("Parameters"), tr("Under the method")});
    m_tensorView = new QTreeView(split);
    m_tensorView->setModel(m_tensors);
    m_tensorView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_tensorView->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_tensorView->setAlternatingRowColors(true);
    split->addWidget(m_tensorView);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);
    if (m_state) {
        connect(m_state, &StudioState::configChanged, this, &ModelPage::showTensors);
        connect(m_state, &StudioState::modelChanged, this, [this] {
            m_note->setText(m_state->modelNote());
            m_note->setVisible(!m_state->modelNote().isEmpty());
        });
    }
    m_status = new QLabel(this);
    layout->addWidget(m_status);

    // Open: a folder, a config.json alone, or a real model's config from the catalog.
    m_openMenu = new QMenu(this);
    m_openMenu->addAction(tr("Model folder…"), this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Open model folder"), m_path->text());
        if (!dir.isEmpty())
            openModel(dir);
    });
    m_openMenu->addAction(tr("config.json only…"), this, [this] {
        const QString file = QFileDialog::getOpenFileName(
            this, tr("Open a model's config.json"), m_path->text(), tr("Model configs (*.json)"));
        if (!file.isEmpty())
            openModel(file);
    });
    m_openMenu->addMenu(catalogMenu(m_openMenu, [this](const QString& dir) { openModel(dir); }));
    m_browse->setMenu(m_openMenu);
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
        path = QFileInfo(path)
                   .absolutePath();  // a dropped config.json or weight file opens its folder
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
    m_info->removeRows(0, m_info->rowCount());
    m_tensors->removeRows(0, m_tensors->rowCount());
    if (!s.error.isEmpty()) {
        m_status->setText(tr("Error: %1").arg(s.error));
        return;
    }
    auto add = [this](const QString& key, const QString& value) {
        m_info->appendRow({new QStandardItem(key), new QStandardItem(value)});
    };
    add(tr("Architecture"), s.architecture);
    add(tr("Parameters"), QLocale().toString(s.parameters));
    add(tr("Layers"), QString::number(s.layers));
    add(tr("Hidden size"), QString::number(s.hiddenSize));
    add(tr("Attention heads"), tr("%1 (key/value %2)").arg(s.heads).arg(s.kvHeads));
    add(tr("Vocabulary"), QString::number(s.vocabSize));
    add(tr("Context length"), QString::number(s.context));
    if (s.config && s.config->slidingWindow > 0)
        add(tr("Sliding window"), tr("%1 positions, %2")
                                      .arg(s.config->slidingWindow)
                                      .arg(QString::fromStdString(s.config->slidingLayerText())));
    if (s.config && !ropeText(*s.config).empty())
        add(tr("Rotary embedding"), QString::fromStdString(ropeText(*s.config)));
    if (s.config && !s.config->noRopeLayers.empty())
        add(tr("No rotary embedding"),
            tr("%1 (NoPE: position only through the causal order)")
                .arg(QString::fromStdString(layerListText(s.config->noRopeLayers))));
    add(tr("Stored dtype"), s.dtype);
    add(tr("Tokenizer"), s.tokenizer.isEmpty() ? tr("none (the folder has no tokenizer.json or "
                                                    "tokenizer.model)")
                                               : s.tokenizer);
    QStringList stops;
    for (const std::string& t : s.stopTokens)
        stops << QString::fromStdString(t);
    add(tr("Chat template"),
        !s.chatTemplateError.isEmpty() ? tr("cannot be used: %1").arg(s.chatTemplateError)
        : s.ownChatTemplate
            ? tr("the model's own (%1), turns end with %2")
                  .arg(s.chatTemplateOrigin,
                       stops.isEmpty() ? tr("EOS") : stops.join(QStringLiteral(", ")))
            : tr("none (training uses a family: chatml, llama3, inst, alpaca, plain)"));
    add(tr("Tensors"), s.tensorsFromConfig
                           ? tr("%1, shapes computed from config.json (the folder has no weights)")
                                 .arg(s.tensors.size())
                           : QString::number(s.tensors.size()));
    // The module tree: one node per dotted prefix, tensors as leaves with their shapes. Every row
    // has all four columns (empty where a module has no value), as a tree model should.
    QHash<QString, QStandardItem*> nodes;
    auto appendRow = [this](QStandardItem* parent, const QList<QStandardItem*>& row) {
        if (parent)
            parent->appendRow(row);
        else
            m_tensors->appendRow(row);
    };
    for (const ModelSummary::Tensor& t : s.tensors) {
        const QStringList parts = t.name.split(QLatin1Char('.'));
        QStandardItem* parent = nullptr;
        QString prefix;
        for (int i = 0; i + 1 < parts.size(); ++i) {
            prefix += (prefix.isEmpty() ? QString() : QStringLiteral(".")) + parts[i];
            QStandardItem*& node = nodes[prefix];
            if (!node) {
                node = new QStandardItem(parts[i]);
                appendRow(parent,
                          {node, new QStandardItem(), new QStandardItem(), new QStandardItem()});
            }
            parent = node;
        }
        QStringList dims;
        qint64 numel = 1;
        for (qint64 d : t.shape) {
            dims << QString::number(d);
            numel *= d;
        }
        auto* leaf = new QStandardItem(parts.last());
        leaf->setData(t.name, Qt::UserRole);
        auto* params = new QStandardItem(QLocale().toString(numel));
        params->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        appendRow(parent, {leaf,
                           new QStandardItem(QStringLiteral("[%1] %2").arg(
                               dims.join(QStringLiteral(", ")), t.dtype)),
                           params, new QStandardItem()});
    }
    // Open the outer modules and the first block, so the tensors and their roles show at a glance.
    m_tensorView->expandToDepth(1);
    for (QStandardItem* blocks : m_tensors->findItems(QStringLiteral("layers"), Qt::MatchRecursive))
        if (blocks->rowCount() > 0) {
            m_tensorView->expand(blocks->child(0)->index());
            for (int i = 0; i < blocks->child(0)->rowCount(); ++i)
                m_tensorView->expand(blocks->child(0)->child(i)->index());
        }
    showTensors();
    m_path->setText(s.path);
    m_status->setText(s.missing.isEmpty()
                          ? tr("Loaded %1").arg(s.path)
                          : tr("Loaded %1 from its config: no %2. The Method and Memory pages "
                               "plan from it; training and the Playground need a full model "
                               "folder.")
                                .arg(s.path, s.missing.join(tr(", no "))));
}

void ModelPage::showTensors()
{
    if (!m_state || !m_summary.config)
        return;
    // Core decides which checkpoint tensors train under the chosen method; a module shows its
    // tensors' roles.
    const TrainConfig& run = m_state->config();
    const QColor trains(0x27, 0xae, 0x60), lora(0xe0, 0x7b, 0x39);
    // Column 3 of a row: the item beside `item` under the same parent.
    auto roleItem = [this](QStandardItem* item) {
        return item->parent() ? item->parent()->child(item->row(), 3)
                              : m_tensors->item(item->row(), 3);
    };
    std::function<QString(QStandardItem*)> mark = [&](QStandardItem* item) -> QString {
        QString role;
        if (item->rowCount() == 0) {
            const std::string name = item->data(Qt::UserRole).toString().toStdString();
            role = QString::fromStdString(tensorTrainingRole(*m_summary.config, run, name));
        } else {
            QSet<QString> roles;
            for (int i = 0; i < item->rowCount(); ++i)
                roles << mark(item->child(i, 0));
            role = roles.size() == 1 ? *roles.begin() : tr("partly");
        }
        QStandardItem* cell = roleItem(item);
        cell->setText(role);
        cell->setForeground(role == QLatin1String("trains") ? trains
                            : role == QLatin1String("LoRA")
                                ? lora
                                : palette().color(QPalette::PlaceholderText));
        return role;
    };
    for (int i = 0; i < m_tensors->rowCount(); ++i)
        mark(m_tensors->item(i, 0));
}

}  // namespace tb
