// Train page: settings form on the left, controls, banner, plots and log/history on the right.
#include "train_page.h"

#include "studio_state.h"
#include "train_plots.h"
#include "training_controller.h"

#include "memory/estimator.h"
#include "data/snapshot.h"
#include "data/store.h"
#include "train/run_store.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
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
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QShowEvent>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include <exception>

namespace tb {

namespace {

QString durationText(double seconds)
{
    const qint64 s = qint64(seconds + 0.5);
    if (s >= 3600)
        return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
    if (s >= 60)
        return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QStringLiteral("%1 s").arg(s);
}

} // namespace

TrainPage::TrainPage(StudioState* state, TrainingController* controller, QWidget* parent)
    : QWidget(parent), m_state(state), m_controller(controller)
{
    auto* layout = new QHBoxLayout(this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFixedWidth(330);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the form fits the width; only scroll down
    scroll->setFrameShape(QFrame::NoFrame);
    auto* settings = new QWidget(scroll);
    buildSettings(settings);
    scroll->setWidget(settings);
    layout->addWidget(scroll);

    auto* right = new QVBoxLayout();
    layout->addLayout(right, 1);
    auto* controls = new QHBoxLayout();
    m_start = new QPushButton(tr("Start"), this);
    m_pause = new QPushButton(tr("Pause"), this);
    m_resume = new QPushButton(tr("Resume"), this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_start->setDefault(true);
    m_progress = new QProgressBar(this);
    m_progress->setFormat(tr("step %v of %m"));
    m_eta = new QLabel(this);
    m_eta->setMinimumWidth(150);
    for (QPushButton* b : {m_start, m_pause, m_resume, m_stop})
        controls->addWidget(b);
    controls->addWidget(m_progress, 1);
    controls->addWidget(m_eta);
    right->addLayout(controls);

    m_banner = new QLabel(this);
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(QStringLiteral(
        "QLabel { background: #fdebd0; color: #6e2c00; border: 1px solid #e59866; border-radius: 4px; padding: 6px; }"));
    m_banner->hide();
    right->addWidget(m_banner);

    auto* plotBar = new QHBoxLayout();
    m_logScale = new QCheckBox(tr("Log-scale loss"), this);
    m_smoothing = new QSlider(Qt::Horizontal, this);
    m_smoothing->setRange(0, 99);
    m_smoothing->setValue(80);
    m_smoothing->setMaximumWidth(140);
    auto* png = new QPushButton(tr("Export PNG…"), this);
    auto* csv = new QPushButton(tr("Export CSV…"), this);
    plotBar->addWidget(m_logScale);
    plotBar->addSpacing(12);
    plotBar->addWidget(new QLabel(tr("Smoothing:"), this));
    plotBar->addWidget(m_smoothing);
    plotBar->addStretch(1);
    plotBar->addWidget(png);
    plotBar->addWidget(csv);
    right->addLayout(plotBar);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_plots = new TrainPlots(split);
    auto* tabs = new QTabWidget(split);
    m_log = new QPlainTextEdit(tabs);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(5000);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    tabs->addTab(m_log, tr("Log"));
    m_history = new QListWidget(tabs);
    tabs->addTab(m_history, tr("Run history (check to overlay)"));
    split->addWidget(m_plots);
    split->addWidget(tabs);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    right->addWidget(split, 1);

    connect(m_start, &QPushButton::clicked, this, [this] { startRun(); });
    connect(m_pause, &QPushButton::clicked, m_controller, &TrainingController::pause);
    connect(m_resume, &QPushButton::clicked, this, [this] {
        m_banner->hide();
        m_controller->resume();
    });
    connect(m_stop, &QPushButton::clicked, m_controller, &TrainingController::stop);
    connect(m_logScale, &QCheckBox::toggled, m_plots, &TrainPlots::setLogScale);
    connect(m_smoothing, &QSlider::valueChanged, this, [this](int v) { m_plots->setSmoothing(v / 100.0); });
    connect(png, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plots to folder"));
        if (!dir.isEmpty())
            exportPlots(dir);
    });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getSaveFileName(this, tr("Export metrics"), QStringLiteral("metrics.csv"),
                                                          tr("CSV files (*.csv)"));
        if (!file.isEmpty())
            log(m_plots->exportCsv(file) ? tr("Wrote %1").arg(file) : tr("Could not write %1").arg(file));
    });
    connect(m_history, &QListWidget::itemChanged, this, &TrainPage::updateOverlays);
    connect(m_controller, &TrainingController::eventsArrived, this, &TrainPage::onEvents);
    connect(m_controller, &TrainingController::ended, this, [this](bool ok, const QString& message) {
        log(ok ? message : tr("Failed: %1").arg(message));
        m_eta->setText(ok ? tr("done") : tr("failed"));
        refreshHistory();
    });
    connect(m_state, &StudioState::configChanged, this, &TrainPage::fromState);
    connect(m_state, &StudioState::jobStateChanged, this, &TrainPage::updateButtons);
    connect(m_state, &StudioState::runsChanged, this, &TrainPage::refreshHistory);
    fromState();
    updateButtons();
    refreshHistory();
}

void TrainPage::buildSettings(QWidget* box)
{
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 6, 0);
    auto group = [box, v](const QString& title) {
        auto* g = new QGroupBox(title, box);
        auto* f = new QFormLayout(g);
        f->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        v->addWidget(g);
        return f;
    };
    auto spin = [box](int lo, int hi) {
        auto* s = new QSpinBox(box);
        s->setRange(lo, hi);
        return s;
    };
    auto dspin = [box](double lo, double hi, int decimals, double step) {
        auto* s = new QDoubleSpinBox(box);
        s->setRange(lo, hi);
        s->setDecimals(decimals);
        s->setSingleStep(step);
        return s;
    };
    QFormLayout* run = group(tr("Run"));
    m_name = new QLineEdit(box);
    m_name->setPlaceholderText(tr("automatic"));
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

    QFormLayout* optim = group(tr("Optimizer and schedule"));
    m_optimizer = new QComboBox(box);
    m_optimizer->addItems({QStringLiteral("adamw"), QStringLiteral("sgd")});
    m_lr = dspin(1e-7, 10, 6, 1e-4);
    m_minLr = dspin(0, 10, 6, 1e-5);
    m_schedule = new QComboBox(box);
    m_schedule->addItems({QStringLiteral("cosine"), QStringLiteral("linear"), QStringLiteral("constant")});
    m_warmup = spin(0, 1000000);
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

    QFormLayout* data = group(tr("Data and output"));
    m_trainFile = new QLineEdit(box);
    m_valFile = new QLineEdit(box);
    m_valFile->setPlaceholderText(tr("10% of train"));
    m_outputDir = new QLineEdit(box);
    m_evalEvery = spin(0, 1000000);
    m_evalEvery->setSpecialValueText(tr("at the end"));
    m_saveEvery = spin(0, 1000000);
    m_saveEvery->setSpecialValueText(tr("at the end"));
    m_source = new QComboBox(box);
    m_source->addItems({tr("JSONL files"), tr("Dataset store snapshot")});
    m_snapshot = new QComboBox(box);
    m_snapshot->setPlaceholderText(tr("no snapshot yet (Data page)"));
    m_valSnapshot = new QComboBox(box);
    data->addRow(tr("Data from:"), m_source);
    data->addRow(tr("Train file:"), m_trainFile);
    data->addRow(tr("Validation file:"), m_valFile);
    data->addRow(tr("Train snapshot:"), m_snapshot);
    data->addRow(tr("Validation snapshot:"), m_valSnapshot);
    m_dataForm = data;
    data->addRow(tr("Runs folder:"), m_outputDir);
    data->addRow(tr("Evaluate every:"), m_evalEvery);
    data->addRow(tr("Checkpoint every:"), m_saveEvery);
    v->addStretch(1);

    auto changed = [this] { toState(); };
    for (QSpinBox* s : {m_maxSteps, m_batch, m_accum, m_warmup, m_evalEvery, m_saveEvery, m_seed, m_maxLength})
        connect(s, &QSpinBox::valueChanged, this, changed);
    for (QDoubleSpinBox* s : {m_lr, m_minLr, m_weightDecay, m_clip})
        connect(s, &QDoubleSpinBox::valueChanged, this, changed);
    for (QComboBox* c : {m_optimizer, m_schedule, m_snapshot, m_valSnapshot})
        connect(c, &QComboBox::currentIndexChanged, this, changed);
    connect(m_source, &QComboBox::currentIndexChanged, this, [this] {
        showSourceRows();
        if (m_source->currentIndex() == 1)
            refreshSnapshots();
        toState();
    });
    connect(m_state, &StudioState::storePathChanged, this, [this] { refreshSnapshots(); });
    showSourceRows();
    for (QLineEdit* e : {m_trainFile, m_valFile, m_outputDir})
        connect(e, &QLineEdit::editingFinished, this, changed);
}

void TrainPage::showSourceRows()
{
    const bool snapshots = m_source->currentIndex() == 1;
    m_dataForm->setRowVisible(m_trainFile, !snapshots);
    m_dataForm->setRowVisible(m_valFile, !snapshots);
    m_dataForm->setRowVisible(m_snapshot, snapshots);
    m_dataForm->setRowVisible(m_valSnapshot, snapshots);
}

void TrainPage::useSnapshots(bool on)
{
    m_source->setCurrentIndex(on ? 1 : 0);
}

void TrainPage::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_source->currentIndex() == 1)
        refreshSnapshots();  // the Data page may have frozen a new one
}

void TrainPage::refreshSnapshots()
{
    // A short read of the store's snapshot table (WAL: never waits for a writer).
    QStringList train, validation;
    const QString path = m_state->storePath();
    if (!path.isEmpty() && QFileInfo::exists(path)) {
        try {
            const auto store = DataStore::open(path.toStdString(), false);
            for (const SnapshotInfo& s : listSnapshots(*store))
                (s.split == "validation" ? validation : train) << QString::fromStdString(s.id);
        } catch (const std::exception& e) {
            log(tr("Dataset store: %1").arg(QString::fromUtf8(e.what())));
        }
    }
    const QString keepTrain = m_snapshot->currentText(), keepVal = m_valSnapshot->currentText();
    const bool updating = m_updating;
    m_updating = true;
    m_snapshot->clear();
    for (auto it = train.crbegin(); it != train.crend(); ++it)  // newest first
        m_snapshot->addItem(*it);
    m_valSnapshot->clear();
    m_valSnapshot->addItem(tr("a share of train (val ratio)"));
    for (auto it = validation.crbegin(); it != validation.crend(); ++it)
        m_valSnapshot->addItem(*it);
    m_snapshot->setCurrentIndex(std::max(0, m_snapshot->findText(keepTrain)));
    m_valSnapshot->setCurrentIndex(std::max(0, m_valSnapshot->findText(keepVal)));
    m_updating = updating;
    if (m_source->currentIndex() == 1)
        toState();
}

void TrainPage::fromState()
{
    if (m_updating)
        return;
    m_updating = true;
    const TrainConfig& c = m_state->config();
    m_maxSteps->setValue(int(c.maxSteps));
    m_batch->setValue(c.batchSize);
    m_accum->setValue(c.gradAccum);
    m_maxLength->setValue(c.data.maxLength);
    m_seed->setValue(int(c.seed));
    m_optimizer->setCurrentText(QString::fromStdString(c.optim.optimizer));
    m_lr->setValue(c.optim.lr);
    m_minLr->setValue(c.optim.minLr);
    m_schedule->setCurrentText(QString::fromStdString(c.optim.schedule));
    m_warmup->setValue(int(c.optim.warmupSteps));
    m_weightDecay->setValue(c.optim.weightDecay);
    m_clip->setValue(c.optim.clipNorm);
    if (c.data.store.empty()) {  // in snapshot mode the file fields keep their text for switching back
        m_trainFile->setText(QString::fromStdString(c.data.trainFile));
        m_valFile->setText(QString::fromStdString(c.data.valFile));
    }
    m_source->setCurrentIndex(c.data.store.empty() ? 0 : 1);
    if (!c.data.store.empty()) {
        refreshSnapshots();
        m_snapshot->setCurrentIndex(m_snapshot->findText(QString::fromStdString(c.data.snapshot)));
        const int val = m_valSnapshot->findText(QString::fromStdString(c.data.valSnapshot));
        m_valSnapshot->setCurrentIndex(val < 0 ? 0 : val);
    }
    showSourceRows();
    m_outputDir->setText(QString::fromStdString(c.outputDir));
    m_evalEvery->setValue(int(c.evalEvery));
    m_saveEvery->setValue(int(c.saveEvery));
    m_updating = false;
    updatePlanned();
}

void TrainPage::toState()
{
    if (m_updating)
        return;
    const QString oldOutput = QString::fromStdString(m_state->config().outputDir);
    m_state->updateConfig([this](TrainConfig& c) {
        c.maxSteps = m_maxSteps->value();
        c.batchSize = m_batch->value();
        c.gradAccum = m_accum->value();
        c.data.maxLength = m_maxLength->value();
        c.seed = uint64_t(m_seed->value());
        c.optim.optimizer = m_optimizer->currentText().toStdString();
        c.optim.lr = m_lr->value();
        c.optim.minLr = m_minLr->value();
        c.optim.schedule = m_schedule->currentText().toStdString();
        c.optim.warmupSteps = m_warmup->value();
        c.optim.weightDecay = m_weightDecay->value();
        c.optim.clipNorm = m_clip->value();
        if (m_source->currentIndex() == 1) {
            // Snapshots of the project's store: what the run saw is recorded by id and SHA-256.
            c.data.store = m_state->storePath().toStdString();
            c.data.snapshot = m_snapshot->currentText().toStdString();
            c.data.valSnapshot = m_valSnapshot->currentIndex() > 0 ? m_valSnapshot->currentText().toStdString() : "";
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
    });
    if (oldOutput != m_outputDir->text())
        refreshHistory();
}

void TrainPage::updatePlanned()
{
    // Core's schedule is a pure function of the optimizer options and the planned steps.
    const TrainConfig& c = m_state->config();
    const int64_t total = m_totalSteps > 0 ? m_totalSteps : c.maxSteps;
    if (total <= 0 || m_controller->active())
        return;
    try {
        m_plots->setPlannedSchedule(plannedSchedule(c.optim, total));
    } catch (const std::exception&) {
        m_plots->setPlannedSchedule({});
    }
}

void TrainPage::updateButtons()
{
    const StudioJobState s = m_state->jobState();
    const bool active = m_controller->active();
    m_start->setEnabled(!active);
    m_pause->setEnabled(s == StudioJobState::Running);
    m_resume->setEnabled(s == StudioJobState::Paused);
    m_stop->setEnabled(s == StudioJobState::Running || s == StudioJobState::Paused);
    if (s == StudioJobState::Paused && m_banner->isHidden())
        m_eta->setText(tr("paused"));
    if (s == StudioJobState::Stopping)
        m_eta->setText(tr("stopping…"));
}

bool TrainPage::startRun()
{
    toState();
    TrainConfig c = m_state->config();
    QString name = m_name->text().trimmed();
    if (name.isEmpty())
        name = QStringLiteral("%1-%2").arg(QString::fromLatin1(methodName(c.method)),
                                           QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss")));
    const QString base = name;
    for (int i = 2; QFileInfo::exists(QString::fromStdString(c.outputDir) + QLatin1Char('/') + name); ++i)
        name = base + QLatin1Char('-') + QString::number(i);
    c.name = name.toStdString();
    m_totalSteps = 0;
    m_clock.invalidate();
    m_plots->clear();
    m_banner->hide();
    updatePlanned();
    QString error;
    if (!m_controller->start(c, &error)) {
        log(tr("Cannot start: %1").arg(error));
        return false;
    }
    log(tr("Started %1 (%2, %3 steps planned) in %4")
            .arg(name, QString::fromLatin1(methodName(c.method)))
            .arg(c.maxSteps > 0 ? QString::number(c.maxSteps) : tr("epoch-based"))
            .arg(m_controller->runDir()));
    m_progress->setRange(0, int(std::max<int64_t>(1, c.maxSteps)));
    m_progress->setValue(0);
    m_eta->setText(tr("loading…"));
    return true;
}

void TrainPage::onEvents(const JobEventBatch& batch)
{
    if (!batch.steps.empty()) {
        const StepMetrics& last = batch.steps.back();
        if (m_totalSteps != last.totalSteps) {
            m_totalSteps = last.totalSteps;
            m_plots->setPlannedSchedule(plannedSchedule(m_state->config().optim, m_totalSteps));
            m_progress->setRange(0, int(m_totalSteps));
        }
        m_plots->appendSteps(batch.steps);
        m_progress->setValue(int(last.step));
        if (!m_clock.isValid() || last.step < m_firstStep) {
            m_clock.start();
            m_firstStep = last.step;
        }
        if (m_state->jobState() == StudioJobState::Running && last.step > m_firstStep) {
            const double perStep = double(m_clock.elapsed()) / 1000.0 / double(last.step - m_firstStep);
            const double eta = perStep * double(last.totalSteps - last.step);
            m_eta->setText(tr("ETA %1 · %2 tok/s").arg(durationText(eta)).arg(last.tokensPerSecond, 0, 'f', 0));
        }
        const int64_t every = std::max<int64_t>(1, m_state->config().logEvery);
        for (const StepMetrics& m : batch.steps)
            if (m.step % std::max<int64_t>(every, 10) == 0 || m.step == 1)
                log(tr("step %1/%2  loss %3  lr %4  grad-norm %5  %6 tok/s  mem %7")
                        .arg(m.step)
                        .arg(m.totalSteps)
                        .arg(m.loss, 0, 'f', 4)
                        .arg(m.lr, 0, 'g', 3)
                        .arg(m.gradNorm, 0, 'f', 3)
                        .arg(m.tokensPerSecond, 0, 'f', 0)
                        .arg(QString::fromStdString(formatBytes(m.memoryCurrent))));
    }
    m_plots->appendEvals(batch.evals);
    for (const EvalMetrics& e : batch.evals)
        log(tr("step %1: validation loss %2 (perplexity %3)").arg(e.step).arg(e.valLoss, 0, 'f', 4).arg(e.valPerplexity, 0, 'f', 2));
    for (const std::string& m : batch.messages)
        log(QString::fromStdString(m));
    for (const MemoryReport& r : batch.memoryReports)
        for (const auto& item : r.items)
            log(tr("memory %1: estimated %2, measured %3")
                    .arg(QString::fromStdString(item.key), QString::fromStdString(formatBytes(item.estimated)),
                         QString::fromStdString(formatBytes(item.measured))));
    for (const Diagnosis& d : batch.divergences) {
        const QString text = tr("Training paused at step %1: %2. Likely cause: %3. Try: %4. Press Resume to continue.")
                                 .arg(d.step)
                                 .arg(QString::fromStdString(d.what), QString::fromStdString(d.cause),
                                      QString::fromStdString(d.advice));
        m_banner->setText(text);
        m_banner->show();
        log(text);
    }
}

void TrainPage::refreshHistory()
{
    QStringList dirs = m_state->runs();
    const QDir root(QString::fromStdString(m_state->config().outputDir));
    for (const QFileInfo& f : root.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time | QDir::Reversed))
        if (QFileInfo::exists(f.filePath() + QStringLiteral("/metrics.jsonl")) && !dirs.contains(f.filePath()))
            dirs << f.filePath();
    QSet<QString> checked;
    for (int i = 0; i < m_history->count(); ++i)
        if (m_history->item(i)->checkState() == Qt::Checked)
            checked << m_history->item(i)->data(Qt::UserRole).toString();
    const QSignalBlocker block(m_history);
    m_history->clear();
    for (const QString& dir : dirs) {
        auto* item = new QListWidgetItem(QFileInfo(dir).fileName(), m_history);
        item->setData(Qt::UserRole, dir);
        item->setToolTip(dir);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(checked.contains(dir) ? Qt::Checked : Qt::Unchecked);
    }
}

void TrainPage::updateOverlays()
{
    std::vector<RunCurve> curves;
    for (int i = 0; i < m_history->count(); ++i) {
        QListWidgetItem* item = m_history->item(i);
        if (item->checkState() != Qt::Checked)
            continue;
        RunCurve curve;
        curve.name = item->text();
        try {
            for (const auto& line : RunStore(item->data(Qt::UserRole).toString().toStdString()).readMetrics())
                if (line.value("type", "") == "step" && line.contains("loss")) {
                    curve.steps << line["step"].get<double>();
                    curve.losses << line["loss"].get<double>();
                }
        } catch (const std::exception& e) {
            log(tr("Cannot read %1: %2").arg(item->text(), QString::fromUtf8(e.what())));
            continue;
        }
        curves.push_back(std::move(curve));
    }
    m_plots->setOverlays(curves);
}

void TrainPage::exportPlots(const QString& dir)
{
    QStringList files;
    const bool ok = m_plots->exportPng(dir, &files) && m_plots->exportCsv(dir + QStringLiteral("/metrics.csv"));
    log(ok ? tr("Wrote %1 and metrics.csv").arg(files.join(QStringLiteral(", "))) : tr("Could not write to %1").arg(dir));
}

QString TrainPage::bannerText() const { return m_banner->isHidden() ? QString() : m_banner->text(); }
QString TrainPage::logText() const { return m_log->toPlainText(); }

void TrainPage::log(const QString& line)
{
    m_log->appendPlainText(QTime::currentTime().toString(QStringLiteral("hh:mm:ss  ")) + line);
}

} // namespace tb
