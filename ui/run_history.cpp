// RunHistory: a checkable QListWidget over run folders; checked runs become overlay curves.
#include "run_history.h"

#include "studio_state.h"

#include "train/metrics.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>

#include <exception>

namespace tb {

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
            for (const StepMetrics& m :
                 readRunMetrics(entry->data(Qt::UserRole).toString().toStdString()).steps) {
                curve.steps << double(m.step);
                curve.losses << m.loss;
            }
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
