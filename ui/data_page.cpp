// Data page: toolbar, filters, the record table and editor, review shortcuts, the side tabs and the
// job bar.
#include "data_page.h"

#include "data_jobs.h"
#include "data_panels.h"
#include "import_dialog.h"
#include "job_pool.h"
#include "pairs_view.h"
#include "record_editor.h"
#include "record_table_model.h"
#include "studio_state.h"
#include "synth_dialog.h"

#include "data/ingest/ingest.h"
#include "data/store/snapshot.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QShortcut>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace tb {

namespace {

const QString kAnnotatorKey = QStringLiteral("data/annotator");
const QString kStoreKey = QStringLiteral("data/store");
const QString kAdvanceKey = QStringLiteral("data/advanceAfterDecision");

QToolButton* toolButton(const QString& text, const QString& tip, QWidget* parent)
{
    auto* b = new QToolButton(parent);
    b->setText(text);
    b->setToolTip(tip);
    b->setToolButtonStyle(Qt::ToolButtonTextOnly);
    b->setAutoRaise(true);
    return b;
}

// Creates the bundled store at `path` (through a temporary file, so a half-made store never appears
// there).
QString createBundledStore(const QString& path)
{
    const QString partial = path + QStringLiteral(".partial");
    for (const QString& f :
         QStringList{partial, partial + QStringLiteral("-wal"), partial + QStringLiteral("-shm")})
        QFile::remove(f);
    try {
        QDir().mkpath(QFileInfo(path).absolutePath());
        {
            const std::unique_ptr<DataStore> store = DataStore::open(partial.toStdString(), true);
            const std::string tiny = dataDir() + "/tiny/";
            importIntoStore(*store, tiny + "train.jsonl", ImportOptions{}, "train", "tunebench");
            importIntoStore(*store, tiny + "val.jsonl", ImportOptions{}, "validation", "tunebench");
        }
        if (QFile::exists(path))
            return {};  // another studio made it meanwhile; keep theirs
        if (!QFile::rename(partial, path))
            return QObject::tr("%1: cannot move the new store into place").arg(path);
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

DataPage::DataPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
{
    m_annotator = QSettings().value(kAnnotatorKey).toString();
    m_jobs = new DataJobs(this);
    m_model = new RecordTableModel(this);
    // Filters, sorts and refreshes read the ordered ids on a worker (100,000 rows sorted by tokens
    // take ~100 ms); the table keeps its rows until they arrive.
    m_model->setIdLoader([this](const RecordQuery& query,
                                std::function<void(std::vector<int64_t>)> deliver) {
        if (m_jobs->storePath().isEmpty()) {
            deliver({});
            return;
        }
        m_jobs->read(m_model,
                     [query, deliver](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
                         std::vector<int64_t> ids;
                         std::string error;
                         try {
                             ids = store.recordIds(query);
                         } catch (const std::exception& e) {
                             error = e.what();
                         }
                         return [deliver, ids = std::move(ids), error]() mutable {
                             deliver(std::move(ids));
                             if (!error.empty())
                                 throw Error(error);  // reported through readFailed
                         };
                     });
    });
    connect(m_model, &RecordTableModel::idsLoaded, this, &DataPage::afterIds);

    auto* layout = new QVBoxLayout(this);
    buildToolbar();
    layout->addWidget(m_toolbar);
    auto* filterRow = new QWidget(this);
    layout->addWidget(filterRow);
    buildFilterBar();
    auto* filterLayout = new QHBoxLayout(filterRow);
    filterLayout->setContentsMargins(0, 0, 0, 0);
    filterLayout->addWidget(new QLabel(tr("Status"), filterRow));
    filterLayout->addWidget(m_statusFilter);
    filterLayout->addWidget(new QLabel(tr("Split"), filterRow));
    filterLayout->addWidget(m_splitFilter);
    filterLayout->addWidget(m_search, 1);
    filterLayout->addWidget(m_flagged);
    filterLayout->addWidget(m_count);

    auto* mainSplit = new QSplitter(Qt::Horizontal, this);
    auto* leftSplit = new QSplitter(Qt::Vertical, mainSplit);
    m_table = new QTableView(leftSplit);
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_table->verticalHeader()->setVisible(false);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 8);
    QHeaderView* header = m_table->horizontalHeader();
    header->setSortIndicator(RecordTableModel::ColId, Qt::AscendingOrder);
    m_table->setSortingEnabled(true);
    const int widths[] = {60, 90, 80, 120, 300, 65, 55, 75, 110};
    for (int c = 0; c < RecordTableModel::ColumnCount; ++c)
        m_table->setColumnWidth(c, widths[c]);
    header->setSectionResizeMode(RecordTableModel::ColPreview, QHeaderView::Stretch);

    auto* editorBox = new QGroupBox(tr("Record"), leftSplit);
    auto* editorLayout = new QVBoxLayout(editorBox);
    auto* reviewRow = new QHBoxLayout();
    auto addButton = [&](const QString& text, const QString& tip, auto slot) {
        auto* b = new QPushButton(text, editorBox);
        b->setToolTip(tip);
        connect(b, &QPushButton::clicked, this, slot);
        reviewRow->addWidget(b);
        return b;
    };
    addButton(tr("Accept (A)"), tr("Your decision: keep this record"), [this] {
        reviewCurrent(QStringLiteral("accept"));
    })->setStyleSheet(QStringLiteral("color:#27ae60; font-weight:bold"));
    addButton(tr("Reject (R)"), tr("Your decision: leave this record out"), [this] {
        reviewCurrent(QStringLiteral("reject"));
    })->setStyleSheet(QStringLiteral("color:#c0392b; font-weight:bold"));
    addButton(tr("Edit (E)"), tr("Edit the fields below"), [this] { m_editor->focusFirstField(); });
    reviewRow->addSpacing(12);
    reviewRow->addWidget(new QLabel(tr("Rate"), editorBox));
    for (int r = 1; r <= 5; ++r) {
        auto* b = addButton(QString::number(r), tr("Rate %1 of 5 (key %1)").arg(r),
                            [this, r] { reviewCurrent(QString(), r); });
        b->setMaximumWidth(32);
    }
    reviewRow->addSpacing(12);
    addButton(tr("◀ Previous (K)"), tr("Previous record"), [this] { moveCurrent(-1); });
    addButton(tr("Next (J) ▶"), tr("Next record"), [this] { moveCurrent(1); });
    m_advance = new QCheckBox(tr("next after A/R"), editorBox);
    m_advance->setChecked(QSettings().value(kAdvanceKey, true).toBool());
    connect(m_advance, &QCheckBox::toggled, this,
            [](bool on) { QSettings().setValue(kAdvanceKey, on); });
    reviewRow->addWidget(m_advance);
    reviewRow->addStretch(1);
    editorLayout->addLayout(reviewRow);
    m_editor = new RecordEditor(editorBox);
    editorLayout->addWidget(m_editor, 1);
    leftSplit->addWidget(m_table);
    leftSplit->addWidget(editorBox);
    leftSplit->setStretchFactor(0, 3);
    leftSplit->setStretchFactor(1, 2);

    DataContext ctx;
    ctx.store = [this] { return m_store.get(); };
    ctx.jobs = m_jobs;
    ctx.who = [this](bool ask) { return ensureAnnotator(ask); };
    ctx.modelDir = [this] { return modelDir(); };
    // Token statistics render records as the run will, so the truncation count is the trainer's.
    ctx.chatTemplate = [this] {
        return QString::fromLatin1(
            chatTemplateChoiceName(m_state ? m_state->config().data.chatTemplate : std::nullopt));
    };
    ctx.changed = [this] { refreshAll(); };
    ctx.showRecord = [this](qint64 id) { showRecordById(id); };
    ctx.message = [this](const QString& text) { setMessage(text); };
    m_tabs = new QTabWidget(mainSplit);
    m_review = new ReviewPanel(ctx, m_tabs);
    m_curation = new CurationPanel(ctx, m_tabs);
    m_stats = new StatsPanel(ctx, m_tabs);
    m_history = new HistoryPanel(ctx, m_tabs);
    m_tabs->addTab(m_review, tr("Review"));
    m_tabs->addTab(m_curation, tr("Curation"));
    m_tabs->addTab(m_stats, tr("Statistics"));
    m_tabs->addTab(m_history, tr("History"));
    mainSplit->addWidget(leftSplit);
    mainSplit->addWidget(m_tabs);
    mainSplit->setStretchFactor(0, 3);
    mainSplit->setStretchFactor(1, 2);
    mainSplit->setSizes({820, 480});
    m_views = new QTabWidget(this);
    m_records = mainSplit;
    m_views->addTab(mainSplit, tr("Records"));
    m_pairs = new PairsView(ctx, m_views);
    m_pairs->setAnnotator(m_annotator);
    m_views->addTab(m_pairs, tr("Pairs"));
    layout->addWidget(m_views, 1);

    auto* statusRow = new QHBoxLayout();
    m_message = new QLabel(this);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(220);
    m_progress->setVisible(false);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setVisible(false);
    statusRow->addWidget(m_message, 1);
    statusRow->addWidget(m_progress);
    statusRow->addWidget(m_cancel);
    layout->addLayout(statusRow);

    if (m_state) {
        m_stats->setMaxLength(int(m_state->config().data.maxLength));
        connect(m_stats, &StatsPanel::maxLengthChanged, this, [this](int tokens) {
            m_state->updateConfig([tokens](TrainConfig& c) { c.data.maxLength = tokens; }, this);
        });
        connect(m_state, &StudioState::configChanged, this, [this](QObject* origin) {
            if (origin != this)  // the panel's own change is already on screen
                m_stats->setMaxLength(int(m_state->config().data.maxLength));
        });
        connect(m_state, &StudioState::storePathChanged, this, [this](const QString& path) {
            if (path.isEmpty() || (opening() && m_openingPath == path))
                return;
            if (!m_store || QString::fromStdString(m_store->path()) != path)
                openStore(path);
        });
    }
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex&, const QModelIndex& previous) {
                if (previous.isValid() && m_editor->modified() &&
                    m_editor->recordId() == m_model->idAt(previous.row()))
                    saveEdits();  // moving on keeps what was typed
                showCurrent();
            });
    connect(m_editor, &RecordEditor::saveRequested, this, &DataPage::saveEdits);
    connect(m_cancel, &QPushButton::clicked, m_jobs, &DataJobs::cancel);
    connect(m_jobs, &DataJobs::started, this, [this](const QString& what) {
        setMessage(tr("%1…").arg(what));
        m_progress->setValue(0);
        m_progress->setVisible(true);
        m_cancel->setVisible(true);
        m_toolbar->setEnabled(false);
        m_editor->setSaveEnabled(false);
    });
    connect(m_jobs, &DataJobs::progress, this, [this](const QString& phase, double fraction) {
        m_progress->setValue(int(fraction * 1000));
        if (!phase.isEmpty())
            m_progress->setFormat(phase + QStringLiteral(" %p%"));
    });
    connect(m_jobs, &DataJobs::finished, this, [this](const QString& what, const QString& error) {
        m_progress->setVisible(false);
        m_cancel->setVisible(false);
        m_toolbar->setEnabled(true);
        m_editor->setSaveEnabled(true);
        if (!error.isEmpty() && m_jobs->lastCancelled())
            setMessage(tr("%1: cancelled").arg(what));  // a Cancel, not a failure
        else if (!error.isEmpty())
            setMessage(tr("%1 failed: %2").arg(what, error), true);
        else if (m_message->text().endsWith(QStringLiteral("…")))
            setMessage(tr("%1: done").arg(what));
        refreshAll();
    });
    connect(m_jobs, &DataJobs::readFailed, this,
            [this](const QString& error) { setMessage(error, true); });
    m_panelDelay = new QTimer(this);
    m_panelDelay->setSingleShot(true);
    m_panelDelay->setInterval(400);
    connect(m_panelDelay, &QTimer::timeout, this, &DataPage::refreshVisiblePanel);
    connect(m_tabs, &QTabWidget::currentChanged, this, &DataPage::refreshVisiblePanel);
    buildShortcuts();
    m_toolbar->setEnabled(false);
}

DataPage::~DataPage() = default;

void DataPage::buildToolbar()
{
    m_toolbar = new QWidget(this);
    auto* row = new QHBoxLayout(m_toolbar);
    row->setContentsMargins(0, 0, 0, 0);
    auto* open = toolButton(tr("Open store…"), tr("Open a dataset store (.tbstore)"), m_toolbar);
    auto* create = toolButton(tr("New store…"), tr("Create an empty dataset store"), m_toolbar);
    auto* import = toolButton(
        tr("Import…"), tr("Import JSONL, JSON, CSV/TSV or documents into the store"), m_toolbar);
    auto* dedup = toolButton(tr("Find duplicates"), tr("Exact and near duplicates (Curation tab)"),
                             m_toolbar);
    auto* scan = toolButton(tr("Scan"), tr("Leaks and personal data (Curation tab)"), m_toolbar);
    auto* stats =
        toolButton(tr("Token stats"),
                   tr("Token lengths with the model's tokenizer (Statistics tab)"), m_toolbar);
    auto* snap =
        toolButton(tr("Snapshot"),
                   tr("Freeze records for training (content-hashed, recorded by runs)"), m_toolbar);
    auto* menu = new QMenu(snap);
    menu->addAction(tr("train: accepted records"), this,
                    [this] { snapshot(QStringLiteral("train"), true); });
    menu->addAction(tr("train: accepted and pending"), this,
                    [this] { snapshot(QStringLiteral("train"), false); });
    menu->addAction(tr("validation: accepted records"), this,
                    [this] { snapshot(QStringLiteral("validation"), true); });
    menu->addAction(tr("validation: accepted and pending"), this,
                    [this] { snapshot(QStringLiteral("validation"), false); });
    snap->setMenu(menu);
    snap->setPopupMode(QToolButton::InstantPopup);
    auto* synth = toolButton(tr("Generate…"),
                             tr("Synthetic examples written by the model from seed records "
                                "(stored pending review)"),
                             m_toolbar);
    auto* undo = toolButton(tr("Undo last"),
                            tr("Reverse the newest operation that is not undone yet"), m_toolbar);
    m_storeLabel = new QLabel(m_toolbar);
    m_storeLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_annotatorButton = new QPushButton(m_toolbar);
    m_annotatorButton->setFlat(true);
    m_annotatorButton->setToolTip(tr("The name your reviews and edits are recorded under"));
    for (QWidget* w : std::initializer_list<QWidget*>{open, create, import})
        row->addWidget(w);
    row->addSpacing(10);
    for (QWidget* w : std::initializer_list<QWidget*>{dedup, scan, stats, synth, snap, undo})
        row->addWidget(w);
    row->addStretch(1);
    row->addWidget(m_storeLabel);
    row->addWidget(m_annotatorButton);
    setAnnotator(m_annotator);

    connect(open, &QToolButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open dataset store"), QString(),
                                         tr("Dataset stores (*.tbstore);;All files (*)"));
        QString error;
        if (!path.isEmpty() && !openStore(path, false, &error))
            setMessage(error, true);
    });
    connect(create, &QToolButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("New dataset store"),
                                                          QStringLiteral("project.tbstore"),
                                                          tr("Dataset stores (*.tbstore)"));
        QString error;
        if (!path.isEmpty() && !openStore(path, true, &error))
            setMessage(error, true);
    });
    connect(import, &QToolButton::clicked, this, &DataPage::openImportDialog);
    connect(dedup, &QToolButton::clicked, this, [this] {
        m_tabs->setCurrentWidget(m_curation);
        m_curation->findDuplicates();
    });
    connect(scan, &QToolButton::clicked, this, [this] {
        m_tabs->setCurrentWidget(m_curation);
        m_curation->scan();
    });
    connect(stats, &QToolButton::clicked, this, [this] {
        m_tabs->setCurrentWidget(m_stats);
        m_stats->compute();
    });
    connect(undo, &QToolButton::clicked, this, &DataPage::undoLastOperation);
    connect(synth, &QToolButton::clicked, this, &DataPage::openSynthDialog);
    connect(m_annotatorButton, &QPushButton::clicked, this, [this] {
        bool ok = false;
        const QString name =
            QInputDialog::getText(this, tr("Annotator"), tr("Your name for reviews and edits:"),
                                  QLineEdit::Normal, m_annotator, &ok)
                .trimmed();
        if (ok && !name.isEmpty())
            setAnnotator(name);
    });
}

void DataPage::buildFilterBar()
{
    m_statusFilter = new QComboBox(this);
    m_statusFilter->addItem(tr("all"), QString());
    for (ReviewStatus s : {ReviewStatus::Pending, ReviewStatus::Accepted, ReviewStatus::Rejected,
                           ReviewStatus::NeedsAdjudication})
        m_statusFilter->addItem(QString::fromLatin1(reviewStatusName(s)),
                                QString::fromLatin1(reviewStatusName(s)));
    m_splitFilter = new QComboBox(this);
    m_splitFilter->addItem(tr("all"), QString());
    for (const char* s : {"train", "validation", "general"})
        m_splitFilter->addItem(QLatin1String(s), QLatin1String(s));
    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search the records' text"));
    m_search->setClearButtonEnabled(true);
    m_flagged = new QCheckBox(tr("flagged only"), this);
    m_count = new QLabel(this);
    m_count->setMinimumWidth(110);
    m_count->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_searchDelay = new QTimer(this);
    m_searchDelay->setSingleShot(true);
    m_searchDelay->setInterval(300);
    connect(m_searchDelay, &QTimer::timeout, this, &DataPage::applyFilter);
    connect(m_search, &QLineEdit::textChanged, m_searchDelay, [this] { m_searchDelay->start(); });
    connect(m_statusFilter, &QComboBox::currentIndexChanged, this, &DataPage::applyFilter);
    connect(m_splitFilter, &QComboBox::currentIndexChanged, this, &DataPage::applyFilter);
    connect(m_flagged, &QCheckBox::toggled, this, &DataPage::applyFilter);
}

void DataPage::buildShortcuts()
{
    // On the Records tab only: the Pairs tab has keys of its own.
    auto add = [this](int key, auto slot) {
        auto* s = new QShortcut(QKeySequence(key), m_records);
        s->setContext(Qt::WidgetWithChildrenShortcut);
        connect(s, &QShortcut::activated, this, slot);
    };
    add(Qt::Key_A, [this] { reviewCurrent(QStringLiteral("accept")); });
    add(Qt::Key_R, [this] { reviewCurrent(QStringLiteral("reject")); });
    add(Qt::Key_E, [this] { m_editor->focusFirstField(); });
    add(Qt::Key_J, [this] { moveCurrent(1); });
    add(Qt::Key_K, [this] { moveCurrent(-1); });
    for (int r = 1; r <= 5; ++r)
        add(Qt::Key_0 + r, [this, r] { reviewCurrent(QString(), r); });
    // Leave the editor and go back to the table (the shortcuts work again there).
    auto* back = new QShortcut(QKeySequence(Qt::Key_Escape), m_records);
    back->setContext(Qt::WidgetWithChildrenShortcut);
    connect(back, &QShortcut::activated, this,
            [this] { m_table->setFocus(Qt::ShortcutFocusReason); });
}

QString DataPage::defaultStorePath()
{
    return QString::fromStdString(joinPath(userDataDir(), "tiny.tbstore"));
}

bool DataPage::openStore(const QString& path, bool create, QString* error)
{
    const auto refuse = [&](const QString& message) {
        if (error)
            *error = message;
        setMessage(message, true);
        Q_EMIT storeFailed(message);
        return false;
    };
    if (path.isEmpty())
        return refuse(tr("dataset store: no path given"));
    if (!create && !QFileInfo(path).isFile())
        return refuse(tr("%1: no such dataset store").arg(QDir::toNativeSeparators(path)));
    const quint64 request = ++m_openRequest;
    m_openingPath = path;
    setMessage(tr("Opening %1…").arg(QDir::toNativeSeparators(path)));
    struct Opened {
        std::unique_ptr<DataStore> store;
        QString error;
    };
    // Owned jointly: a page closed while the worker runs leaves the worker a place to put it.
    auto opened = std::make_shared<Opened>();
    auto* watcher = new QFutureWatcher<void>(this);
    connect(watcher, &QFutureWatcher<void>::finished, this, [this, watcher, opened, path, request] {
        watcher->deleteLater();
        if (request != m_openRequest)
            return;  // superseded: a newer open shows its own store
        m_openShown = request;
        m_openingPath.clear();
        if (!opened->error.isEmpty()) {
            setMessage(opened->error, true);
            Q_EMIT storeFailed(opened->error);
            if (request == m_bundledIfFails)
                openBundledStore();  // the last store is gone bad: the example one instead
            return;
        }
        showStore(std::move(opened->store), path);
    });
    const std::string file = path.toStdString();
    watcher->setFuture(QtConcurrent::run([opened, file, create] {
        try {
            opened->store = DataStore::open(file, create);
        } catch (const std::exception& e) {
            opened->error = QString::fromUtf8(e.what());
        }
    }));
    return true;
}

void DataPage::showStore(std::unique_ptr<DataStore> store, const QString& path)
{
    // What was typed into the store shown until now is saved first; where it cannot be (a job
    // holds the store, an invalid JSON field), that store stays and the typed text with it.
    if (!saveAllEdits()) {
        setMessage(tr("%1 was not opened: the edits to this store are not saved yet (save or "
                      "revert them, then open it again)")
                       .arg(QDir::toNativeSeparators(path)),
                   true);
        Q_EMIT storeFailed(tr("%1: not opened, unsaved edits").arg(path));
        return;
    }
    m_model->setStore(nullptr);
    m_pairs->setStore(nullptr);
    m_editor->showRecord(std::nullopt, nullptr);
    m_store = std::move(store);
    // The GUI thread's connection: a key that writes (A, R, a rating, Save) behind another
    // program's long write (`tunebench data import` on the same store) fails after 0.3 s saying
    // the store is busy, instead of freezing the window for the default 10 s.
    m_store->setBusyTimeout(300);
    m_jobs->setStorePath(path);
    m_curation->clear();  // the results and undoable operations were the previous store's
    m_stats->clear();
    m_reselect = Reselect{};
    m_model->setStore(m_store.get());
    m_pairs->setStore(m_store.get());
    m_toolbar->setEnabled(!m_jobs->busy());
    m_storeLabel->setText(QFileInfo(path).fileName());
    m_storeLabel->setToolTip(path);
    QSettings().setValue(kStoreKey, path);
    if (m_state)
        m_state->setStorePath(path);
    refreshVisiblePanel();
    setMessage(tr("Opened %1").arg(QDir::toNativeSeparators(path)));
    Q_EMIT storeOpened(path);
}

void DataPage::openBundledStore(const QString& requested)
{
    const QString path = requested.isEmpty() ? defaultStorePath() : requested;
    m_triedDefault = true;
    if (QFile::exists(path)) {
        openStore(path);
        return;
    }
    setMessage(tr("Creating the example store from datasets/tiny…"));
    auto* watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
        const QString error = watcher->result();
        watcher->deleteLater();
        if (!error.isEmpty()) {
            setMessage(error, true);
            Q_EMIT storeFailed(error);
            return;
        }
        openStore(path);
    });
    watcher->setFuture(QtConcurrent::run(longJobPool(), createBundledStore, path));
}

void DataPage::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    // The first visit opens the last store, or the example store (created on first start), unless
    // a store is open or opening already.
    if (m_triedDefault || m_store || opening())
        return;
    m_triedDefault = true;
    const QString last = m_state && !m_state->storePath().isEmpty()
                             ? m_state->storePath()
                             : QSettings().value(kStoreKey).toString();
    if (!last.isEmpty() && QFile::exists(last) && openStore(last)) {
        m_bundledIfFails = m_openRequest;
        return;
    }
    openBundledStore();
}

void DataPage::setAnnotator(const QString& name)
{
    m_annotator = name.trimmed();
    if (!m_annotator.isEmpty())
        QSettings().setValue(kAnnotatorKey, m_annotator);
    if (m_pairs)
        m_pairs->setAnnotator(m_annotator);
    m_annotatorButton->setText(m_annotator.isEmpty() ? tr("Set annotator…")
                                                     : tr("Annotator: %1").arg(m_annotator));
}

QString DataPage::ensureAnnotator(bool ask)
{
    if (m_annotator.isEmpty() && ask) {
        bool ok = false;
        const QString name =
            QInputDialog::getText(this, tr("Annotator"),
                                  tr("Your name, recorded with each review and edit (asked once):"),
                                  QLineEdit::Normal, qEnvironmentVariable("USER"), &ok);
        if (ok)
            setAnnotator(name);
    }
    return m_annotator;
}

QString DataPage::modelDir() const
{
    if (m_state && !m_state->config().model.empty())
        return QString::fromStdString(m_state->config().model);
    return QString::fromStdString(bundledModelDir());
}

void DataPage::applyFilter()
{
    RecordQuery q;
    if (const QString s = m_statusFilter->currentData().toString(); !s.isEmpty())
        q.status = parseReviewStatus(s.toStdString());
    if (const QString s = m_splitFilter->currentData().toString(); !s.isEmpty())
        q.split = s.toStdString();
    q.contains = m_search->text().trimmed().toStdString();
    q.flaggedOnly = m_flagged->isChecked();
    m_reselect = Reselect{};
    m_model->setFilter(q);
}

void DataPage::setStatusFilter(std::optional<ReviewStatus> status)
{
    const int i =
        status ? m_statusFilter->findData(QString::fromLatin1(reviewStatusName(*status))) : 0;
    m_statusFilter->setCurrentIndex(std::max(i, 0));
}

void DataPage::setSearchText(const QString& text)
{
    m_search->setText(text);
    m_searchDelay->stop();
    applyFilter();
}

void DataPage::updateCount()
{
    m_count->setText(m_store ? tr("%n record(s)", nullptr, m_model->rowCount()) : QString());
}

void DataPage::selectRow(int row)
{
    if (row < 0 || row >= m_model->rowCount())
        return;
    const QModelIndex index = m_model->index(row, RecordTableModel::ColId);
    m_table->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                          QItemSelectionModel::Rows);
    m_table->scrollTo(index);
}

qint64 DataPage::currentRecordId() const
{
    const QModelIndex current = m_table->currentIndex();
    return current.isValid() ? m_model->idAt(current.row()) : 0;
}

void DataPage::showCurrent()
{
    const qint64 id = currentRecordId();
    showRecordById(id);
}

void DataPage::showRecordById(qint64 id)
{
    // Typed edits are never dropped by a refresh or a move: the record being edited stays as
    // typed, and moving to another saves first. Where saving must wait (a job holds the store),
    // the editor keeps the edited record and the table goes back to it; Revert discards.
    if (m_editor->modified() && m_editor->recordId()) {
        const qint64 edited = *m_editor->recordId();
        if (edited == id)
            return;
        if (!saveEdits()) {
            QTimer::singleShot(0, this, [this, edited] {
                const int row = m_model->rowOf(edited);
                if (row >= 0 && currentRecordId() != edited)
                    selectRow(row);
            });
            return;
        }
    }
    std::optional<StoredRecord> record;
    if (m_store && id > 0) {
        try {
            record = m_store->record(id);
        } catch (const std::exception& e) {
            setMessage(QString::fromUtf8(e.what()), true);
        }
    }
    m_editor->showRecord(record, m_store.get());
}

bool DataPage::moveCurrent(int delta)
{
    const int rows = m_model->rowCount();
    if (rows == 0)
        return false;
    const QModelIndex current = m_table->currentIndex();
    const int row = current.isValid() ? current.row() + delta : 0;
    if (row < 0 || row >= rows)
        return false;
    selectRow(row);
    return true;
}

bool DataPage::reviewCurrent(const QString& decision, std::optional<int> rating)
{
    const qint64 id = currentRecordId();
    if (!m_store || id <= 0)
        return false;
    if (m_jobs->busy()) {
        setMessage(tr("Wait for “%1” to finish").arg(m_jobs->current()));
        return false;
    }
    const QString who = ensureAnnotator(true);
    if (who.isEmpty())
        return false;
    try {
        if (m_editor->modified() && m_editor->recordId() == id)
            saveEdits();
        m_store->review(id, who.toStdString(), decision.toStdString(), rating);
    } catch (const std::exception& e) {
        setMessage(QString::fromUtf8(e.what()), true);
        return false;
    }
    m_model->refreshRecord(id);
    showRecordById(id);
    setMessage(decision.isEmpty() ? tr("Record %1 rated %2 by %3").arg(id).arg(*rating).arg(who)
                                  : tr("Record %1: %2 by %3").arg(id).arg(decision, who));
    Q_EMIT recordReviewed(id);
    m_panelDelay->start();
    if (!decision.isEmpty() && m_advance->isChecked())
        moveCurrent(1);
    return true;
}

void DataPage::setAdvanceAfterDecision(bool on)
{
    m_advance->setChecked(on);
}

bool DataPage::saveEdits()
{
    const std::optional<int64_t> id = m_editor->recordId();
    if (!m_store || !id || !m_editor->modified())
        return false;
    if (m_jobs->busy()) {
        setMessage(tr("Wait for “%1” to finish, then save").arg(m_jobs->current()));
        return false;
    }
    const QString who = ensureAnnotator(true);
    if (who.isEmpty())
        return false;
    try {
        const QStringList written = m_editor->save(*m_store, who.toStdString());
        setMessage(tr("Record %1: saved %2").arg(*id).arg(written.join(QStringLiteral(", "))));
    } catch (const std::exception& e) {
        setMessage(QString::fromUtf8(e.what()), true);
        return false;
    }
    m_model->refreshRecord(*id);
    m_stats->markStale();  // its token count may have changed
    if (currentRecordId() == *id)
        showRecordById(*id);
    m_panelDelay->start();
    return true;
}

bool DataPage::hasUnsavedEdits() const
{
    return (m_editor->recordId() && m_editor->modified()) || m_pairs->editChanged();
}

bool DataPage::saveAllEdits()
{
    if (m_editor->recordId() && m_editor->modified() && !saveEdits())
        return false;
    if (m_pairs->editChanged() && !m_pairs->saveEdit())
        return false;
    m_pairs->cancelEdit();  // an answer opened for editing and left unchanged
    return true;
}

void DataPage::discardEdits()
{
    m_editor->revert();
    m_pairs->cancelEdit();
}

void DataPage::openImportDialog()
{
    if (!m_store)
        return;
    const QString who = ensureAnnotator(true);
    ImportDialog dialog(QString::fromStdString(m_store->path()),
                        who.isEmpty() ? QStringLiteral("studio") : who, modelDir(), this);
    connect(&dialog, &ImportDialog::imported, this, [this](const ImportOutcome& o) {
        if (o.error.isEmpty()) {
            setMessage(tr("Imported %1 records (%2 rows rejected)")
                           .arg(o.imported)
                           .arg(o.rejected.size()));
            refreshAll();
        }
    });
    dialog.exec();
}

bool DataPage::undoLastOperation()
{
    const QString who = ensureAnnotator(true);
    if (who.isEmpty())
        return false;
    return m_jobs->run(tr("Undo"),
                       [this, who](DataStore& store, const CurateProgress&) -> DataJobs::Finish {
                           const std::vector<OperationInfo> ops = store.operations();
                           for (auto it = ops.rbegin(); it != ops.rend(); ++it)
                               if (!it->undone && it->kind != "undo" && it->changes > 0) {
                                   const OperationInfo op = *it;
                                   store.undo(op.id, who.toStdString());
                                   return [this, op] {
                                       setMessage(tr("Undid operation %1 (%2 by %3)")
                                                      .arg(op.id)
                                                      .arg(QString::fromStdString(op.kind),
                                                           QString::fromStdString(op.who)));
                                   };
                               }
                           return [this] { setMessage(tr("Nothing to undo")); };
                       });
}

bool DataPage::snapshot(const QString& split, bool acceptedOnly)
{
    const QString who = ensureAnnotator(false);
    SnapshotOptions o;
    o.split = split.toStdString();
    o.acceptedOnly = acceptedOnly;
    o.who = who.isEmpty() ? "studio" : who.toStdString();
    if (m_state)
        o.templateInfo = {
            {"chat_template", chatTemplateChoiceName(m_state->config().data.chatTemplate)},
            {"max_length", m_state->config().data.maxLength}};
    return m_jobs->run(
        tr("Snapshot"),
        [this, o](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            const SnapshotInfo s = createSnapshot(store, o, progress);
            return [this, s] {
                setMessage(tr("Snapshot %1: %2 records, sha256 %3… — train on it "
                              "with \"snapshot\": \"%1\"")
                               .arg(QString::fromStdString(s.id))
                               .arg(s.records)
                               .arg(QString::fromStdString(s.sha256).left(12)));
            };
        });
}

void DataPage::openSynthDialog()
{
    SynthDialog dialog(QString::fromLatin1(chatTemplateChoiceName(
                           m_state ? m_state->config().data.chatTemplate : std::nullopt)),
                       currentRecordId(), this);
    if (dialog.exec() == QDialog::Accepted)
        generateSynthetic(dialog.request(modelDir()));
}

bool DataPage::generateSynthetic(const SynthRequest& request)
{
    return runSynthetic(m_jobs, request, [this](const SynthReport& r) {
        setMessage(tr("Generated %1 synthetic records from %2 seeds; they are pending review.")
                       .arg(r.generated)
                       .arg(r.seeds));
    });
}

void DataPage::refreshAll()
{
    // Stay on the same record when it is still listed, else at the same place in the list.
    m_reselect = Reselect{currentRecordId(),
                          m_table->currentIndex().isValid() ? m_table->currentIndex().row() : 0};
    m_model->refresh();
    m_pairs->refresh();
    m_stats->markStale();
    refreshVisiblePanel();
}

void DataPage::afterIds()
{
    updateCount();
    if (!m_reselect)
        return;  // a sort: the selection followed its record
    const Reselect want = *m_reselect;
    m_reselect.reset();
    const int again = want.id > 0 ? m_model->rowOf(want.id) : -1;
    if (m_model->rowCount() > 0)
        selectRow(again >= 0 ? again : std::min(want.row, m_model->rowCount() - 1));
    else
        showCurrent();
}

void DataPage::refreshVisiblePanel()
{
    if (!m_store)
        return;
    if (m_tabs->currentWidget() == m_review)
        m_review->refresh();
    else if (m_tabs->currentWidget() == m_history)
        m_history->refresh();
}

void DataPage::setMessage(const QString& text, bool error)
{
    m_message->setText(text);
    m_message->setStyleSheet(error ? QStringLiteral("color:#c0392b") : QString());
}

QString DataPage::message() const
{
    return m_message->text();
}

}  // namespace tb
