// SuiteTableModel: text and colours from core's SuiteReport.
#include "suite_table_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>

namespace tb {

namespace {

QString joined(const std::vector<std::string>& lines)
{
    QStringList out;
    for (const std::string& l : lines)
        out << QString::fromStdString(l);
    return out.join(QStringLiteral("; "));
}

}  // namespace

SuiteTableModel::SuiteTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SuiteTableModel::setReport(eval::SuiteReport report)
{
    beginResetModel();
    m_report = std::move(report);
    endResetModel();
}

QString SuiteTableModel::statusText(const eval::SuiteCaseReport& c)
{
    if (c.regression)
        return QStringLiteral("REGRESSED");
    if (c.gate)
        return QStringLiteral("FAIL (required)");
    return c.tuned.passed ? QStringLiteral("pass") : QStringLiteral("fail");
}

QString SuiteTableModel::gateSummary(const eval::SuiteReport& r)
{
    const QString base = r.cases.empty() || !r.cases.front().base
                             ? QString()
                             : tr(" (base model: %1 passed)").arg(r.basePassed);
    return tr("%1 of %2 cases pass%3; %4 regressions, %5 required cases failing: the gate %6.")
        .arg(r.passed)
        .arg(qint64(r.cases.size()))
        .arg(base)
        .arg(r.regressions)
        .arg(r.requiredFailed)
        .arg(r.gateFailed() ? tr("FAILS") : tr("passes"));
}

int SuiteTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_report.cases.size());
}

int SuiteTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ReasonsColumn + 1;
}

QVariant SuiteTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const eval::SuiteCaseReport& c = m_report.cases[size_t(index.row())];
    if (role == Qt::BackgroundRole && index.column() == StatusColumn) {
        if (c.gate)
            return QBrush(QColor(0xfa, 0xdb, 0xd8));
        return c.tuned.passed ? QBrush(QColor(0xd5, 0xf5, 0xe3)) : QVariant();
    }
    if (role == Qt::ForegroundRole && index.column() == StatusColumn && (c.gate || c.tuned.passed))
        return QBrush(c.gate ? QColor(0xa9, 0x32, 0x26) : QColor(0x1e, 0x84, 0x49));
    if (role == Qt::ToolTipRole) {
        QString tip = tr("Tuned answer: %1").arg(QString::fromStdString(c.tuned.answer));
        if (c.base)
            tip += QLatin1Char('\n') +
                   tr("Base answer: %1").arg(QString::fromStdString(c.base->answer));
        if (c.base && !c.base->failures.empty())
            tip += QLatin1Char('\n') + tr("Base failures: %1").arg(joined(c.base->failures));
        return tip;
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case IdColumn:
        return QString::fromStdString(c.id);
    case RequiredColumn:
        return c.required ? tr("required") : QString();
    case BaseColumn:
        return !c.base ? tr("–") : c.base->passed ? tr("pass") : tr("fail");
    case TunedColumn:
        return c.tuned.passed ? tr("pass") : tr("fail");
    case StatusColumn:
        return statusText(c);
    default:
        return joined(c.tuned.failures);
    }
}

QVariant SuiteTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || orientation != Qt::Horizontal)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case IdColumn:
        return tr("case");
    case RequiredColumn:
        return tr("required");
    case BaseColumn:
        return tr("base");
    case TunedColumn:
        return tr("tuned");
    case StatusColumn:
        return tr("status");
    default:
        return tr("why it failed");
    }
}

}  // namespace tb
