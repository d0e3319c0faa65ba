// ScorecardModel: display text from the ScoreTable's numbers (the metric's decimals), the numbers
// themselves under ValueRole / LowRole / HighRole.
#include "scorecard_model.h"

#include "metric_units.h"

#include <QBrush>
#include <QColor>

namespace tb {

ScorecardModel::ScorecardModel(QObject* parent) : QAbstractTableModel(parent) {}

void ScorecardModel::setTable(ScoreTable table)
{
    beginResetModel();
    m_table = std::move(table);
    endResetModel();
}

int ScorecardModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_table.metrics.size());
}

int ScorecardModel::columnCount(const QModelIndex& parent) const
{
    if (parent.isValid() || m_table.systems.isEmpty())
        return 0;
    return 1 + 2 * int(m_table.systems.size()) - 1;  // metric, systems, Δ of each tuned system
}

QVariant ScorecardModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const size_t row = size_t(index.row());
    const std::string& metric = m_table.metrics[row];
    const int systems = int(m_table.systems.size());
    const int col = index.column();
    if (col == 0) {
        if (role == Qt::DisplayRole)
            return QString(QString::fromStdString(metric) + metricNote(row));
        if (role == ValueRole)
            return QString::fromStdString(metric);
        return {};
    }
    const bool delta = col > systems;
    const int system = delta ? col - systems : col - 1;
    const ScoreCell& c = m_table.cells[row][size_t(system)];
    if (!delta) {
        switch (role) {
        case Qt::DisplayRole:
            return tr("%1  [%2, %3]")
                .arg(formatScore(metric, c.score), formatScore(metric, c.lo),
                     formatScore(metric, c.hi));
        case ValueRole:
            return c.score;
        case LowRole:
            return c.lo;
        case HighRole:
            return c.hi;
        case Qt::TextAlignmentRole:
            return int(Qt::AlignRight | Qt::AlignVCenter);
        default:
            return {};
        }
    }
    if (!c.delta)
        return {};
    const QString verdict = verdictText(c);
    switch (role) {
    case Qt::DisplayRole:
        return tr("%1%2  [%3, %4]  %5")
            .arg(*c.delta >= 0 ? QStringLiteral("+") : QString(), formatScore(metric, *c.delta),
                 formatScore(metric, c.deltaLo), formatScore(metric, c.deltaHi), verdict);
    case Qt::ToolTipRole:
        if (!c.directional)
            return tr("Paired bootstrap 95% interval of %1 − base; a length is neither better "
                      "nor worse.")
                .arg(m_table.systems[system]);
        return tr("Paired bootstrap 95% interval of %1 − base; %2 when it excludes zero.")
            .arg(m_table.systems[system],
                 m_table.higherIsBetter[row] ? tr("higher is better") : tr("lower is better"));
    case ValueRole:
        return *c.delta;
    case LowRole:
        return c.deltaLo;
    case HighRole:
        return c.deltaHi;
    case VerdictRole:
        return verdict;
    case Qt::BackgroundRole:
        if (!c.excludesZero || !c.directional)
            return {};
        return QBrush(c.better ? QColor(0xd5, 0xf5, 0xe3) : QColor(0xfa, 0xdb, 0xd8));
    case Qt::ForegroundRole:
        if (!c.excludesZero || !c.directional)
            return {};
        return QBrush(c.better ? QColor(0x1e, 0x84, 0x49) : QColor(0xa9, 0x32, 0x26));
    default:
        return {};
    }
}

QString ScorecardModel::metricNote(size_t row) const
{
    if (row < m_table.directional.size() && !m_table.directional[row])
        return tr(" (tokens)");
    return m_table.higherIsBetter[row] ? QString() : tr(" (lower is better)");
}

QVariant ScorecardModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || orientation != Qt::Horizontal)
        return QAbstractTableModel::headerData(section, orientation, role);
    const int systems = int(m_table.systems.size());
    if (section == 0)
        return tr("metric");
    if (section <= systems)
        return m_table.systems.value(section - 1);
    return tr("Δ %1 (95%)").arg(m_table.systems.value(section - systems));
}

}  // namespace tb
