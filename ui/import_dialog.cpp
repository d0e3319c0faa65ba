// ImportDialog: preview through core's importFile on the first lines; the import through
// importIntoStore.
#include "import_dialog.h"

#include "job_pool.h"
#include "record_table_model.h"

#include "data/ingest/csv_reader.h"
#include "data/ingest/ingest.h"
#include "data/ingest/line_reader.h"
#include "data/store/store.h"
#include "tokenizer/tokenizer.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

const char* const kMappedFields[] = {"instruction", "input",      "output",
                                     "prompt",      "completion", "text"};

bool needsTokenizer(const QString& path, ImportFormat format)
{
    if (format == ImportFormat::Documents)
        return true;
    const QString suffix = QFileInfo(path).suffix().toLower();
    return format == ImportFormat::Auto &&
           (suffix == QLatin1String("txt") || suffix == QLatin1String("md") ||
            suffix == QLatin1String("markdown"));
}

bool isCsv(const QString& path, ImportFormat format)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return format == ImportFormat::Csv ||
           (format == ImportFormat::Auto &&
            (suffix == QLatin1String("csv") || suffix == QLatin1String("tsv")));
}

}  // namespace

ImportPreview previewImport(const QString& path, const ImportOptions& options, int maxLines)
{
    ImportPreview p;
    try {
        // Core reads a copy of the first lines exactly as it reads the whole file (same suffix,
        // same rules).
        QFile in(path);
        if (!in.open(QIODevice::ReadOnly)) {
            p.error = QStringLiteral("%1: cannot open (%2)").arg(path, in.errorString());
            return p;
        }
        QTemporaryDir dir;
        const QString copy = dir.filePath(QStringLiteral("preview.") + QFileInfo(path).suffix());
        QFile out(copy);
        if (!out.open(QIODevice::WriteOnly)) {
            p.error = QStringLiteral("%1: cannot write a preview copy").arg(copy);
            return p;
        }
        for (int i = 0; i < maxLines && !in.atEnd(); ++i)
            out.write(in.readLine(int64_t(4) << 20));
        out.close();
        const ImportOptions& o = options;
        if (isCsv(path, options.format)) {
            BlockReader blocks(copy.toStdString(), {});
            LineReader lines(blocks, kImportRowLimit);
            const char delimiter = options.delimiter ? options.delimiter
                                   : QFileInfo(path).suffix().toLower() == QLatin1String("tsv")
                                       ? '\t'
                                       : ',';
            CsvReader csv(lines, delimiter, kImportRowLimit);
            CsvRecord header;
            if (csv.next(header))
                for (const std::string& h : header.fields)
                    p.columns << QString::fromStdString(h).trimmed();
        }
        const ImportSummary s = importFile(
            copy.toStdString(), o, [&](ImportedRecord&& r) { p.records.push_back(std::move(r)); });
        p.format = QString::fromLatin1(importFormatName(s.format));
        p.rejected = s.rejected;
    } catch (const std::exception& e) {
        // Name the user's file, not the preview copy.
        p.error = QString::fromUtf8(e.what()).replace(
            QRegularExpression(QStringLiteral("^[^:]*preview\\.[A-Za-z]*")), path);
        p.records.clear();
    }
    return p;
}

ImportDialog::ImportDialog(const QString& storePath, const QString& who, const QString& modelDir,
                           QWidget* parent)
    : QDialog(parent), m_storePath(storePath), m_who(who), m_modelDir(modelDir),
      m_events(this, [this](ImportEvents&& events) { onImportEvents(std::move(events)); })
{
    setWindowTitle(tr("Import a dataset"));
    resize(900, 640);
    auto* layout = new QVBoxLayout(this);

    auto* source = new QGroupBox(tr("Source"), this);
    auto* form = new QFormLayout(source);
    auto* fileRow = new QHBoxLayout();
    m_file = new QLineEdit(source);
    m_file->setPlaceholderText(tr("JSONL, JSON array, CSV/TSV, or .txt/.md documents"));
    auto* browse = new QPushButton(tr("Browse…"), source);
    fileRow->addWidget(m_file, 1);
    fileRow->addWidget(browse);
    form->addRow(tr("File"), fileRow);
    m_format = new QComboBox(source);
    for (ImportFormat f : {ImportFormat::Auto, ImportFormat::Alpaca, ImportFormat::Chat,
                           ImportFormat::ShareGpt, ImportFormat::PromptCompletion,
                           ImportFormat::Text, ImportFormat::Csv, ImportFormat::Documents})
        m_format->addItem(QString::fromLatin1(importFormatName(f)), int(f));
    m_detected = new QLabel(source);
    auto* formatRow = new QHBoxLayout();
    formatRow->addWidget(m_format);
    formatRow->addWidget(m_detected, 1);
    form->addRow(tr("Format"), formatRow);
    m_split = new QComboBox(source);
    m_split->addItems(
        {QStringLiteral("train"), QStringLiteral("validation"), QStringLiteral("general")});
    form->addRow(tr("Split"), m_split);
    layout->addWidget(source);

    m_mappingBox = new QGroupBox(tr("CSV columns"), this);
    auto* mapping = new QHBoxLayout(m_mappingBox);
    for (const char* field : kMappedFields) {
        auto* box = new QComboBox(m_mappingBox);
        box->setObjectName(QStringLiteral("column_") + QLatin1String(field));
        box->addItem(tr("(by name)"), QString());
        mapping->addWidget(new QLabel(QLatin1String(field), m_mappingBox));
        mapping->addWidget(box, 1);
        m_mapping.emplace_back(QLatin1String(field), box);
        connect(box, &QComboBox::activated, this, [this] { refreshPreview(); });
    }
    m_mappingBox->setVisible(false);
    layout->addWidget(m_mappingBox);

    auto* split = new QSplitter(Qt::Vertical, this);
    auto* previewBox = new QGroupBox(tr("Preview (first rows, as they would be imported)"), split);
    auto* previewLayout = new QVBoxLayout(previewBox);
    m_previewTable = new QTableWidget(previewBox);
    m_previewTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_previewTable->verticalHeader()->setVisible(false);
    m_previewTable->horizontalHeader()->setStretchLastSection(true);
    previewLayout->addWidget(m_previewTable);
    auto* rejectBox = new QGroupBox(tr("Rejected rows"), split);
    auto* rejectLayout = new QVBoxLayout(rejectBox);
    m_rejections = new QTableWidget(0, 2, rejectBox);
    m_rejections->setHorizontalHeaderLabels({tr("Line"), tr("Reason")});
    m_rejections->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_rejections->verticalHeader()->setVisible(false);
    m_rejections->horizontalHeader()->setStretchLastSection(true);
    m_rejections->setColumnWidth(0, 70);
    rejectLayout->addWidget(m_rejections);
    split->addWidget(previewBox);
    split->addWidget(rejectBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    auto* bottom = new QHBoxLayout();
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    bottom->addWidget(m_progress, 1);
    m_import = new QPushButton(tr("Import"), this);
    m_import->setDefault(true);
    m_import->setEnabled(false);
    m_cancel = new QPushButton(tr("Cancel import"), this);
    m_cancel->setEnabled(false);
    m_close = new QPushButton(tr("Close"), this);
    bottom->addWidget(m_import);
    bottom->addWidget(m_cancel);
    bottom->addWidget(m_close);
    layout->addLayout(bottom);

    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Import a dataset"), m_file->text(),
            tr("Datasets (*.jsonl *.ndjson *.json *.csv *.tsv *.txt *.md);;All files (*)"));
        if (!path.isEmpty())
            setFile(path);
    });
    connect(m_file, &QLineEdit::editingFinished, this, [this] {
        if (m_file->text().trimmed() != m_previewedFile)
            refreshPreview();
    });
    connect(m_format, &QComboBox::activated, this, [this] { refreshPreview(); });
    connect(m_import, &QPushButton::clicked, this, [this] { startImport(); });
    connect(m_cancel, &QPushButton::clicked, this, &ImportDialog::cancelImport);
    connect(m_close, &QPushButton::clicked, this, [this] {
        if (m_running)
            cancelImport();
        else
            accept();
    });
    connect(&m_previewWatcher, &QFutureWatcher<ImportPreview>::finished, this, [this] {
        m_preview = m_previewWatcher.result();
        if (m_previewAgain) {
            m_previewAgain = false;
            refreshPreview();
            return;
        }
        showPreview();
        Q_EMIT previewReady();
    });
}

void ImportDialog::onImportEvents(ImportEvents&& events)
{
    if (events.progress && events.progress->second > 0 && m_running)
        m_progress->setValue(
            int(1000 * double(events.progress->first) / double(events.progress->second)));
    if (events.outcome) {
        m_importWorker.waitForFinished();  // it returns right after handing over its outcome
        m_outcome = std::move(*events.outcome);
        m_running = false;
        showOutcome();
        Q_EMIT imported(m_outcome);
    }
}

ImportDialog::~ImportDialog()
{
    m_file->disconnect(
        this);  // QDialog's destructor hides the dialog, and the line edit's focus-out follows
    if (m_cancelFlag)
        *m_cancelFlag = true;          // a running import rolls back at its next progress report
    m_importWorker.waitForFinished();  // it reports into m_events: it must end before the buffer
    // An import past its last progress report when the dialog closed has committed: its outcome
    // still reaches the page (which refreshes), rather than being dropped with the buffer.
    if (m_running)
        m_events.drainNow();
}

void ImportDialog::setFile(const QString& path)
{
    m_file->setText(path);
    refreshPreview();
}

void ImportDialog::setSplit(const QString& split)
{
    m_split->setCurrentText(split);
}

void ImportDialog::setColumn(const QString& field, const QString& header)
{
    for (auto& [name, box] : m_mapping)
        if (name == field) {
            int i = box->findData(header);
            if (i < 0 && !header.isEmpty()) {
                box->addItem(header, header);
                i = box->count() - 1;
            }
            box->setCurrentIndex(std::max(i, 0));
        }
    refreshPreview();
}

ImportOptions ImportDialog::options() const
{
    ImportOptions o;
    o.format = ImportFormat(m_format->currentData().toInt());
    for (const auto& [field, box] : m_mapping) {
        const QString header = box->currentData().toString();
        if (!header.isEmpty())
            o.columns[field.toStdString()] = header.toStdString();
    }
    return o;
}

void ImportDialog::refreshPreview()
{
    const QString path = m_file->text().trimmed();
    m_import->setEnabled(false);
    if (path.isEmpty())
        return;
    if (m_previewWatcher.isRunning()) {
        m_previewAgain = true;
        return;
    }
    m_previewedFile = path;
    m_detected->setText(tr("reading…"));
    const ImportOptions o = options();
    const std::string modelDir = m_modelDir.toStdString();
    const bool tokenize = needsTokenizer(path, o.format);
    m_previewWatcher.setFuture(QtConcurrent::run([path, o, modelDir, tokenize]() {
        ImportOptions options = o;
        std::unique_ptr<Tokenizer> tokenizer;
        if (tokenize) {
            try {
                tokenizer = loadTokenizer(modelDir);
            } catch (const std::exception& e) {
                ImportPreview p;
                p.error = QObject::tr("documents are chunked by the model's tokens: %1")
                              .arg(QString::fromUtf8(e.what()));
                return p;
            }
            options.tokenizer = tokenizer.get();
        }
        return previewImport(path, options);
    }));
}

void ImportDialog::showPreview()
{
    const ImportPreview& p = m_preview;
    const QString path = m_file->text().trimmed();
    const bool csv = isCsv(path, ImportFormat(m_format->currentData().toInt()));
    m_mappingBox->setVisible(csv);
    if (csv)
        for (auto& [field, box] : m_mapping) {
            const QString keep = box->currentData().toString();
            box->clear();
            box->addItem(tr("(by name)"), QString());
            for (const QString& c : p.columns)
                box->addItem(c, c);
            box->setCurrentIndex(std::max(0, box->findData(keep)));
        }
    m_previewTable->clear();
    m_previewTable->setRowCount(0);
    if (!p.error.isEmpty()) {
        m_detected->setText(
            QStringLiteral("<span style=\"color:#c0392b\">%1</span>").arg(p.error.toHtmlEscaped()));
        setRejections({});
        return;
    }
    m_detected->setText(tr("detected: <b>%1</b>").arg(p.format));
    // Columns: line, kind, then every field key seen in the preview rows, in first-seen order.
    QStringList keys;
    for (const ImportedRecord& r : p.records)
        for (auto it = r.fields.begin(); it != r.fields.end(); ++it)
            if (!keys.contains(QString::fromStdString(it.key())))
                keys << QString::fromStdString(it.key());
    m_previewTable->setColumnCount(2 + int(keys.size()));
    m_previewTable->setHorizontalHeaderLabels(QStringList{tr("Line"), tr("Kind")} + keys);
    m_previewTable->setRowCount(int(p.records.size()));
    for (int row = 0; row < int(p.records.size()); ++row) {
        const ImportedRecord& r = p.records[size_t(row)];
        m_previewTable->setItem(row, 0,
                                new QTableWidgetItem(r.line > 0
                                                         ? QString::number(r.line)
                                                         : tr("chunk %1").arg(r.chunkIndex)));
        m_previewTable->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(r.kind)));
        for (int k = 0; k < keys.size(); ++k) {
            const std::string key = keys[k].toStdString();
            if (!r.fields.contains(key))
                continue;
            const auto& v = r.fields[key];
            QString text = v.is_string() ? QString::fromStdString(v.get<std::string>())
                                         : QString::fromStdString(v.dump());
            text = text.simplified();
            auto* item = new QTableWidgetItem(text.left(200));
            item->setToolTip(text.left(2000));
            m_previewTable->setItem(row, 2 + k, item);
        }
    }
    for (int c = 0; c < m_previewTable->columnCount(); ++c)
        m_previewTable->setColumnWidth(c, c < 2 ? 70 : 220);
    setRejections(p.rejected);
    m_summary->setText(tr("%1 of the first rows would be imported, %2 rejected.")
                           .arg(p.records.size())
                           .arg(p.rejected.size()));
    m_import->setEnabled(!m_running);
}

void ImportDialog::setRejections(const std::vector<ImportRejection>& rows)
{
    // The full list can be long (every bad row of a big file); the table shows the first 10,000.
    const int shown = int(std::min<size_t>(rows.size(), 10000));
    m_rejections->setRowCount(shown);
    for (int i = 0; i < shown; ++i) {
        auto* line = new QTableWidgetItem;
        line->setData(Qt::DisplayRole, qint64(rows[size_t(i)].line));
        m_rejections->setItem(i, 0, line);
        m_rejections->setItem(i, 1,
                              new QTableWidgetItem(QString::fromStdString(rows[size_t(i)].reason)));
    }
}

bool ImportDialog::startImport()
{
    const QString path = m_file->text().trimmed();
    if (m_running || path.isEmpty() || m_storePath.isEmpty())
        return false;
    m_running = true;
    m_import->setEnabled(false);
    m_cancel->setEnabled(true);
    m_progress->setValue(0);
    m_summary->setText(tr("Importing %1…").arg(QFileInfo(path).fileName()));
    m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_events.discard();
    const ImportOptions o = options();
    const bool tokenize = needsTokenizer(path, o.format);
    auto cancel = m_cancelFlag;
    EventBuffer<ImportEvents>* events = &m_events;
    const std::string store = m_storePath.toStdString(), file = path.toStdString(),
                      who = m_who.toStdString(), modelDir = m_modelDir.toStdString(),
                      split = m_split->currentText().toStdString();
    m_importWorker = QtConcurrent::run(longJobPool(), [=]() {
        ImportOutcome out;
        try {
            // SQLite connections belong to their thread: the import writes through a connection of
            // its own.
            const std::unique_ptr<DataStore> s = DataStore::open(store, true);
            ImportOptions options = o;
            std::unique_ptr<Tokenizer> tokenizer;
            if (tokenize) {
                tokenizer = loadTokenizer(modelDir);
                options.tokenizer = tokenizer.get();
            }
            const StoreImportReport r =
                importIntoStore(*s, file, options, split, who, [&](int64_t d, int64_t t) {
                    events->add([&](ImportEvents& e) { e.progress = std::make_pair(d, t); });
                    return !cancel->load();
                });
            out.format = QString::fromLatin1(importFormatName(r.summary.format));
            out.imported = r.summary.imported;
            out.rejected = r.summary.rejected;
            out.operationId = r.operationId;
        } catch (const std::exception& e) {
            out.error = QString::fromUtf8(e.what());
        }
        events->add([&](ImportEvents& e) { e.outcome = std::move(out); });
    });
    return true;
}

void ImportDialog::cancelImport()
{
    if (m_cancelFlag)
        *m_cancelFlag = true;
}

void ImportDialog::showOutcome()
{
    m_cancel->setEnabled(false);
    m_import->setEnabled(true);
    const ImportOutcome& o = m_outcome;
    if (!o.error.isEmpty()) {
        m_progress->setValue(0);
        m_summary->setText(
            QStringLiteral("<span style=\"color:#c0392b\">%1</span> %2")
                .arg(o.error.toHtmlEscaped(), tr("Nothing was written to the store.")));
        return;
    }
    m_progress->setValue(1000);
    m_summary->setText(
        tr("Imported <b>%1</b> records as %2; <b>%3</b> rows rejected (listed above with their "
           "lines). Undo it from the History tab (operation %4).")
            .arg(o.imported)
            .arg(o.format)
            .arg(o.rejected.size())
            .arg(o.operationId));
    setRejections(o.rejected);
}

}  // namespace tb
