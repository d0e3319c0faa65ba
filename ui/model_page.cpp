// Model page: folder picker, background loading of config and tokenizer, a summary tree.
#include "model_page.h"

#include "model/config.h"
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
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

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
    } catch (const std::exception& e) {
        s.error = QString::fromUtf8(e.what());
    }
    return s;
}

ModelPage::ModelPage(QWidget* parent) : QWidget(parent)
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
    layout->addWidget(m_info, 1);
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
    m_status->setText(tr("Loaded %1").arg(s.path));
}

} // namespace tb
