// RunHistory: a checkable QListWidget over run folders; checked runs become overlay curves.
#include "run_history.h"

#include "studio_state.h"

#include "train/metrics.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>

#include <algorithm>
#include <exception>

namespace tb {

std::vector<MetricCurve> generationCurves(const std::vector<GenerationEvalMetrics>& evals)
{
    std::vector<MetricCurve> curves;
    for (const GenerationEvalMetrics& e : evals)
        for (const auto& [name, score] : e.metrics) {
            const QString metric = QString::fromStdString(name);
            auto it = std::find_if(curves.begin(), curves.end(),
                                   [&](const MetricCurve& c) { return c.metric == metric; });
            if (it == curves.end()) {
                curves.push_back({metric, {}, {}});
                it = curves.end() - 1;
            }
            it->steps << double(e.step);
            it->values << score;
        }
    return curves;
}

RunHistory::RunHistory(StudioState* state, QWidget* parent) : QListWidget(parent), m_state(state)
{
    connect(this, &QListWidget::itemChanged, this, &RunHistory::updateOverlays);
    connect(m_state, &StudioState::runsChanged, this, &RunHistory::refresh);
    connect(m_state, &StudioState::configChanged, this, [this] {
        if (QString::fromStdString(m_state->config().outputDir) != m_scannedRoot)
            refresh();  // another runs folder
    });
    refresh();
}

void RunHistory::refresh()
{
    QStringList dirs = m_state->runs();
    m_scannedRoot = QString::fromStdString(m_state->config().outputDir);
    const QDir root(m_scannedRoot);
    for (const QFileInfo& f :
         root.entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Time | QDir::Reversed))
        if (QFileInfo::exists(f.filePath() + QStringLiteral("/metrics.jsonl")) &&
            !dirs.contains(f.filePath()))
            dirs << f.filePath();
    QSet<QString> checked;
    for (int i = 0; i < count(); ++i)
        if (item(i)->checkState() == Qt::Checked)
            checked << item(i)->data(Qt::UserRole).toString();
    const QSignalBlocker block(this);
    clear();
    for (const QString& dir : dirs) {
        auto* entry = new QListWidgetItem(QFileInfo(dir).fileName(), this);
        entry->setData(Qt::UserRole, dir);
        entry->setToolTip(dir);
        entry->setFlags(entry->flags() | Qt::ItemIsUserCheckable);
        entry->setCheckState(checked.contains(dir) ? Qt::Checked : Qt::Unchecked);
    }
}

void RunHistory::updateOverlays()
{
    std::vector<RunCurve> curves;
    for (int i = 0; i < count(); ++i) {
        QListWidgetItem* entry = item(i);
        if (entry->checkState() != Qt::Checked)
            continue;
        RunCurve curve;
        curve.name = entry->text();
        try {
            const RunMetrics metrics =
                readRunMetrics(entry->data(Qt::UserRole).toString().toStdString());
            for (const StepMetrics& m : metrics.steps) {
                curve.steps << double(m.step);
                curve.losses << m.loss;
            }
            curve.generation = generationCurves(metrics.generationEvals);
            curve.preference = preferenceCurve(metrics.steps);
        } catch (const std::exception& e) {
            Q_EMIT message(
                tr("Cannot read %1: %2").arg(entry->text(), QString::fromUtf8(e.what())));
            continue;
        }
        curves.push_back(std::move(curve));
    }
    Q_EMIT overlaysChanged(curves);
}

}  // namespace tb
