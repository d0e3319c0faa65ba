// TrainPlots: four QCustomPlots fed in batches; memory in MiB, learning rate and loss as logged by
// core.
#include "train_plots.h"

#include "metric_units.h"
#include "plot_style.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFile>
#include <QGridLayout>
#include <QSaveFile>
#include <QTextStream>

#include <algorithm>
#include <cmath>

namespace tb {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const QColor kMetricColors[] = {QColor(0x34, 0x6d, 0xb3), QColor(0xd1, 0x4f, 0x5a),
                                QColor(0x5a, 0xa4, 0x69), QColor(0xc9, 0xa2, 0x27),
                                QColor(0x8c, 0x6b, 0xb1), QColor(0xe0, 0x7b, 0x39),
                                QColor(0x7f, 0x8c, 0x8d)};

// 0-1 metrics on the left axis; 0-100 ones and the mean length on the right.
bool onRightAxis(const QString& metric)
{
    return metricScale(metric.toStdString()) != MetricScale::Unit;
}

}  // namespace

TrainPlots::TrainPlots(QWidget* parent) : QWidget(parent)
{
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(6);
    m_loss = makeTitledPlot(this, tr("Loss"), tr("step"), tr("cross-entropy (nats/token)"));
    m_generation =
        makeTitledPlot(this, tr("Generation eval"), tr("step"), tr("score (0-1 metrics)"));
    m_generation->yAxis2->setLabel(tr("BLEU, chrF, TER (0-100)"));
    m_generationHint = new QCPItemText(m_generation);
    m_generationHint->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_generationHint->position->setCoords(0.5, 0.5);
    m_generationHint->setText(tr("No generation eval in this run:\nset \"Generate every\" "
                                 "(eval.generate_every)\nto score greedy answers while training."));
    m_generationHint->setColor(palette().color(QPalette::PlaceholderText));
    m_lr = makeTitledPlot(this, tr("Learning rate"), tr("step"), tr("learning rate"));
    m_memory = makeTitledPlot(this, tr("Memory"), tr("step"), tr("tensor memory (MiB)"));
    m_speed =
        makeTitledPlot(this, tr("Throughput and gradient norm"), tr("step"), tr("tokens / s"));
    grid->addWidget(m_loss, 0, 0);
    grid->addWidget(m_generation, 0, 1);
    grid->addWidget(m_lr, 0, 2);
    grid->addWidget(m_memory, 1, 0, 1, 2);
    grid->addWidget(m_speed, 1, 2);
    m_preference = new PreferencePlots(this);
    m_preference->hide();
    grid->addWidget(m_preference, 2, 0, 1, 3);

    QColor light(0x34, 0x6d, 0xb3);
    light.setAlpha(90);
    m_lossRaw = makePlotGraph(m_loss, tr("train"), light);
    m_lossSmooth = makePlotGraph(m_loss, tr("train (smoothed)"), QColor(0x34, 0x6d, 0xb3));
    m_lossVal = makePlotGraph(m_loss, tr("validation"), QColor(0xd1, 0x4f, 0x5a));
    m_lossVal->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    m_lrPlanned = makePlotGraph(m_lr, tr("planned"), QColor(0x8c, 0x8c, 0x8c));
    m_lrPlanned->setPen(QPen(QColor(0x8c, 0x8c, 0x8c), 1.6, Qt::DashLine));
    m_lrActual = makePlotGraph(m_lr, tr("actual"), QColor(0xe0, 0x7b, 0x39), true);
    m_memCurrent = makePlotGraph(m_memory, tr("after step"), QColor(0x34, 0x6d, 0xb3));
    m_memPeak = makePlotGraph(m_memory, tr("peak in step"), QColor(0xd1, 0x4f, 0x5a));
    // The CUDA caching allocator's reserved bytes (allocated + cached); shown only for a CUDA run.
    m_memReserved = makePlotGraph(m_memory, tr("reserved (CUDA)"), QColor(0x7f, 0x8c, 0x8d));
    m_memReserved->setPen(QPen(QColor(0x7f, 0x8c, 0x8d), 1.4, Qt::DashLine));
    m_memReserved->setVisible(false);
    m_memReserved->removeFromLegend();
    m_memForward = makePlotGraph(m_memory, tr("after forward"), QColor(0x5a, 0xa4, 0x69), true);
    m_memBackward = makePlotGraph(m_memory, tr("after backward"), QColor(0x8c, 0x6b, 0xb1), true);
    m_memOptimizer = makePlotGraph(m_memory, tr("after optimizer"), QColor(0xc9, 0xa2, 0x27), true);
    m_speed->yAxis2->setVisible(true);
    m_speed->yAxis2->setLabel(tr("gradient norm (before clipping)"));
    m_tokens = makePlotGraph(m_speed, tr("tokens / s"), QColor(0x5a, 0xa4, 0x69));
    m_gradNorm = makePlotGraph(m_speed, tr("gradient norm"), QColor(0x8c, 0x6b, 0xb1), false,
                               m_speed->yAxis2);
    showGenerationHint();
}

void TrainPlots::clear()
{
    m_steps.clear();
    m_evals.clear();
    m_ema = 0;
    for (QCustomPlot* p : plots())
        for (int i = 0; i < p->graphCount(); ++i)
            if (p->graph(i) != m_lrPlanned &&
                std::find(m_overlays.begin(), m_overlays.end(), p->graph(i)) == m_overlays.end())
                p->graph(i)->data()->clear();
    // The next run may log other metrics: its graphs are made as its points arrive.
    for (const auto& [metric, graph] : m_generationGraphs)
        m_generation->removeGraph(graph);
    m_generationGraphs.clear();
    for (const auto& [rank, graph] : m_rankMemory)
        m_memory->removeGraph(graph);
    m_rankMemory.clear();
    showProcessMemory(true);
    m_preference->clear();
    m_preference->setVisible(m_preference->hasPoints());  // overlays stay
    updateGenerationAxes();
    scheduleReplot();
}

void TrainPlots::setPlannedSchedule(const std::vector<double>& lrPerStep)
{
    QVector<double> x, y;
    for (size_t i = 0; i < lrPerStep.size(); ++i) {
        x << double(i + 1);  // StepMetrics.step is 1-based: step s runs at learningRateAt(s - 1)
        y << lrPerStep[i];
    }
    m_lrPlanned->setData(x, y, true);
    scheduleReplot();
}

void TrainPlots::appendSteps(const std::vector<StepMetrics>& steps)
{
    if (steps.empty())
        return;
    for (const StepMetrics& m : steps) {
        const double x = double(m.step);
        m_ema = m_steps.empty() ? m.loss : m_smoothing * m_ema + (1 - m_smoothing) * m.loss;
        m_steps.push_back(m);
        m_lossRaw->addData(x, m.loss);
        m_lossSmooth->addData(x, m_ema);
        m_lrActual->addData(x, m.lr);
        m_memCurrent->addData(x, double(m.memoryCurrent) / kMiB);
        m_memPeak->addData(x, double(m.memoryPeak) / kMiB);
        if (m.memoryReserved > 0)
            m_memReserved->addData(x, double(m.memoryReserved) / kMiB);
        m_memForward->addData(x, double(m.memoryAfterForward) / kMiB);
        m_memBackward->addData(x, double(m.memoryAfterBackward) / kMiB);
        m_memOptimizer->addData(x, double(m.memoryAfterOptimizer) / kMiB);
        m_tokens->addData(x, m.tokensPerSecond);
        m_gradNorm->addData(x, m.gradNorm);
    }
    if (m_preference->appendSteps(steps))
        m_preference->show();
    scheduleReplot();
}

void TrainPlots::appendBatch(const std::vector<StepMetrics>& steps,
                             const std::vector<EvalMetrics>& evals)
{
    appendSteps(steps);
    appendEvals(evals);
}

void TrainPlots::appendRankSteps(const std::vector<RankStep>& steps)
{
    if (steps.empty())
        return;
    if (m_rankMemory.empty())
        showProcessMemory(false);
    for (const RankStep& s : steps) {
        QCPGraph*& g = m_rankMemory[s.rank];
        if (!g)
            g = makePlotGraph(m_memory, tr("rank %1").arg(s.rank),
                              kMetricColors[size_t(s.rank) % std::size(kMetricColors)]);
        g->addData(double(s.step.step), double(s.step.memoryCurrent) / kMiB);
    }
    scheduleReplot();
}

void TrainPlots::showProcessMemory(bool on)
{
    for (QCPGraph* g :
         {m_memCurrent, m_memPeak, m_memForward, m_memBackward, m_memOptimizer, m_memReserved}) {
        const bool shown = on && (g != m_memReserved || m_cudaMemory);
        g->setVisible(shown);
        if (shown)
            g->addToLegend();
        else
            g->removeFromLegend();
    }
}

void TrainPlots::appendEvals(const std::vector<EvalMetrics>& evals)
{
    if (evals.empty())
        return;
    for (const EvalMetrics& e : evals) {
        m_evals.push_back(e);
        if (e.valLoss)  // an evaluation of the general holdout alone has no validation point
            m_lossVal->addData(double(e.step), *e.valLoss);
    }
    if (m_preference->appendEvals(evals))
        m_preference->show();
    scheduleReplot();
}

void TrainPlots::appendGenerationEvals(const std::vector<GenerationEvalMetrics>& evals)
{
    if (evals.empty())
        return;
    for (const GenerationEvalMetrics& e : evals)
        for (const auto& [name, score] : e.metrics)
            generationGraph(QString::fromStdString(name))->addData(double(e.step), score);
    updateGenerationAxes();
    scheduleReplot();
}

QCPGraph* TrainPlots::generationGraph(const QString& metric)
{
    auto it = m_generationGraphs.find(metric);
    if (it != m_generationGraphs.end())
        return it->second;
    const QColor color = kMetricColors[m_generationGraphs.size() % std::size(kMetricColors)];
    const bool right = onRightAxis(metric);
    auto* g = makePlotGraph(m_generation, right ? tr("%1 (right axis)").arg(metric) : metric, color,
                            false, right ? m_generation->yAxis2 : nullptr);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 5));
    g->setProperty("metric", metric);
    m_generationGraphs.emplace(metric, g);
    return g;
}

void TrainPlots::showGenerationHint()
{
    bool points = false;
    for (int i = 0; i < m_generation->graphCount(); ++i)
        points = points || m_generation->graph(i)->dataCount() > 0;
    m_generationHint->setVisible(!points);
    m_generation->legend->setVisible(points);
    if (!points) {  // an empty plot: the 0-1 score range over the loss plot's steps
        m_generation->yAxis->setRange(0, 1);
        m_generation->xAxis->setRange(m_loss->xAxis->range());
    }
}

void TrainPlots::updateGenerationAxes()
{
    // The right axis shows only when a metric needs it, labelled with what is on it.
    QStringList percent, tokens;
    for (int i = 0; i < m_generation->graphCount(); ++i) {
        QCPGraph* g = m_generation->graph(i);
        if (g->valueAxis() != m_generation->yAxis2)
            continue;
        const QString metric = g->property("metric").toString();
        (metricScale(metric.toStdString()) == MetricScale::Tokens ? tokens : percent) << metric;
    }
    percent.removeDuplicates();
    tokens.removeDuplicates();
    QStringList parts;
    if (!percent.isEmpty())
        parts << tr("%1 (0-100)").arg(percent.join(QStringLiteral(", ")));
    if (!tokens.isEmpty())
        parts << tr("%1 (tokens)").arg(tokens.join(QStringLiteral(", ")));
    m_generation->yAxis2->setVisible(!parts.isEmpty());
    m_generation->yAxis2->setLabel(parts.join(QStringLiteral(" · ")));
}

void TrainPlots::setOverlays(const std::vector<RunCurve>& runs)
{
    for (QCPGraph* g : m_overlays)
        g->parentPlot()->removeGraph(g);
    m_overlays.clear();
    std::vector<std::pair<QString, PreferenceCurve>> preference;
    for (const RunCurve& run : runs)
        preference.emplace_back(run.name, run.preference);
    m_preference->setOverlays(preference);
    m_preference->setVisible(m_preference->hasPoints());
    static const QColor palette[] = {QColor(0x5a, 0xa4, 0x69), QColor(0xc9, 0xa2, 0x27),
                                     QColor(0x8c, 0x6b, 0xb1), QColor(0x8c, 0x8c, 0x8c),
                                     QColor(0xe0, 0x7b, 0x39)};
    for (size_t i = 0; i < runs.size(); ++i) {
        QColor c = palette[i % 5];
        c.setAlpha(170);
        auto* g = makePlotGraph(m_loss, runs[i].name, c);
        g->setPen(QPen(c, 1.2, Qt::DotLine));
        g->setData(runs[i].steps, runs[i].losses, true);
        m_overlays.push_back(g);
        for (const MetricCurve& m : runs[i].generation) {
            const bool right = onRightAxis(m.metric);
            auto* mg = makePlotGraph(m_generation, runs[i].name + QStringLiteral(": ") + m.metric,
                                     c, false, right ? m_generation->yAxis2 : nullptr);
            mg->setProperty("metric", m.metric);
            mg->setPen(QPen(c, 1.2, Qt::DotLine));
            mg->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, c, 4));
            mg->setData(m.steps, m.values, true);
            m_overlays.push_back(mg);
        }
    }
    updateGenerationAxes();
    scheduleReplot();
}

void TrainPlots::setLogScale(bool on)
{
    m_loss->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on)
        m_loss->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    else
        m_loss->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    scheduleReplot();
}

void TrainPlots::setSmoothing(double factor)
{
    m_smoothing = std::clamp(factor, 0.0, 0.999);
    recomputeSmoothing();
    scheduleReplot();
}

void TrainPlots::recomputeSmoothing()
{
    m_lossSmooth->data()->clear();
    bool first = true;
    for (const StepMetrics& m : m_steps) {
        m_ema = first ? m.loss : m_smoothing * m_ema + (1 - m_smoothing) * m.loss;
        first = false;
        m_lossSmooth->addData(double(m.step), m_ema);
    }
}

void TrainPlots::setMemorySource(const QString& source)
{
    const bool cuda = source == QLatin1String("cuda");
    m_memory->yAxis->setLabel(cuda ? tr("GPU memory (MiB)")
                                   : tr("CPU tensor memory, tracked (MiB)"));
    m_memCurrent->setName(cuda ? tr("allocated after step") : tr("after step"));
    m_cudaMemory = cuda;
    showProcessMemory(m_rankMemory.empty());
}

void TrainPlots::scheduleReplot()
{
    if (m_replotPending)
        return;
    m_replotPending = true;
    QMetaObject::invokeMethod(
        this, [this] { replotAll(); }, Qt::QueuedConnection);
}

void TrainPlots::replotAll()
{
    if (!m_replotPending)
        return;  // brought forward by an export
    m_replotPending = false;
    QList<QCustomPlot*> shown = plots();
    if (preferenceShown())
        shown += m_preference->plots();
    for (QCustomPlot* p : shown) {
        p->rescaleAxes(true);
        // Keep a little head room so the newest point is not on the frame.
        for (QCPAxis* axis : {p->yAxis, p->yAxis2}) {
            if (!axis->visible() || axis->scaleType() == QCPAxis::stLogarithmic)
                continue;
            QCPRange r = axis->range();
            const double pad = std::max(r.size() * 0.08, std::abs(r.upper) * 0.02 + 1e-12);
            axis->setRange(std::min(0.0, r.lower) < 0 ? r.lower - pad
                                                      : std::max(0.0, r.lower - pad),
                           r.upper + pad);
        }
        if (p == m_generation)
            showGenerationHint();
        p->replot(QCustomPlot::rpQueuedReplot);
    }
    ++m_replots;
}

bool TrainPlots::exportPng(const QString& dir, QStringList* written)
{
    replotAll();  // the axes as a drawn plot would show them
    QDir().mkpath(dir);
    const std::pair<QCustomPlot*, const char*> files[] = {{m_loss, "loss.png"},
                                                          {m_generation, "generation-eval.png"},
                                                          {m_lr, "learning-rate.png"},
                                                          {m_memory, "memory.png"},
                                                          {m_speed, "throughput.png"}};
    std::vector<std::pair<QCustomPlot*, QString>> all;
    for (const auto& [plot, name] : files)
        all.emplace_back(plot, QLatin1String(name));
    if (preferenceShown())
        for (qsizetype i = 0; i < m_preference->plots().size(); ++i)
            all.emplace_back(m_preference->plots()[i], PreferencePlots::fileNames()[i]);
    bool ok = true;
    for (const auto& [plot, name] : all) {
        const QString path = dir + QLatin1Char('/') + name;
        ok = plot->savePng(path, 900, 500) && ok;
        if (written)
            *written << path;
    }
    return ok;
}

bool TrainPlots::exportCsv(const QString& file) const
{
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly | QIODevice::Text))
        return false;
    QTextStream s(&out);
    // A preference or reward run adds its statistics under TRL's names (empty where a step has
    // none).
    const bool preference = std::any_of(m_steps.begin(), m_steps.end(),
                                        [](const StepMetrics& m) { return bool(m.preference); });
    s << "step,loss,val_loss,lr,grad_norm,tokens_per_s,memory_bytes,memory_peak_bytes,memory_"
         "reserved_bytes,seconds";
    if (preference)
        s << ",rewards/chosen,rewards/rejected,rewards/margins,rewards/accuracies,logps/chosen,"
             "logps/rejected";
    s << '\n';
    size_t e = 0;
    for (const StepMetrics& m : m_steps) {
        QString val;
        while (e < m_evals.size() && m_evals[e].step < m.step)
            ++e;
        if (e < m_evals.size() && m_evals[e].step == m.step && m_evals[e].valLoss)
            val = QString::number(*m_evals[e].valLoss, 'g', 8);
        s << m.step << ',' << QString::number(m.loss, 'g', 8) << ',' << val << ','
          << QString::number(m.lr, 'g', 8) << ',' << QString::number(m.gradNorm, 'g', 8) << ','
          << QString::number(m.tokensPerSecond, 'g', 8) << ',' << m.memoryCurrent << ','
          << m.memoryPeak << ',' << m.memoryReserved << ',' << QString::number(m.seconds, 'g', 8);
        if (preference) {
            const auto& p = m.preference;
            for (double v : {p ? p->rewardsChosen : 0.0, p ? p->rewardsRejected : 0.0,
                             p ? p->rewardsMargins : 0.0, p ? p->rewardsAccuracies : 0.0,
                             p ? p->logpsChosen : 0.0, p ? p->logpsRejected : 0.0})
                s << ',' << (p ? QString::number(v, 'g', 8) : QString());
        }
        s << '\n';
    }
    s.flush();
    return out.commit();
}

int TrainPlots::lossPoints() const
{
    return m_lossRaw->dataCount();
}
std::vector<std::pair<double, double>> TrainPlots::lossSeries() const
{
    std::vector<std::pair<double, double>> out;
    for (auto p = m_lossRaw->data()->constBegin(); p != m_lossRaw->data()->constEnd(); ++p)
        out.emplace_back(p->key, p->value);
    return out;
}

std::vector<std::pair<double, double>> TrainPlots::rankMemorySeries(int rank) const
{
    std::vector<std::pair<double, double>> out;
    const auto it = m_rankMemory.find(rank);
    if (it == m_rankMemory.end())
        return out;
    for (auto p = it->second->data()->constBegin(); p != it->second->data()->constEnd(); ++p)
        out.emplace_back(p->key, p->value);
    return out;
}

int TrainPlots::valPoints() const
{
    return m_lossVal->dataCount();
}
int TrainPlots::memoryPoints() const
{
    return m_memCurrent->dataCount();
}
int TrainPlots::lrPoints() const
{
    return m_lrActual->dataCount();
}
int TrainPlots::plannedPoints() const
{
    return m_lrPlanned->dataCount();
}
int TrainPlots::generationEvalPoints() const
{
    int n = 0;
    for (const auto& [metric, graph] : m_generationGraphs)
        n += graph->dataCount();
    return n;
}

int TrainPlots::generationGraphs() const
{
    return m_generation->graphCount();
}

QString TrainPlots::generationRightAxis() const
{
    return m_generation->yAxis2->visible() ? m_generation->yAxis2->label() : QString();
}

std::vector<std::pair<double, double>> TrainPlots::generationEvalSeries(const QString& metric) const
{
    std::vector<std::pair<double, double>> out;
    const auto it = m_generationGraphs.find(metric);
    if (it == m_generationGraphs.end())
        return out;
    for (auto p = it->second->data()->constBegin(); p != it->second->data()->constEnd(); ++p)
        out.emplace_back(p->key, p->value);
    return out;
}

}  // namespace tb
