// RunHistory: a checkable QListWidget over run folders; checked runs become overlay curves.
#include "run_history.h"

#include "studio_state.h"

#include "train/metrics.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>
#include <tuple>

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

namespace {

// The file's size and time now, to tell whether a cached read is still the file's content.
std::pair<qint64, QDateTime> metricsStamp(const QString& dir)
{
    const QFileInfo f(dir + QStringLiteral("/metrics.jsonl"));
    return {f.exists() ? f.size() : -1, f.lastModified()};
}

// Reads one run's curves (on a worker: core and plain values only, no widgets).
RunHistory::ReadCurve readCurve(const QString& dir, const QString& name)
{
    RunHistory::ReadCurve r;
    r.dir = dir;
    std::tie(r.size, r.modified) = metricsStamp(dir);  // the curve's name is the list's
    try {
        const RunMetrics metrics = readRunMetrics(dir.toStdString());
        for (const StepMetrics& m : metrics.steps) {
            r.curve.steps << double(m.step);
            r.curve.losses << m.loss;
        }
        r.curve.generation = generationCurves(metrics.generationEvals);
        r.curve.preference = preferenceCurve(metrics.steps);
        r.ok = true;
        if (!metrics.warnings.empty())
            r.messages << RunHistory::tr("%1: %2 line(s) of metrics.jsonl skipped; the first: %3")
                              .arg(name)
                              .arg(metrics.warnings.size())
                              .arg(QString::fromStdString(metrics.warnings.front()));
    } catch (const std::exception& e) {
        r.messages << RunHistory::tr("Cannot read %1: %2").arg(name, QString::fromUtf8(e.what()));
    }
    return r;
}

}  // namespace

RunHistory::RunHistory(StudioState* state, QWidget* parent) : QListWidget(parent), m_state(state)
{
    connect(this, &QListWidget::itemChanged, this, &RunHistory::updateOverlays);
    connect(&m_reader, &QFutureWatcher<ReadBatch>::finished, this,
            [this] { showOverlays(m_reader.result()); });
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
    // The checked runs in list order: cached ones as they are, the rest read on the worker.
    std::vector<std::pair<QString, QString>> toRead;  // folder, name
    for (int i = 0; i < count(); ++i) {
        const QListWidgetItem* entry = item(i);
        if (entry->checkState() != Qt::Checked)
            continue;
        const QString dir = entry->data(Qt::UserRole).toString();
        const auto it = m_cache.constFind(dir);
        const auto [size, modified] = metricsStamp(dir);
        if (it == m_cache.constEnd() || it->size != size || it->modified != modified)
            toRead.emplace_back(dir, entry->text());
    }
    const quint64 request = ++m_request;
    if (toRead.empty()) {
        showOverlays({request, {}});
        return;
    }
    m_reader.setFuture(QtConcurrent::run([request, toRead] {
        ReadBatch batch{request, {}};
        for (const auto& [dir, name] : toRead)
            batch.runs.push_back(readCurve(dir, name));
        return batch;
    }));
}

void RunHistory::showOverlays(const ReadBatch& batch)
{
    if (batch.request != m_request)
        return;  // a newer check is being read
    for (const ReadCurve& r : batch.runs) {
        for (const QString& line : r.messages)
            Q_EMIT message(line);
        m_cache.insert(r.dir, r);
    }
    std::vector<RunCurve> curves;
    for (int i = 0; i < count(); ++i) {
        const QListWidgetItem* entry = item(i);
        if (entry->checkState() != Qt::Checked)
            continue;
        const auto it = m_cache.constFind(entry->data(Qt::UserRole).toString());
        if (it != m_cache.constEnd() && it->ok) {
            RunCurve curve = it->curve;
            curve.name = entry->text();
            curves.push_back(std::move(curve));
        }
    }
    Q_EMIT overlaysChanged(curves);
}

}  // namespace tb
