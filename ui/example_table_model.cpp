// ExampleTableModel: rows read from the outcome's predictions (the same case order for every
// system); the proxy filters on FailingRole and sorts on SortRole.
#include "example_table_model.h"

#include "eval_controller.h"
#include "eval_report.h"
#include "metric_units.h"

#include <QBrush>
#include <QColor>

#include <algorithm>

namespace tb {

ExampleTableModel::ExampleTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ExampleTableModel::setOutcome(std::shared_ptr<const EvalOutcome> outcome)
{
    beginResetModel();
    m_outcome = std::move(outcome);
    m_metrics.clear();
    m_higherIsBetter.clear();
    m_directional.clear();
    m_run = 0;
    if (m_outcome && !m_outcome->results.empty()) {
        if (m_outcome->scorecard) {
            m_metrics = m_outcome->scorecard->metrics;
            m_higherIsBetter = m_outcome->scorecard->higherIsBetter;
            m_directional = m_outcome->scorecard->directional;
        } else {
            m_metrics = m_outcome->results.front().metricOrder;
            for (const std::string& m : m_metrics) {
                m_higherIsBetter.push_back(metricHigherIsBetter(m));
                m_directional.push_back(metricDirectional(m));
            }
        }
        m_run = m_outcome->results.size() > 1 ? 1 : 0;
    }
    endResetModel();
}

void ExampleTableModel::setRun(int system)
{
    if (!m_outcome || system < 1 || size_t(system) >= m_outcome->results.size() || system == m_run)
        return;
    beginResetModel();
    m_run = system;
    endResetModel();
}

int ExampleTableModel::rowCount(const QModelIndex& parent) const
{
    if (parent.isValid() || !m_outcome || m_outcome->results.empty())
        return 0;
    return int(m_outcome->results.front().predictions.size());
}

int ExampleTableModel::columnCount(const QModelIndex& parent) const
{
    if (parent.isValid() || !m_outcome || m_outcome->results.empty())
        return 0;
    return firstMetricColumn() + int(m_metrics.size()) * (comparing() ? 3 : 1);
}

int ExampleTableModel::metricColumn(const std::string& metric, int which) const
{
    const auto it = std::find(m_metrics.begin(), m_metrics.end(), metric);
    if (it == m_metrics.end() || (!comparing() && which != 0))
        return -1;
    const int m = int(it - m_metrics.begin());
    return firstMetricColumn() + (comparing() ? 3 * m + which : m);
}

double ExampleTableModel::score(int system, int row, const std::string& metric) const
{
    const auto& scores = m_outcome->results[size_t(system)].predictions[size_t(row)].scores;
    const auto it = scores.find(metric);
    return it == scores.end() ? 0.0 : it->second;
}

QString ExampleTableModel::answer(int system, int row) const
{
    return QString::fromStdString(
        m_outcome->results[size_t(system)].predictions[size_t(row)].prediction);
}

bool ExampleTableModel::failing(int row) const
{
    if (!comparing())
        return false;
    for (size_t m = 0; m < m_metrics.size(); ++m) {
        if (!m_directional[m])  // the length describes an answer; longer does not fail
            continue;
        const double base = score(0, row, m_metrics[m]), run = score(m_run, row, m_metrics[m]);
        if (m_higherIsBetter[m] ? run < base : run > base)
            return true;
    }
    return false;
}

qint64 ExampleTableModel::recordId(int row) const
{
    return m_outcome->results.front().predictions[size_t(row)].input.recordId;
}

QVariant ExampleTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const int row = index.row(), col = index.column();
    if (role == RecordIdRole)
        return recordId(row);
    if (role == FailingRole)
        return failing(row);
    const bool differs = comparing() && answer(0, row) != answer(m_run, row);
    if (role == DiffersRole)
        return differs;
    if (col >= firstMetricColumn())
        return metricData(row, col, role);
    const eval::EvalCase& c = m_outcome->results.front().predictions[size_t(row)].input;
    QString text;
    switch (col) {
    case IdColumn:
        text = QString::fromStdString(c.id);
        break;
    case PromptColumn:
        text = promptText(c);
        break;
    case ReferenceColumn:
        text = referenceText(c);
        break;
    case BaseColumn:
        text = answer(0, row);
        break;
    default:
        text = answer(m_run, row);
        break;
    }
    switch (role) {
    case Qt::DisplayRole:
        return QString(text).replace(QLatin1Char('\n'), QStringLiteral(" ⏎ "));
    case Qt::ToolTipRole:
    case SortRole:
        return text;
    case Qt::BackgroundRole:
        if (differs && (col == BaseColumn || col == RunColumn))
            return QBrush(QColor(0xfc, 0xf3, 0xcf));  // the answers differ
        return {};
    case Qt::ForegroundRole:
        if (differs && (col == BaseColumn || col == RunColumn))
            return QBrush(QColor(0x40, 0x30, 0x00));
        return {};
    default:
        return {};
    }
}

QVariant ExampleTableModel::metricData(int row, int col, int role) const
{
    const int offset = col - firstMetricColumn();
    const size_t m = size_t(comparing() ? offset / 3 : offset);
    const int which = comparing() ? offset % 3 : 0;
    const std::string& metric = m_metrics[m];
    const double base = score(0, row, metric);
    const double value = which == 0   ? base
                         : which == 1 ? score(m_run, row, metric)
                                      : score(m_run, row, metric) - base;
    switch (role) {
    case Qt::DisplayRole:
        return QString((which == 2 && value > 0 ? QStringLiteral("+") : QString()) +
                       formatScore(metric, value));
    case SortRole:
        return value;
    case Qt::TextAlignmentRole:
        return int(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::BackgroundRole:
    case Qt::ForegroundRole: {
        if (which != 2 || value == 0 || !m_directional[m])
            return {};
        const bool better = (value > 0) == m_higherIsBetter[m];
        if (role == Qt::BackgroundRole)
            return QBrush(better ? QColor(0xd5, 0xf5, 0xe3) : QColor(0xfa, 0xdb, 0xd8));
        return QBrush(better ? QColor(0x1e, 0x84, 0x49) : QColor(0xa9, 0x32, 0x26));
    }
    default:
        return {};
    }
}

QVariant ExampleTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || orientation != Qt::Horizontal || !m_outcome)
        return QAbstractTableModel::headerData(section, orientation, role);
    const QString base = m_outcome->labels.value(0, QStringLiteral("base"));
    const QString run = m_outcome->labels.value(m_run);
    if (section < firstMetricColumn()) {
        switch (section) {
        case IdColumn:
            return tr("case");
        case PromptColumn:
            return tr("prompt");
        case ReferenceColumn:
            return tr("reference");
        case BaseColumn:
            return tr("%1 answer").arg(base);
        default:
            return tr("%1 answer").arg(run);
        }
    }
    const int offset = section - firstMetricColumn();
    if (!comparing())
        return QString::fromStdString(m_metrics.at(size_t(offset)));
    const QString metric = QString::fromStdString(m_metrics.at(size_t(offset / 3)));
    switch (offset % 3) {
    case 0:
        return tr("%1 %2").arg(metric, base);
    case 1:
        return tr("%1 %2").arg(metric, run);
    default:
        return tr("Δ %1").arg(metric);
    }
}

ExampleFilterProxy::ExampleFilterProxy(QObject* parent) : QSortFilterProxyModel(parent)
{
    setSortRole(ExampleTableModel::SortRole);
}

void ExampleFilterProxy::setFailingOnly(bool on)
{
    if (on == m_failingOnly)
        return;
    m_failingOnly = on;
    invalidateRowsFilter();
}

bool ExampleFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    if (!m_failingOnly)
        return true;
    return sourceModel()
        ->index(sourceRow, 0, sourceParent)
        .data(ExampleTableModel::FailingRole)
        .toBool();
}

}  // namespace tb
