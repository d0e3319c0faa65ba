// Evaluate page: settings on the left; controls, the result tabs and the export row on the right;
// the EvalController's drained batches move the progress bar and fill the tables.
#include "evaluate_page.h"

#include "compare_view.h"
#include "eval_controller.h"
#include "eval_report.h"
#include "eval_settings_panel.h"
#include "example_table_model.h"
#include "job_pool.h"
#include "metric_units.h"
#include "score_chart.h"
#include "scorecard_model.h"
#include "studio_state.h"
#include "suite_table_model.h"

#include "data/store/comparisons.h"
#include "data/store/store.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <exception>

namespace tb {

namespace {

QTableView* makeTable(QWidget* parent, QAbstractItemModel* model)
{
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setWordWrap(false);
    view->horizontalHeader()->setStretchLastSection(true);
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 8);
    return view;
}

}  // namespace

EvaluatePage::EvaluatePage(StudioState* state, QWidget* parent)
    : QWidget(parent), m_state(state), m_controller(new EvalController(this))
{
    auto* layout = new QHBoxLayout(this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFixedWidth(330);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setFrameShape(QFrame::NoFrame);
    m_settings = new EvalSettingsPanel(state, scroll);
    scroll->setWidget(m_settings);
    layout->addWidget(scroll);

    auto* right = new QVBoxLayout();
    auto* controls = new QHBoxLayout();
    m_evaluate = new QPushButton(tr("Evaluate"), this);
    m_evaluate->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_progress = new QProgressBar(this);
    m_progress->setFormat(tr("%v of %m cases"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    controls->addWidget(m_evaluate);
    controls->addWidget(m_cancel);
    controls->addWidget(m_progress, 1);
    right->addLayout(controls);
    right->addWidget(m_status);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(buildScorecardTab(), tr("Scorecard"));
    m_tabs->addTab(buildExamplesTab(), tr("Examples"));
    m_tabs->addTab(buildSuiteTab(), tr("Regression suite"));
    m_tabs->addTab(buildBlindTab(), tr("Blind comparison"));
    right->addWidget(m_tabs, 1);
    right->addWidget(buildExportRow());
    layout->addLayout(right, 1);

    connect(m_evaluate, &QPushButton::clicked, this, [this] { evaluate(); });
    connect(m_cancel, &QPushButton::clicked, this, &EvaluatePage::cancel);
    connect(m_settings, &EvalSettingsPanel::message, this, &EvaluatePage::setStatus);
    connect(m_controller, &EvalController::progress, this, [this](qint64 done, qint64 total) {
        m_progress->setRange(0, int(std::max<qint64>(1, total)));
        m_progress->setValue(int(done));
    });
    connect(m_controller, &EvalController::status, this, &EvaluatePage::setStatus);
    connect(m_controller, &EvalController::evaluationFinished, this,
            &EvaluatePage::onEvaluationFinished);
    connect(m_controller, &EvalController::suiteFinished, this, &EvaluatePage::onSuiteFinished);
    connect(m_state, &StudioState::runsChanged, this, &EvaluatePage::refreshSuiteRuns);
    // A config change lists the runs again only when it moved the output folder (a slider or spin
    // box changes the config many times a second; each list stats every run folder).
    connect(m_state, &StudioState::configChanged, this, [this] {
        if (QString::fromStdString(m_state->config().outputDir) != m_runsListedFrom)
            refreshSuiteRuns();
    });
    refreshSuiteRuns();
    updateButtons();
}

EvaluatePage::~EvaluatePage()
{
    if (m_compare)
        m_compare->setStore(nullptr);  // before the page's store connection closes
}

QWidget* EvaluatePage::buildScorecardTab()
{
    auto* split = new QSplitter(Qt::Vertical, this);
    m_scorecard = new ScorecardModel(this);
    m_scorecardView = makeTable(split, m_scorecard);
    m_chart = new ScoreChart(split);
    split->addWidget(m_scorecardView);
    split->addWidget(m_chart);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    return split;
}

QWidget* EvaluatePage::buildExamplesTab()
{
    auto* tab = new QWidget(this);
    auto* v = new QVBoxLayout(tab);
    auto* bar = new QHBoxLayout();
    m_exampleRun = new QComboBox(tab);
    m_failingOnly = new QCheckBox(tr("Failing only (the run scores below the base)"), tab);
    bar->addWidget(new QLabel(tr("Run:"), tab));
    bar->addWidget(m_exampleRun);
    bar->addWidget(m_failingOnly);
    bar->addStretch(1);
    bar->addWidget(new QLabel(tr("Double-click a store case to open it on the Data page."), tab));
    v->addLayout(bar);
    m_examples = new ExampleTableModel(this);
    m_proxy = new ExampleFilterProxy(this);
    m_proxy->setSourceModel(m_examples);
    auto* split = new QSplitter(Qt::Vertical, tab);
    m_exampleView = makeTable(split, m_proxy);
    m_exampleView->setSortingEnabled(true);
    m_diff = new QTextBrowser(split);
    split->addWidget(m_exampleView);
    split->addWidget(m_diff);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    v->addWidget(split, 1);
    connect(m_failingOnly, &QCheckBox::toggled, m_proxy, &ExampleFilterProxy::setFailingOnly);
    connect(m_exampleRun, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0)
            m_examples->setRun(m_exampleRun->itemData(i).toInt());
    });
    connect(m_exampleView->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { showExample(current); });
    connect(m_exampleView, &QTableView::doubleClicked, this, &EvaluatePage::openExample);
    return tab;
}

QWidget* EvaluatePage::buildSuiteTab()
{
    auto* tab = new QWidget(this);
    auto* v = new QVBoxLayout(tab);
    auto* bar = new QHBoxLayout();
    m_suiteFile = new QLineEdit(tab);
    m_suiteFile->setPlaceholderText(tr("suite.jsonl: golden prompts and checks"));
    auto* browse = new QPushButton(tr("…"), tab);
    browse->setMaximumWidth(32);
    m_suiteRun = new QComboBox(tab);
    m_suiteSkipBase = new QCheckBox(tr("Tuned model only"), tab);
    m_runSuite = new QPushButton(tr("Run suite"), tab);
    bar->addWidget(new QLabel(tr("Suite:"), tab));
    bar->addWidget(m_suiteFile, 1);
    bar->addWidget(browse);
    bar->addWidget(new QLabel(tr("Run:"), tab));
    bar->addWidget(m_suiteRun);
    bar->addWidget(m_suiteSkipBase);
    bar->addWidget(m_runSuite);
    v->addLayout(bar);
    m_gate = new QLabel(tab);
    m_gate->setWordWrap(true);
    v->addWidget(m_gate);
    m_suite = new SuiteTableModel(this);
    m_suiteView = makeTable(tab, m_suite);
    v->addWidget(m_suiteView, 1);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Regression suite"), m_suiteFile->text(), tr("JSONL files (*.jsonl)"));
        if (!path.isEmpty())
            m_suiteFile->setText(path);
    });
    connect(m_runSuite, &QPushButton::clicked, this, [this] { runSuite(); });
    return tab;
}

QWidget* EvaluatePage::buildExportRow()
{
    auto* row = new QWidget(this);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    h->addStretch(1);
    const std::pair<QString, ReportFormat> formats[] = {
        {tr("Export Markdown…"), ReportFormat::Markdown},
        {tr("Export HTML…"), ReportFormat::Html},
        {tr("Export CSV…"), ReportFormat::Csv}};
    for (const auto& [label, format] : formats) {
        auto* b = new QPushButton(label, row);
        const ReportFormat f = format;
        connect(b, &QPushButton::clicked, this, [this, f] { exportWithDialog(f); });
        h->addWidget(b);
        m_exportButtons << b;
    }
    return row;
}

std::shared_ptr<const EvalOutcome> EvaluatePage::outcome() const
{
    return m_controller->lastEvaluation();
}

bool EvaluatePage::busy() const
{
    return m_controller->busy();
}

bool EvaluatePage::evaluate()
{
    if (busy())
        return false;
    QString error;
    const std::optional<EvalRequest> request = m_settings->request(&error);
    if (!request) {
        setStatus(error);
        return false;
    }
    if (!m_controller->startEvaluation(*request))
        return false;
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    setStatus(tr("Starting…"));
    updateButtons();
    return true;
}

void EvaluatePage::cancel()
{
    if (!busy())
        return;
    m_controller->cancel();
    setStatus(tr("Cancelling after the batch in flight…"));
}

void EvaluatePage::refreshSuiteRuns()
{
    m_runsListedFrom = QString::fromStdString(m_state->config().outputDir);
    m_settings->refreshRuns();
    const QString keep = m_suiteRun->currentData().toString();
    const QSignalBlocker block(m_suiteRun);
    m_suiteRun->clear();
    for (const QString& dir : m_settings->runs())
        m_suiteRun->addItem(QFileInfo(dir).fileName(), dir);
    m_suiteRun->setCurrentIndex(std::max(0, m_suiteRun->findData(keep)));
}

bool EvaluatePage::runSuite(const QString& suiteFile, const QString& runDir)
{
    if (busy())
        return false;
    if (!suiteFile.isEmpty())
        m_suiteFile->setText(suiteFile);
    if (!runDir.isEmpty()) {
        if (m_suiteRun->findData(runDir) < 0)
            m_suiteRun->addItem(QFileInfo(runDir).fileName(), runDir);
        m_suiteRun->setCurrentIndex(m_suiteRun->findData(runDir));
    }
    SuiteRequest r;
    r.suiteFile = m_suiteFile->text().trimmed();
    r.runDir = m_suiteRun->currentData().toString();
    r.skipBase = m_suiteSkipBase->isChecked();
    r.maxNewTokens = m_settings->maxTokensBox()->value();
    r.batch = m_settings->batchBox()->value();
    if (r.suiteFile.isEmpty() || r.runDir.isEmpty()) {
        m_gate->setText(tr("Choose a suite file and a run."));
        return false;
    }
    if (!m_controller->startSuite(r))
        return false;
    m_gate->setText(tr("Running…"));
    updateButtons();
    return true;
}

void EvaluatePage::onEvaluationFinished(bool ok, bool cancelled, const QString& message)
{
    setStatus(message);
    if (ok)
        showOutcome();
    else if (cancelled)
        m_progress->setValue(m_progress->minimum());
    updateButtons();
    Q_EMIT evaluationFinished(ok, cancelled, message);
}

void EvaluatePage::onSuiteFinished(bool ok, bool cancelled, const QString& message)
{
    const auto suite = m_controller->lastSuite();
    if (ok && suite) {
        m_suite->setReport(suite->report);
        m_gate->setText(SuiteTableModel::gateSummary(suite->report) + QLatin1Char(' ') +
                        tr("Written to %1.").arg(suite->dir));
        m_gate->setStyleSheet(suite->report.gateFailed()
                                  ? QStringLiteral("QLabel { color: #a93226; font-weight: bold; }")
                                  : QStringLiteral("QLabel { color: #1e8449; }"));
    } else {
        m_gate->setText(message);
        m_gate->setStyleSheet(QString());
    }
    setStatus(message);
    updateButtons();
    Q_EMIT suiteFinished(ok, cancelled, message);
}

void EvaluatePage::showOutcome()
{
    const auto o = outcome();
    if (!o)
        return;
    const ScoreTable table = scoreTable(*o);
    m_scorecard->setTable(table);
    m_scorecardView->resizeColumnsToContents();
    m_chart->setTable(table);
    m_examples->setOutcome(o);
    {
        const QSignalBlocker block(m_exampleRun);
        m_exampleRun->clear();
        m_blindRun->clear();
        for (qsizetype s = 1; s < o->labels.size(); ++s) {
            m_exampleRun->addItem(o->labels[s], int(s));
            m_blindRun->addItem(o->labels[s], int(s));
        }
    }
    m_failingOnly->setEnabled(m_examples->comparing());
    m_exampleView->resizeColumnsToContents();
    for (int c = 0; c < m_examples->columnCount(); ++c)
        m_exampleView->setColumnWidth(c, std::min(m_exampleView->columnWidth(c), 260));
    m_diff->clear();
    if (!o->warnings.isEmpty())
        setStatus(
            m_status->text() + QLatin1Char('\n') +
            tr("%n row(s) skipped: %1", nullptr, int(o->warnings.size())).arg(o->warnings.first()));
}

void EvaluatePage::showExample(const QModelIndex& proxyIndex)
{
    const auto o = outcome();
    if (!o || !proxyIndex.isValid()) {
        m_diff->clear();
        return;
    }
    const int row = m_proxy->mapToSource(proxyIndex).row();
    const int run = m_examples->run();
    const eval::EvalPrediction& base = o->results.front().predictions[size_t(row)];
    QString html = QStringLiteral("<p><b>%1</b> %2</p><p><b>%3</b> %4</p>")
                       .arg(tr("Prompt:"), htmlEscape(promptText(base.input)), tr("Reference:"),
                            htmlEscape(referenceText(base.input)));
    if (run > 0) {
        const auto& tuned = o->results[size_t(run)].predictions[size_t(row)];
        const auto [a, b] = wordDiffHtml(QString::fromStdString(base.prediction),
                                         QString::fromStdString(tuned.prediction));
        html += QStringLiteral("<p><b>%1:</b> %2</p><p><b>%3:</b> %4</p>")
                    .arg(htmlEscape(o->labels.value(0)), a, htmlEscape(o->labels.value(run)), b);
    } else {
        html += QStringLiteral("<p><b>%1:</b> %2</p>")
                    .arg(htmlEscape(o->labels.value(0)),
                         htmlEscape(QString::fromStdString(base.prediction)));
    }
    m_diff->setHtml(html);
}

void EvaluatePage::openExample(const QModelIndex& proxyIndex)
{
    if (!proxyIndex.isValid())
        return;
    const qint64 id = m_examples->recordId(m_proxy->mapToSource(proxyIndex).row());
    if (id > 0)
        Q_EMIT showRecordRequested(id);
    else
        setStatus(tr("This case comes from a file, not from the store."));
}

bool EvaluatePage::exportReport(const QString& path, ReportFormat format, QString* error) const
{
    const auto o = outcome();
    if (!o) {
        if (error)
            *error = tr("Nothing to export: run an evaluation first.");
        return false;
    }
    return writeReport(*o, path, format, error);
}

bool EvaluatePage::writeReport(const EvalOutcome& o, const QString& path, ReportFormat format,
                               QString* error)
{
    const QString text = format == ReportFormat::Markdown ? reportMarkdown(o)
                         : format == ReportFormat::Html   ? reportHtml(o)
                                                          : examplesCsv(o);
    return writeTextFile(path, text, error);
}

void EvaluatePage::exportWithDialog(ReportFormat format)
{
    const auto [name, filter] =
        format == ReportFormat::Markdown
            ? std::pair{QStringLiteral("scorecard.md"), tr("Markdown (*.md)")}
        : format == ReportFormat::Html
            ? std::pair{QStringLiteral("evaluation.html"), tr("HTML (*.html)")}
            : std::pair{QStringLiteral("examples.csv"), tr("CSV (*.csv)")};
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), name, filter);
    if (!path.isEmpty())
        exportReportInBackground(path, format);
}

void EvaluatePage::exportReportInBackground(const QString& path, ReportFormat format)
{
    const std::shared_ptr<const EvalOutcome> o = outcome();
    if (!o) {
        setStatus(tr("Nothing to export: run an evaluation first."));
        Q_EMIT reportWritten(path, tr("Nothing to export: run an evaluation first."));
        return;
    }
    // Built and written on a worker: thousands of cases times every system's answers make tens
    // of megabytes of escaped text. The outcome is immutable and shared, so the page may start
    // another evaluation meanwhile.
    setStatus(tr("Writing %1…").arg(path));
    auto* watcher = new QFutureWatcher<QString>(this);
    ++m_reportsWriting;
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, path] {
        watcher->deleteLater();
        --m_reportsWriting;
        const QString error = watcher->result();
        setStatus(error.isEmpty() ? tr("Wrote %1").arg(path)
                                  : tr("Could not write %1: %2").arg(path, error));
        Q_EMIT reportWritten(path, error);
    });
    watcher->setFuture(QtConcurrent::run(longJobPool(), [o, path, format] {
        QString error;
        return writeReport(*o, path, format, &error) ? QString() : error;
    }));
}

void EvaluatePage::updateButtons()
{
    const bool running = busy();
    m_evaluate->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_runSuite->setEnabled(!running);
    m_startBlind->setEnabled(!running && outcome() && outcome()->results.size() > 1);
    for (QPushButton* b : m_exportButtons)
        b->setEnabled(!running && outcome() != nullptr);
}

void EvaluatePage::setStatus(const QString& text)
{
    m_status->setText(text);
}

QString EvaluatePage::statusText() const
{
    return m_status->text();
}
QString EvaluatePage::gateText() const
{
    return m_gate->text();
}
QString EvaluatePage::blindStatusText() const
{
    return m_blindStatus->text();
}

// The Blind comparison tab (CompareView over the project's store) -------------------------------

QWidget* EvaluatePage::buildBlindTab()
{
    auto* tab = new QWidget(this);
    m_blindLayout = new QVBoxLayout(tab);
    auto* bar = new QHBoxLayout();
    m_blindRun = new QComboBox(tab);
    m_startBlind = new QPushButton(tr("Start blind comparison"), tab);
    m_startBlind->setToolTip(
        tr("Puts the base model's and the run's answers of the last evaluation into the "
           "project's store as a comparison set; judge them without knowing which is which."));
    bar->addWidget(new QLabel(tr("Run:"), tab));
    bar->addWidget(m_blindRun);
    bar->addWidget(m_startBlind);
    bar->addStretch(1);
    m_blindLayout->addLayout(bar);
    m_blindStatus = new QLabel(tr("Evaluate the base model and a run first."), tab);
    m_blindStatus->setWordWrap(true);
    m_blindLayout->addWidget(m_blindStatus);
    m_blindLayout->addStretch(1);
    connect(m_startBlind, &QPushButton::clicked, this,
            [this] { startBlindComparison(m_blindRun->currentData().toInt()); });
    return tab;
}

bool EvaluatePage::startBlindComparison(int system)
{
    const auto o = outcome();
    if (!o || system < 1 || size_t(system) >= o->results.size()) {
        m_blindStatus->setText(tr("Evaluate the base model and a run first."));
        return false;
    }
    const QString path = m_state->storePath();
    if (path.isEmpty()) {
        m_blindStatus->setText(tr("Open the project's dataset store on the Data page first."));
        return false;
    }
    NewComparisonSet set;
    set.sourceX = o->labels.value(0).toStdString();
    set.sourceY = o->labels.value(system).toStdString();
    if (set.sourceY == set.sourceX)
        set.sourceY += " (run)";
    set.name =
        QFileInfo(o->dir).fileName().toStdString() + ": " + set.sourceX + " vs " + set.sourceY;
    set.seed = o->scorecard ? o->scorecard->seed : 0;
    const auto& base = o->results.front().predictions;
    const auto& tuned = o->results[size_t(system)].predictions;
    for (size_t i = 0; i < base.size(); ++i) {
        set.prompts.push_back(promptText(base[i].input).toStdString());
        nlohmann::json messages = nlohmann::json::array();
        for (const ChatMessage& m : base[i].input.prompt)
            messages.push_back({{"role", m.role}, {"content", m.content}});
        set.messages.push_back(messages);
        set.answersX.push_back(base[i].prediction);
        set.answersY.push_back(tuned[i].prediction);
    }
    try {
        // The page's own connection on the GUI thread (WAL: the Data page's stays valid); the
        // view writes each verdict through it as one small transaction.
        if (!m_blindStore || m_blindStorePath != path) {
            if (m_compare)
                m_compare->setStore(nullptr);
            m_blindStore = DataStore::open(path.toStdString(), false);
            // A verdict behind a Data page job's write (token statistics hold one for a minute
            // on a large store) fails after 0.3 s with "database is locked", said in the view,
            // instead of freezing the window for the default 10 s.
            m_blindStore->setBusyTimeout(300);
            m_blindStorePath = path;
        }
        const QString who = QSettings().value(QStringLiteral("data/annotator")).toString();
        addComparisonSet(*m_blindStore, set, who.isEmpty() ? "studio" : who.toStdString());
    } catch (const std::exception& e) {
        m_blindStatus->setText(
            tr("Could not add the comparison set: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    if (!m_compare) {
        m_compare = new CompareView(m_blindLayout->parentWidget());
        delete m_blindLayout->takeAt(m_blindLayout->count() - 1);  // the view takes the space
        m_blindLayout->addWidget(m_compare, 1);
    }
    m_compare->setStore(m_blindStore.get());
    m_compare->setSet(QString::fromStdString(set.name));
    const QString who = QSettings().value(QStringLiteral("data/annotator")).toString();
    if (!who.isEmpty() && m_compare->annotator().isEmpty())
        m_compare->setAnnotator(who);
    m_blindStatus->setText(tr("Comparison set \u201c%1\u201d: %2 prompts in %3. Judge each pair "
                              "without knowing which model wrote which answer.")
                               .arg(QString::fromStdString(set.name))
                               .arg(qint64(base.size()))
                               .arg(QFileInfo(path).fileName()));
    return true;
}

}  // namespace tb
