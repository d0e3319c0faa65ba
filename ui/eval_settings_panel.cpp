// EvalSettingsPanel: four groups of the Evaluate page's form; the store's snapshots are listed on
// a worker (SQLite never on the GUI thread).
#include "eval_settings_panel.h"

#include "quant_choice.h"

#include "studio_state.h"

#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "eval/metric.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSet>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

QListWidgetItem* checkable(QListWidget* list, const QString& text, bool on)
{
    auto* item = new QListWidgetItem(text, list);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    return item;
}

}  // namespace

EvalSettingsPanel::EvalSettingsPanel(StudioState* state, QWidget* parent)
    : QWidget(parent), m_state(state)
{
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(0, 0, 6, 0);
    auto group = [this, v](const QString& title) {
        auto* g = new QGroupBox(title, this);
        auto* f = new QFormLayout(g);
        f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        v->addWidget(g);
        return f;
    };
    buildModelGroup(group(tr("Models")));
    buildDataGroup(group(tr("Held-out data")));
    buildMetricGroup(group(tr("Metrics")));
    buildGenerationGroup(group(tr("Generation")));
    v->addStretch(1);
    connect(m_state, &StudioState::modelChanged, this, &EvalSettingsPanel::showModel);
    connect(m_state, &StudioState::runsChanged, this, &EvalSettingsPanel::refreshRuns);
    connect(m_state, &StudioState::configChanged, this, [this] { refreshRuns(); });
    connect(m_state, &StudioState::storePathChanged, this, [this] { refreshSnapshots(); });
    connect(&m_snapshotWatcher, &QFutureWatcher<QStringList>::finished, this, [this] {
        const QString keep = m_snapshot->currentText();
        m_snapshot->clear();
        const QStringList ids = m_snapshotWatcher.result();
        for (const QString& id : ids) {
            if (id.startsWith(QStringLiteral("error: ")))
                Q_EMIT message(id);
            else
                m_snapshot->addItem(id);
        }
        m_snapshot->setCurrentIndex(std::max(0, m_snapshot->findText(keep)));
        Q_EMIT snapshotsListed();
    });
    showModel();
    refreshRuns();
    showSourceRows();
}

EvalSettingsPanel::~EvalSettingsPanel()
{
    m_snapshotWatcher.waitForFinished();
}

void EvalSettingsPanel::buildModelGroup(QFormLayout* form)
{
    m_model = new QLabel(this);
    m_model->setWordWrap(true);
    m_runs = new QListWidget(this);
    m_runs->setMinimumHeight(90);
    m_runs->setToolTip(tr("Checked runs are compared with the base model on the same cases; "
                          "none checked: the base model alone."));
    auto* refresh = new QPushButton(tr("Rescan runs"), this);
    connect(refresh, &QPushButton::clicked, this, &EvalSettingsPanel::refreshRuns);
    m_quantBase = new QComboBox(this);
    fillQuantChoice(m_quantBase, tr("off (the base as stored)"));
    m_quantBase->setToolTip(
        tr("Also evaluate the base model with its linear weights held quantised, as a QLoRA run "
           "holds them: the scorecard shows what the format alone costs beside the fine-tune."));
    form->addRow(tr("Base model:"), m_model);
    form->addRow(tr("Runs:"), m_runs);
    form->addRow(QString(), refresh);
    form->addRow(tr("Quantised base:"), m_quantBase);
}

void EvalSettingsPanel::buildDataGroup(QFormLayout* form)
{
    m_source = new QComboBox(this);
    m_source->addItem(tr("The first run's validation split"), RunSplit);
    m_source->addItem(tr("A JSONL file"), JsonlFile);
    m_source->addItem(tr("A snapshot of the project's store"), StoreSnapshot);
    m_fileRow = new QWidget(this);
    auto* row = new QHBoxLayout(m_fileRow);
    row->setContentsMargins(0, 0, 0, 0);
    m_file = new QLineEdit(m_fileRow);
    m_file->setPlaceholderText(tr("held-out cases (.jsonl)"));
    auto* browse = new QPushButton(tr("…"), m_fileRow);
    browse->setMaximumWidth(32);
    row->addWidget(m_file, 1);
    row->addWidget(browse);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Held-out data"), m_file->text(),
                                                          tr("JSONL files (*.jsonl);;All (*)"));
        if (!path.isEmpty())
            m_file->setText(path);
    });
    m_snapshot = new QComboBox(this);
    m_snapshot->setPlaceholderText(tr("no snapshot (Data page)"));
    m_limit = new QSpinBox(this);
    m_limit->setRange(0, 1000000);
    m_limit->setSpecialValueText(tr("all"));
    m_limit->setSuffix(tr(" cases"));
    m_limit->setValue(50);
    form->addRow(tr("From:"), m_source);
    form->addRow(tr("File:"), m_fileRow);
    form->addRow(tr("Snapshot:"), m_snapshot);
    form->addRow(tr("First:"), m_limit);
    m_dataForm = form;
    connect(m_source, &QComboBox::currentIndexChanged, this, [this] {
        showSourceRows();
        if (m_source->currentData().toInt() == StoreSnapshot)
            refreshSnapshots();
    });
}

void EvalSettingsPanel::buildMetricGroup(QFormLayout* form)
{
    m_metrics = new QListWidget(this);
    m_metrics->setMinimumHeight(120);
    for (const std::string& name : eval::metricNames()) {
        // stop_rate and length come with every comparison; they are listed for a single model.
        const bool on = name == "exact_match" || name == "f1" || name == "bleu";
        checkable(m_metrics, QString::fromStdString(name), on);
    }
    form->addRow(m_metrics);
    auto* row = new QWidget(this);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    m_glossary = new QLineEdit(row);
    m_glossary->setPlaceholderText(tr("terminology: source → target terms"));
    auto* browse = new QPushButton(tr("…"), row);
    browse->setMaximumWidth(32);
    h->addWidget(m_glossary, 1);
    h->addWidget(browse);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Glossary"), m_glossary->text(), tr("Glossaries (*.tsv *.csv *.json *.txt)"));
        if (!path.isEmpty())
            m_glossary->setText(path);
    });
    form->addRow(tr("Glossary:"), row);
}

void EvalSettingsPanel::buildGenerationGroup(QFormLayout* form)
{
    auto spin = [this](int lo, int hi, int value) {
        auto* s = new QSpinBox(this);
        s->setRange(lo, hi);
        s->setValue(value);
        return s;
    };
    m_maxTokens = spin(1, 32768, 64);
    m_batch = spin(1, 512, 8);
    m_resamples = spin(1, 100000, 1000);
    m_seed = spin(0, 2147483647, 0);
    m_greedy = new QCheckBox(tr("Greedy (argmax)"), this);
    m_greedy->setChecked(true);
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setRange(0.01, 5);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(0.8);
    m_temperature->setEnabled(false);
    connect(m_greedy, &QCheckBox::toggled, m_temperature,
            [this](bool on) { m_temperature->setEnabled(!on); });
    form->addRow(tr("Max new tokens:"), m_maxTokens);
    form->addRow(QString(), m_greedy);
    form->addRow(tr("Temperature:"), m_temperature);
    form->addRow(tr("Batch:"), m_batch);
    form->addRow(tr("Bootstrap resamples:"), m_resamples);
    form->addRow(tr("Seed:"), m_seed);
}

void EvalSettingsPanel::showModel()
{
    const QString path = m_state->modelPath();
    m_model->setText(path.isEmpty() ? tr("(open a model; else each run's own base)")
                                    : QFileInfo(path).fileName());
    m_model->setToolTip(path);
}

void EvalSettingsPanel::showSourceRows()
{
    const int source = m_source->currentData().toInt();
    m_dataForm->setRowVisible(m_fileRow, source == JsonlFile);
    m_dataForm->setRowVisible(m_snapshot, source == StoreSnapshot);
}

void EvalSettingsPanel::setSource(Source source)
{
    m_source->setCurrentIndex(m_source->findData(source));
}

void EvalSettingsPanel::setDataFile(const QString& path)
{
    m_file->setText(path);
}

void EvalSettingsPanel::setMetrics(const QStringList& names)
{
    for (int i = 0; i < m_metrics->count(); ++i)
        m_metrics->item(i)->setCheckState(
            names.contains(m_metrics->item(i)->text()) ? Qt::Checked : Qt::Unchecked);
}

void EvalSettingsPanel::refreshRuns()
{
    QSet<QString> checked;
    for (const QString& r : checkedRuns())
        checked << r;
    QStringList dirs = m_state->runs();
    const QDir root(QString::fromStdString(m_state->config().outputDir));
    for (const QFileInfo& f :
         root.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time | QDir::Reversed))
        if (QFileInfo::exists(f.filePath() + QStringLiteral("/run.json")) &&
            !dirs.contains(f.filePath()))
            dirs << f.filePath();
    if (dirs == runs())
        return;  // unchanged: keep the list (and the user's scroll position)
    m_runs->clear();
    for (const QString& dir : dirs) {
        QListWidgetItem* item = checkable(m_runs, QFileInfo(dir).fileName(), checked.contains(dir));
        item->setData(Qt::UserRole, dir);
        item->setToolTip(dir);
    }
}

QStringList EvalSettingsPanel::runs() const
{
    QStringList out;
    for (int i = 0; i < m_runs->count(); ++i)
        out << m_runs->item(i)->data(Qt::UserRole).toString();
    return out;
}

QStringList EvalSettingsPanel::checkedRuns() const
{
    QStringList out;
    for (int i = 0; i < m_runs->count(); ++i)
        if (m_runs->item(i)->checkState() == Qt::Checked)
            out << m_runs->item(i)->data(Qt::UserRole).toString();
    return out;
}

void EvalSettingsPanel::setRunChecked(const QString& runDir, bool on)
{
    refreshRuns();
    for (int i = 0; i < m_runs->count(); ++i)
        if (m_runs->item(i)->data(Qt::UserRole).toString() == runDir)
            m_runs->item(i)->setCheckState(on ? Qt::Checked : Qt::Unchecked);
}

void EvalSettingsPanel::refreshSnapshots()
{
    const QString path = m_state->storePath();
    m_snapshotWatcher.setFuture(QtConcurrent::run([path] {
        QStringList ids;
        if (path.isEmpty() || !QFileInfo::exists(path))
            return ids;
        try {
            const auto store = DataStore::open(path.toStdString(), false);
            const std::vector<SnapshotInfo> all = listSnapshots(*store);
            for (auto it = all.rbegin(); it != all.rend(); ++it)  // newest first
                ids << QString::fromStdString(it->id);
        } catch (const std::exception& e) {
            ids << QStringLiteral("error: ") + QString::fromUtf8(e.what());
        }
        return ids;
    }));
}

std::optional<EvalRequest> EvalSettingsPanel::request(QString* error) const
{
    auto failWith = [error](const QString& why) -> std::optional<EvalRequest> {
        if (error)
            *error = why;
        return std::nullopt;
    };
    EvalRequest r;
    r.baseModel = m_state->modelPath();
    r.runs = checkedRuns();
    r.chatTemplate =
        QString::fromLatin1(chatTemplateChoiceName(m_state->config().data.chatTemplate));
    r.runsFolder = QString::fromStdString(m_state->config().outputDir);
    if (r.baseModel.isEmpty() && r.runs.isEmpty())
        return failWith(tr("Open a model or check a run."));
    switch (m_source->currentData().toInt()) {
    case RunSplit:
        if (r.runs.isEmpty())
            return failWith(tr("A run's validation split needs a checked run; or choose a file."));
        r.data.run = r.runs.front().toStdString();
        break;
    case JsonlFile:
        if (m_file->text().trimmed().isEmpty())
            return failWith(tr("Choose the held-out data file."));
        r.data.file = m_file->text().trimmed().toStdString();
        break;
    default:
        if (m_state->storePath().isEmpty() || m_snapshot->currentText().isEmpty())
            return failWith(tr("Freeze a snapshot of the project's store first (Data page)."));
        r.data.store = m_state->storePath().toStdString();
        r.data.snapshot = m_snapshot->currentText().toStdString();
    }
    if (const QuantOptions q = quantChoice(m_quantBase); q.enabled()) {
        if (r.runs.isEmpty())
            return failWith(tr("A quantised base is compared with the base and a run: check a "
                               "run, or set Quantised base to off."));
        r.bases = {QuantOptions{}, q};
    }
    r.data.limit = m_limit->value();
    r.settings.metrics.clear();
    for (int i = 0; i < m_metrics->count(); ++i)
        if (m_metrics->item(i)->checkState() == Qt::Checked)
            r.settings.metrics.push_back(m_metrics->item(i)->text().toStdString());
    if (r.settings.metrics.empty())
        return failWith(tr("Check at least one metric."));
    r.settings.glossaryPath = m_glossary->text().trimmed().toStdString();
    if (r.settings.glossaryPath.empty() &&
        std::find(r.settings.metrics.begin(), r.settings.metrics.end(), "terminology") !=
            r.settings.metrics.end())
        return failWith(tr("Terminology adherence needs a glossary file."));
    r.settings.batch = m_batch->value();
    r.settings.resamples = m_resamples->value();
    r.settings.seed = uint64_t(m_seed->value());
    GenerateOptions& g = r.settings.generation;
    g.maxNewTokens = m_maxTokens->value();
    g.greedy = m_greedy->isChecked();
    g.temperature = m_temperature->value();
    g.seed = r.settings.seed;
    return r;
}

}  // namespace tb
