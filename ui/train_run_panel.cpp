// TrainRunPanel: controls and progress above the plots, log (and history) tabs below; fed in
// batches.
#include "train_run_panel.h"

#include "rank_progress.h"
#include "studio_state.h"
#include "train_plots.h"
#include "training_controller.h"

#include "train/metrics.h"
#include "train/schedule.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTextCursor>
#include <QTime>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

constexpr int kPanelLine = -2;  // the panel's own log lines: shown under every filter
constexpr int kAllRanks = -3;   // the filter that shows every line
constexpr size_t kLogLines = 5000;

QString durationText(double seconds)
{
    const qint64 s = qint64(seconds + 0.5);
    if (s >= 3600)
        return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
    if (s >= 60)
        return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QStringLiteral("%1 s").arg(s);
}

}  // namespace

TrainRunPanel::TrainRunPanel(StudioState* state, TrainingController* controller, QWidget* parent)
    : QWidget(parent), m_state(state), m_controller(controller)
{
    auto* right = new QVBoxLayout(this);
    right->setContentsMargins(0, 0, 0, 0);
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
    m_packing = new QLabel(this);
    m_packing->hide();
    m_precision = new QLabel(this);  // a mixed-precision run's path; the whole of it as tooltip
    m_precision->hide();
    for (QPushButton* b : {m_start, m_pause, m_resume, m_stop})
        controls->addWidget(b);
    controls->addWidget(m_progress, 1);
    controls->addWidget(m_eta);
    controls->addWidget(m_packing);
    controls->addWidget(m_precision);
    right->addLayout(controls);

    m_banner = new QLabel(this);
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(
        QStringLiteral("QLabel { background: #fdebd0; color: #6e2c00; border: 1px solid #e59866; "
                       "border-radius: 4px; padding: 6px; }"));
    m_banner->hide();
    right->addWidget(m_banner);
    m_missing = new QLabel(this);
    m_missing->setObjectName(QStringLiteral("modelMissing"));
    m_missing->setWordWrap(true);
    m_missing->setStyleSheet(m_banner->styleSheet());
    m_missing->hide();
    right->addWidget(m_missing);
    right->addLayout(buildPlotBar());

    m_ranks = new RankProgress(this);
    m_ranks->hide();
    right->addWidget(m_ranks);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_plots = new TrainPlots(split);
    m_tabs = new QTabWidget(split);
    m_log = new QPlainTextEdit(m_tabs);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(int(kLogLines));
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_tabs->addTab(m_log, tr("Log"));
    m_logFilter = new QComboBox(m_tabs);
    m_logFilter->setToolTip(tr("The lines of one rank of a launched run, or the launcher's"));
    m_logFilter->hide();
    m_tabs->setCornerWidget(m_logFilter);
    split->addWidget(m_plots);
    split->addWidget(m_tabs);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    right->addWidget(split, 1);

    connect(m_start, &QPushButton::clicked, this, &TrainRunPanel::startRequested);
    connect(m_pause, &QPushButton::clicked, m_controller, &TrainingController::pause);
    connect(m_resume, &QPushButton::clicked, this, [this] {
        m_banner->hide();
        m_controller->resume();
    });
    connect(m_stop, &QPushButton::clicked, m_controller, &TrainingController::stop);
    connect(m_logFilter, &QComboBox::currentIndexChanged, this, &TrainRunPanel::refilterLog);
    connect(m_logScale, &QCheckBox::toggled, m_plots, &TrainPlots::setLogScale);
    connect(m_smoothing, &QSlider::valueChanged, this,
            [this](int v) { m_plots->setSmoothing(v / 100.0); });
    connect(m_controller, &TrainingController::eventsArrived, this, &TrainRunPanel::onEvents);
    connect(m_controller, &TrainingController::ended, this,
            [this](bool ok, const QString& message) {
                log(ok ? message : tr("Failed: %1").arg(message));
                m_eta->setText(ok ? tr("done") : tr("failed"));
            });
    connect(m_state, &StudioState::jobStateChanged, this, &TrainRunPanel::updateButtons);
    connect(m_state, &StudioState::configChanged, this, &TrainRunPanel::updatePlanned);
    connect(m_state, &StudioState::modelChanged, this, &TrainRunPanel::showMissing);
    updatePlanned();
    showMissing();
}

void TrainRunPanel::showMissing()
{
    const QString text = missingText();
    m_missing->setText(text.isEmpty() ? QString() : tr("Cannot train: %1").arg(text));
    m_missing->setVisible(!text.isEmpty());
    updateButtons();
}

QString TrainRunPanel::missingText() const
{
    return m_state->modelMissingText();
}

QHBoxLayout* TrainRunPanel::buildPlotBar()
{
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
    connect(png, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plots to folder"));
        if (!dir.isEmpty())
            exportPlots(dir);
    });
    connect(csv, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getSaveFileName(
            this, tr("Export metrics"), QStringLiteral("metrics.csv"), tr("CSV files (*.csv)"));
        if (!file.isEmpty())
            log(m_plots->exportCsv(file) ? tr("Wrote %1").arg(file)
                                         : tr("Could not write %1").arg(file));
    });
    return plotBar;
}

void TrainRunPanel::addTab(QWidget* widget, const QString& title)
{
    widget->setParent(m_tabs);
    m_tabs->addTab(widget, title);
}

void TrainRunPanel::updatePlanned()
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

void TrainRunPanel::updateButtons()
{
    const StudioJobState s = m_state->jobState();
    const bool active = m_controller->active();
    // A launched run cannot pause; Stop pressed again while it stops forces it (no checkpoint).
    const bool launched = m_controller->launched();
    m_start->setEnabled(!active && m_state->modelMissing().isEmpty());
    m_pause->setEnabled(s == StudioJobState::Running && !launched);
    m_resume->setEnabled(s == StudioJobState::Paused && !launched);
    m_stop->setEnabled(s == StudioJobState::Running || s == StudioJobState::Paused ||
                       (s == StudioJobState::Stopping && launched));
    m_stop->setText(s == StudioJobState::Stopping && launched ? tr("Force stop") : tr("Stop"));
    if (s == StudioJobState::Paused && m_banner->isHidden())
        m_eta->setText(tr("paused"));
    if (s == StudioJobState::Stopping)
        m_eta->setText(tr("stopping…"));
}

bool TrainRunPanel::startRun(const QString& runName)
{
    TrainConfig c = m_state->config();
    QString name = runName;
    if (name.isEmpty())
        name = QStringLiteral("%1-%2").arg(
            QString::fromLatin1(methodName(c.method)) +
                (c.objective == Objective::Sft
                     ? QString()
                     : QLatin1Char('-') + QString::fromLatin1(objectiveName(c.objective))),
            QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss")));
    const QString base = name;
    for (int i = 2;
         QFileInfo::exists(QString::fromStdString(c.outputDir) + QLatin1Char('/') + name); ++i)
        name = base + QLatin1Char('-') + QString::number(i);
    c.name = name.toStdString();
    if (!m_state->modelMissing().isEmpty()) {
        log(tr("Cannot start: %1").arg(missingText()));
        return false;
    }
    m_totalSteps = 0;
    m_clock.invalidate();
    m_plots->clear();
    m_banner->hide();
    m_packing->clear();
    m_packing->hide();
    m_precision->clear();
    m_precision->hide();
    updatePlanned();
    QString error;
    if (!m_controller->start(c, &error)) {
        log(tr("Cannot start: %1").arg(error));
        return false;
    }
    log(tr("Started %1 (%2, %3 steps planned) in %4")
            .arg(name, QString::fromLatin1(methodName(c.method)) + QStringLiteral(", ") +
                           QString::fromLatin1(objectiveName(c.objective)))
            .arg(c.maxSteps > 0 ? QString::number(c.maxSteps) : tr("epoch-based"))
            .arg(m_controller->runDir()));
    if (m_controller->launched())
        log(tr("%1 processes: %2 train --nproc %1 --config %3")
                .arg(m_controller->processes())
                .arg(m_controller->launcherPath(), launchConfigPath(m_controller->runDir())));
    showLaunched(m_controller->launched() ? m_controller->processes() : 0);
    m_progress->setRange(0, int(std::max<int64_t>(1, c.maxSteps)));
    m_progress->setValue(0);
    m_eta->setText(tr("loading…"));
    updateButtons();
    return true;
}

void TrainRunPanel::showLaunched(int processes)
{
    m_ranks->reset(processes);
    m_ranks->setVisible(processes > 1);
    const bool updating = m_logFilter->blockSignals(true);
    m_logFilter->clear();
    m_logFilter->addItem(tr("All ranks"), kAllRanks);
    m_logFilter->addItem(tr("Launcher"), LaunchLine::kLauncherRank);
    for (int r = 0; r < processes; ++r)
        m_logFilter->addItem(tr("Rank %1").arg(r), r);
    m_logFilter->blockSignals(updating);
    m_logFilter->setVisible(processes > 1);
}

void TrainRunPanel::onEvents(const JobEventBatch& batch)
{
    if (batch.plan) {
        // Core's plan arrives before the first step: the planned steps and the schedule it follows.
        m_totalSteps = batch.plan->totalSteps;
        m_plots->setPlannedSchedule(batch.plan->schedule);
        m_progress->setRange(0, int(std::max<int64_t>(1, m_totalSteps)));
        m_progress->setValue(int(batch.plan->startStep));
        m_eta->setText(tr("training…"));
        // The memory axis names where the run measures: the GPU, or tracked CPU tensors.
        if (!batch.plan->device.empty())
            m_plots->setMemorySource(
                QString::fromStdString(batch.plan->device).startsWith(QLatin1String("cuda"))
                    ? QStringLiteral("cuda")
                    : QStringLiteral("cpu-tracked"));
        const QString precision = QString::fromStdString(batch.plan->precisionPath);
        m_precision->setText(precision.section(QLatin1Char(':'), 0, 0));
        m_precision->setToolTip(precision);
        m_precision->setVisible(!precision.isEmpty() && precision != QLatin1String("fp32"));
        if (const auto& p = batch.plan->packing) {
            m_packing->setText(tr("packed %1 examples into %2 bins: %3% of the token slots filled")
                                   .arg(p->examples)
                                   .arg(p->bins)
                                   .arg(100.0 * p->efficiency(), 0, 'f', 1));
            m_packing->show();
        } else {
            m_packing->clear();
            m_packing->hide();
        }
    }
    // One rescale and replot for the whole drain (the plots defer it to the event loop).
    m_plots->appendGenerationEvals(batch.generationEvals);
    m_plots->appendBatch(batch.steps, batch.evals);
    m_plots->appendRankSteps(batch.rankSteps);
    m_ranks->update(batch.rankSteps);
    showProgress(batch);
    logBatch(batch);
    for (const Diagnosis& d : batch.divergences) {
        // A launched run's ranks stop on a divergence (rank 0's metrics.jsonl has no cause).
        const QString text =
            m_controller->launched()
                ? tr("Training stopped at step %1: %2.")
                      .arg(d.step)
                      .arg(QString::fromStdString(d.what))
                : tr("Training paused at step %1: %2. Likely cause: %3. Try: %4. Press Resume to "
                     "continue.")
                      .arg(d.step)
                      .arg(QString::fromStdString(d.what), QString::fromStdString(d.cause),
                           QString::fromStdString(d.advice));
        m_banner->setText(text);
        m_banner->show();
        log(text);
    }
}

void TrainRunPanel::showProgress(const JobEventBatch& batch)
{
    if (batch.steps.empty())
        return;
    const StepMetrics& last = batch.steps.back();
    m_progress->setValue(int(last.step));
    if (!m_clock.isValid() || last.step < m_firstStep) {
        m_clock.start();
        m_firstStep = last.step;
    }
    if (m_state->jobState() == StudioJobState::Running && last.step > m_firstStep) {
        const double perStep = double(m_clock.elapsed()) / 1000.0 / double(last.step - m_firstStep);
        const double eta = perStep * double(last.totalSteps - last.step);
        m_eta->setText(
            tr("ETA %1 · %2 tok/s").arg(durationText(eta)).arg(last.tokensPerSecond, 0, 'f', 0));
    }
}

void TrainRunPanel::logBatch(const JobEventBatch& batch)
{
    // A launched run's log is the launcher's output: rank 0's progress lines are in it already.
    for (const LaunchLine& line : batch.launchLines)
        appendLog(line.rank, line.text);
    if (m_controller->launched())
        return;
    const int64_t every = std::max<int64_t>(10, m_state->config().logEvery);
    for (const StepMetrics& m : batch.steps)
        if (m.step % every == 0 || m.step == 1)
            log(QString::fromStdString(formatStepLine(m)));  // the CLI's line
    for (const EvalMetrics& e : batch.evals)
        log(QString::fromStdString(formatEvalLine(e)));
    for (const GenerationEvalMetrics& g : batch.generationEvals)
        log(QString::fromStdString(formatGenerationEvalLine(g)));
    for (const std::string& m : batch.messages)
        log(QString::fromStdString(m));
    for (const MemoryReport& r : batch.memoryReports)
        log(QString::fromStdString(formatMemoryReport(r)));
}

void TrainRunPanel::exportPlots(const QString& dir)
{
    QStringList files;
    const bool ok =
        m_plots->exportPng(dir, &files) && m_plots->exportCsv(dir + QStringLiteral("/metrics.csv"));
    log(ok ? tr("Wrote %1 and metrics.csv").arg(files.join(QStringLiteral(", ")))
           : tr("Could not write to %1").arg(dir));
}

QString TrainRunPanel::bannerText() const
{
    return m_banner->isHidden() ? QString() : m_banner->text();
}
QString TrainRunPanel::packingText() const
{
    return m_packing->text();
}
QString TrainRunPanel::precisionText() const
{
    return m_precision->toolTip();
}
QString TrainRunPanel::logText() const
{
    return m_log->toPlainText();
}

void TrainRunPanel::log(const QString& line)
{
    appendLog(kPanelLine, line);
}

bool TrainRunPanel::logShows(int rank) const
{
    const int filter = m_logFilter->count() > 0 ? m_logFilter->currentData().toInt() : kAllRanks;
    return filter == kAllRanks || rank == kPanelLine || rank == filter;
}

void TrainRunPanel::appendLog(int rank, const QString& line)
{
    const QString text = QTime::currentTime().toString(QStringLiteral("hh:mm:ss  ")) + line;
    m_logLines.push_back({rank, text});
    if (m_logLines.size() > kLogLines)
        m_logLines.pop_front();
    if (logShows(rank))
        m_log->appendPlainText(text);
}

void TrainRunPanel::refilterLog()
{
    QStringList shown;
    for (const LogLine& l : m_logLines)
        if (logShows(l.rank))
            shown << l.text;
    m_log->setPlainText(shown.join(QLatin1Char('\n')));
    m_log->moveCursor(QTextCursor::End);
}

}  // namespace tb
