// TrainSettingsForm: the run, optimizer and data groups; widgets <-> StudioState's config, and the
// store's snapshots listed on a worker (SQLite never on the GUI thread).
#include "train_settings_form.h"

#include "studio_state.h"
#include "train_launch_box.h"

#include "data/store/snapshot.h"
#include "data/store/store.h"
#include "eval/metric.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QShowEvent>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

// Write a value only where it differs, so an unchanged widget keeps its text, cursor and selection.
void setValue(QSpinBox* box, int v)
{
    if (box->value() != v)
        box->setValue(v);
}
void setValue(QDoubleSpinBox* box, double v)
{
    if (box->value() != v)
        box->setValue(v);
}
void setText(QLineEdit* edit, const QString& text)
{
    if (edit->text() != text)
        edit->setText(text);
}
// A combo box over an enum: each item's data is the value, its text the value's name.
template <typename Enum>
void addChoices(QComboBox* box, std::initializer_list<Enum> values, const char* (*nameOf)(Enum))
{
    for (Enum v : values)
        box->addItem(QString::fromLatin1(nameOf(v)), static_cast<int>(v));
}
template <typename Enum> void setChoice(QComboBox* box, Enum value)
{
    const int i = box->findData(static_cast<int>(value));
    if (i >= 0 && box->currentIndex() != i)
        box->setCurrentIndex(i);
}
template <typename Enum> Enum choice(const QComboBox* box)
{
    return static_cast<Enum>(box->currentData().toInt());
}

// On a worker: a short read of the store's snapshot table (WAL: never waits for a writer).
SnapshotList listStoreSnapshots(quint64 request, const QString& path)
{
    SnapshotList out;
    out.request = request;
    if (path.isEmpty() || !QFileInfo::exists(path))
        return out;
    try {
        const auto store = DataStore::open(path.toStdString(), false);
        for (const SnapshotInfo& s : listSnapshots(*store))
            (s.split == "validation" ? out.validation : out.train) << QString::fromStdString(s.id);
    } catch (const std::exception& e) {
        out.error = QString::fromUtf8(e.what());
    }
    return out;
}

}  // namespace

TrainSettingsForm::TrainSettingsForm(StudioState* state, QWidget* parent)
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
    buildRunGroup(group(tr("Run")));
    m_launch = new TrainLaunchBox(state, -1, this);
    v->addWidget(m_launch);
    buildOptimizerGroup(group(tr("Optimizer and schedule")));
    buildDataGroup(group(tr("Data and output")));
    buildGenerationGroup(group(tr("Generation eval during training")));
    v->addStretch(1);
    showSourceRows();
    connectChanges();
    fromState();
}

TrainSettingsForm::~TrainSettingsForm()
{
    m_snapshotWatcher.waitForFinished();
}

void TrainSettingsForm::buildRunGroup(QFormLayout* run)
{
    m_name = new QLineEdit(this);
    m_name->setPlaceholderText(tr("automatic"));
    auto spin = [this](int lo, int hi) {
        auto* s = new QSpinBox(this);
        s->setRange(lo, hi);
        return s;
    };
    m_maxSteps = spin(0, 10000000);
    m_maxSteps->setSpecialValueText(tr("epochs"));
    m_batch = spin(1, 4096);
    m_accum = spin(1, 4096);
    m_maxLength = spin(8, 131072);
    m_seed = spin(0, 2147483647);
    run->addRow(tr("Name:"), m_name);
    run->addRow(tr("Max steps:"), m_maxSteps);
    run->addRow(tr("Micro-batch:"), m_batch);
    run->addRow(tr("Grad accumulation:"), m_accum);
    run->addRow(tr("Max length (tokens):"), m_maxLength);
    run->addRow(tr("Seed:"), m_seed);
}

void TrainSettingsForm::buildOptimizerGroup(QFormLayout* optim)
{
    auto dspin = [this](double lo, double hi, int decimals, double step) {
        auto* s = new QDoubleSpinBox(this);
        s->setRange(lo, hi);
        s->setDecimals(decimals);
        s->setSingleStep(step);
        return s;
    };
    m_optimizer = new QComboBox(this);
    addChoices(m_optimizer, {OptimizerKind::AdamW, OptimizerKind::Sgd}, optimizerKindName);
    m_lr = dspin(1e-7, 10, 6, 1e-4);
    m_minLr = dspin(0, 10, 6, 1e-5);
    m_schedule = new QComboBox(this);
    addChoices(m_schedule, {ScheduleKind::Cosine, ScheduleKind::Linear, ScheduleKind::Constant},
               scheduleKindName);
    m_warmup = new QSpinBox(this);
    m_warmup->setRange(0, 1000000);
    m_weightDecay = dspin(0, 10, 4, 0.01);
    m_clip = dspin(0, 1000, 2, 0.1);
    m_clip->setSpecialValueText(tr("off"));
    optim->addRow(tr("Optimizer:"), m_optimizer);
    optim->addRow(tr("Learning rate:"), m_lr);
    optim->addRow(tr("Minimum LR:"), m_minLr);
    optim->addRow(tr("Schedule:"), m_schedule);
    optim->addRow(tr("Warmup steps:"), m_warmup);
    optim->addRow(tr("Weight decay:"), m_weightDecay);
    optim->addRow(tr("Clip grad norm:"), m_clip);
}

void TrainSettingsForm::buildDataGroup(QFormLayout* data)
{
    m_trainFile = new QLineEdit(this);
    m_valFile = new QLineEdit(this);
    m_valFile->setPlaceholderText(tr("10% of train"));
    m_outputDir = new QLineEdit(this);
    auto every = [this] {
        auto* s = new QSpinBox(this);
        s->setRange(0, 1000000);
        s->setSpecialValueText(tr("at the end"));
        return s;
    };
    m_evalEvery = every();
    m_saveEvery = every();
    m_source = new QComboBox(this);
    m_source->addItems({tr("JSONL files"), tr("Dataset store snapshot")});
    m_snapshot = new QComboBox(this);
    m_snapshot->setPlaceholderText(tr("no snapshot yet (Data page)"));
    m_valSnapshot = new QComboBox(this);
    data->addRow(tr("Data from:"), m_source);
    data->addRow(tr("Train file:"), m_trainFile);
    data->addRow(tr("Validation file:"), m_valFile);
    data->addRow(tr("Train snapshot:"), m_snapshot);
    data->addRow(tr("Validation snapshot:"), m_valSnapshot);
    m_dataForm = data;
    data->addRow(tr("Runs folder:"), m_outputDir);
    data->addRow(tr("Evaluate every:"), m_evalEvery);
    data->addRow(tr("Checkpoint every:"), m_saveEvery);
}

void TrainSettingsForm::buildGenerationGroup(QFormLayout* form)
{
    m_generateEvery = new QSpinBox(this);
    m_generateEvery->setRange(0, 1000000);
    m_generateEvery->setSpecialValueText(tr("off"));
    m_generateEvery->setSuffix(tr(" steps"));
    m_generateEvery->setToolTip(
        tr("Every N steps the model answers a fixed sample of the validation split greedily and "
           "the metrics below are logged (eval.generate_every)."));
    m_generateSample = new QSpinBox(this);
    m_generateSample->setRange(1, 100000);
    m_generateSample->setSuffix(tr(" cases"));
    m_generateTokens = new QSpinBox(this);
    m_generateTokens->setRange(1, 32768);
    m_generateMetrics = new QListWidget(this);
    m_generateMetrics->setMaximumHeight(110);
    for (const std::string& name : eval::metricNames()) {
        auto* item = new QListWidgetItem(QString::fromStdString(name), m_generateMetrics);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Unchecked);
    }
    form->addRow(tr("Generate every:"), m_generateEvery);
    form->addRow(tr("Sample:"), m_generateSample);
    form->addRow(tr("Max new tokens:"), m_generateTokens);
    form->addRow(tr("Metrics:"), m_generateMetrics);
}

void TrainSettingsForm::connectChanges()
{
    auto changed = [this] { toState(); };
    for (QSpinBox* s : {m_maxSteps, m_batch, m_accum, m_warmup, m_evalEvery, m_saveEvery, m_seed,
                        m_maxLength, m_generateEvery, m_generateSample, m_generateTokens})
        connect(s, &QSpinBox::valueChanged, this, changed);
    for (QDoubleSpinBox* s : {m_lr, m_minLr, m_weightDecay, m_clip})
        connect(s, &QDoubleSpinBox::valueChanged, this, changed);
    for (QComboBox* c : {m_optimizer, m_schedule, m_snapshot, m_valSnapshot})
        connect(c, &QComboBox::currentIndexChanged, this, changed);
    for (QLineEdit* e : {m_trainFile, m_valFile, m_outputDir})
        connect(e, &QLineEdit::editingFinished, this, changed);
    connect(m_generateMetrics, &QListWidget::itemChanged, this, changed);
    connect(m_source, &QComboBox::currentIndexChanged, this, [this] {
        if (m_updating)
            return;  // fromState shows the rows and lists the snapshots itself
        showSourceRows();
        if (snapshotMode())
            refreshSnapshots();
        toState();
    });
    connect(m_state, &StudioState::storePathChanged, this, [this] { refreshSnapshots(); });
    connect(m_state, &StudioState::configChanged, this, [this](QObject* origin) {
        if (origin != this)  // our own change is on screen already (see StudioState)
            fromState();
    });
    connect(&m_snapshotWatcher, &QFutureWatcher<SnapshotList>::finished, this,
            [this] { showSnapshots(m_snapshotWatcher.result()); });
}

bool TrainSettingsForm::snapshotMode() const
{
    return m_source->currentIndex() == 1;
}

QString TrainSettingsForm::runName() const
{
    return m_name->text().trimmed();
}

void TrainSettingsForm::showSourceRows()
{
    const bool snapshots = snapshotMode();
    m_dataForm->setRowVisible(m_trainFile, !snapshots);
    m_dataForm->setRowVisible(m_valFile, !snapshots);
    m_dataForm->setRowVisible(m_snapshot, snapshots);
    m_dataForm->setRowVisible(m_valSnapshot, snapshots);
    // A preference objective (Method page) trains on pairs: the same rows, read as pair files.
    const bool pairs = trainsOnPairs(m_state->config().objective);
    const std::pair<QWidget*, QString> labels[] = {
        {m_trainFile, pairs ? tr("Train pairs:") : tr("Train file:")},
        {m_valFile, pairs ? tr("Validation pairs:") : tr("Validation file:")},
        {m_snapshot, pairs ? tr("Train pairs snapshot:") : tr("Train snapshot:")},
        {m_valSnapshot, pairs ? tr("Validation pairs snapshot:") : tr("Validation snapshot:")}};
    for (const auto& [field, text] : labels)
        if (auto* label = qobject_cast<QLabel*>(m_dataForm->labelForField(field)))
            label->setText(text);
    m_trainFile->setToolTip(pairs ? tr("JSONL of preference pairs: prompt, chosen, rejected "
                                       "(or HH-RLHF / UltraFeedback rows; Method page: layout).")
                                  : tr("JSONL of examples (prompt and completion, or messages)."));
}

void TrainSettingsForm::useSnapshots(bool on)
{
    m_source->setCurrentIndex(on ? 1 : 0);
}

void TrainSettingsForm::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (snapshotMode())
        refreshSnapshots();  // the Data page may have frozen a new one
}

void TrainSettingsForm::refreshSnapshots()
{
    // setFuture stops watching the previous listing; the request number drops a result already
    // queued.
    const quint64 request = ++m_snapshotRequest;
    const QString path = m_state->storePath();
    m_snapshotWatcher.setFuture(
        QtConcurrent::run([request, path] { return listStoreSnapshots(request, path); }));
}

void TrainSettingsForm::showSnapshots(const SnapshotList& list)
{
    if (list.request != m_snapshotRequest)
        return;  // superseded
    m_snapshotShown = list.request;
    if (!list.error.isEmpty())
        Q_EMIT message(tr("Dataset store: %1").arg(list.error));
    // The config owns the choice once it reads from the store; before that, keep what the boxes
    // show.
    const TrainConfig& c = m_state->config();
    const bool fromStore = !c.data.store.empty();
    const QString keepTrain =
        fromStore ? QString::fromStdString(c.data.snapshot) : m_snapshot->currentText();
    const QString keepVal =
        fromStore ? QString::fromStdString(c.data.valSnapshot) : m_valSnapshot->currentText();
    const bool updating = m_updating;
    m_updating = true;
    m_snapshot->clear();
    for (auto it = list.train.crbegin(); it != list.train.crend(); ++it)  // newest first
        m_snapshot->addItem(*it);
    m_valSnapshot->clear();
    m_valSnapshot->addItem(tr("a share of train (val ratio)"));
    for (auto it = list.validation.crbegin(); it != list.validation.crend(); ++it)
        m_valSnapshot->addItem(*it);
    m_snapshot->setCurrentIndex(std::max(0, m_snapshot->findText(keepTrain)));
    m_valSnapshot->setCurrentIndex(std::max(0, m_valSnapshot->findText(keepVal)));
    m_updating = updating;
    if (snapshotMode())
        toState();
    Q_EMIT snapshotsListed();
}

void TrainSettingsForm::fromState()
{
    if (m_updating)
        return;
    m_updating = true;
    ++m_rewrites;
    const TrainConfig& c = m_state->config();
    setValue(m_maxSteps, int(c.maxSteps));
    setValue(m_batch, c.batchSize);
    setValue(m_accum, c.gradAccum);
    setValue(m_maxLength, c.data.maxLength);
    setValue(m_seed, int(c.seed));
    setChoice(m_optimizer, c.optim.optimizer);
    setValue(m_lr, c.optim.lr);
    setValue(m_minLr, c.optim.minLr);
    setChoice(m_schedule, c.optim.schedule);
    setValue(m_warmup, int(c.optim.warmupSteps));
    setValue(m_weightDecay, c.optim.weightDecay);
    setValue(m_clip, c.optim.clipNorm);
    const bool fromStore = !c.data.store.empty();
    if (!fromStore) {  // in snapshot mode the file fields keep their text for switching back
        setText(m_trainFile, QString::fromStdString(c.data.trainFile));
        setText(m_valFile, QString::fromStdString(c.data.valFile));
    }
    m_source->setCurrentIndex(fromStore ? 1 : 0);
    if (fromStore) {
        // Shown now if already listed; the listing (on a worker) selects them when it arrives.
        m_snapshot->setCurrentIndex(m_snapshot->findText(QString::fromStdString(c.data.snapshot)));
        const int val = m_valSnapshot->findText(QString::fromStdString(c.data.valSnapshot));
        m_valSnapshot->setCurrentIndex(val < 0 ? 0 : val);
        refreshSnapshots();
    }
    showSourceRows();
    setText(m_outputDir, QString::fromStdString(c.outputDir));
    setValue(m_evalEvery, int(c.evalEvery));
    setValue(m_saveEvery, int(c.saveEvery));
    setValue(m_generateEvery, int(c.eval.generateEvery));
    setValue(m_generateSample, c.eval.sample);
    setValue(m_generateTokens, c.eval.maxNewTokens);
    for (int i = 0; i < m_generateMetrics->count(); ++i) {
        QListWidgetItem* item = m_generateMetrics->item(i);
        const bool on = std::find(c.eval.metrics.begin(), c.eval.metrics.end(),
                                  item->text().toStdString()) != c.eval.metrics.end();
        if ((item->checkState() == Qt::Checked) != on)
            item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    }
    m_updating = false;
}

void TrainSettingsForm::toState()
{
    if (m_updating)
        return;
    m_state->updateConfig(
        [this](TrainConfig& c) {
            c.maxSteps = m_maxSteps->value();
            c.batchSize = m_batch->value();
            c.gradAccum = m_accum->value();
            c.data.maxLength = m_maxLength->value();
            c.seed = uint64_t(m_seed->value());
            c.optim.optimizer = choice<OptimizerKind>(m_optimizer);
            c.optim.lr = m_lr->value();
            c.optim.minLr = m_minLr->value();
            c.optim.schedule = choice<ScheduleKind>(m_schedule);
            c.optim.warmupSteps = m_warmup->value();
            c.optim.weightDecay = m_weightDecay->value();
            c.optim.clipNorm = m_clip->value();
            if (snapshotMode()) {
                // Snapshots of the project's store: what the run saw is recorded by id and SHA-256.
                c.data.store = m_state->storePath().toStdString();
                c.data.snapshot = m_snapshot->currentText().toStdString();
                c.data.valSnapshot = m_valSnapshot->currentIndex() > 0
                                         ? m_valSnapshot->currentText().toStdString()
                                         : "";
                c.data.trainFile.clear();
                c.data.valFile.clear();
            } else {
                c.data.store.clear();
                c.data.snapshot.clear();
                c.data.valSnapshot.clear();
                c.data.trainFile = m_trainFile->text().toStdString();
                c.data.valFile = m_valFile->text().toStdString();
            }
            c.outputDir = m_outputDir->text().toStdString();
            c.evalEvery = m_evalEvery->value();
            c.saveEvery = m_saveEvery->value();
            c.eval.generateEvery = m_generateEvery->value();
            c.eval.sample = m_generateSample->value();
            c.eval.maxNewTokens = m_generateTokens->value();
            // The checked metrics in the list's order; metrics the list does not know stay.
            std::vector<std::string> metrics;
            for (const std::string& m : c.eval.metrics)
                if (m_generateMetrics->findItems(QString::fromStdString(m), Qt::MatchExactly)
                        .isEmpty())
                    metrics.push_back(m);
            for (int i = 0; i < m_generateMetrics->count(); ++i)
                if (m_generateMetrics->item(i)->checkState() == Qt::Checked)
                    metrics.push_back(m_generateMetrics->item(i)->text().toStdString());
            c.eval.metrics = metrics;
        },
        this);
}

}  // namespace tb
