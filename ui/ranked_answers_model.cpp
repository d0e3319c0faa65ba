// RankedAnswersModel: a read-only table over the worker's ranking; the answer's full text in its
// tooltip.
#include "ranked_answers_model.h"

namespace tb {

void RankedAnswersModel::setAnswers(std::vector<RankedAnswer> answers)
{
    beginResetModel();
    m_answers = std::move(answers);
    endResetModel();
}

int RankedAnswersModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_answers.size());
}

int RankedAnswersModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : 4;
}

QVariant RankedAnswersModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount())
        return {};
    const RankedAnswer& a = m_answers[size_t(index.row())];
    const QString text = QString::fromStdString(a.text);
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case 0:
            return index.row() + 1;
        case 1:
            return QString::number(a.score, 'f', 3);
        case 2:
            return a.sample + 1;
        case 3:
            return text.simplified();
        }
    } else if (role == Qt::UserRole && index.column() == 1) {
        return a.score;
    } else if (role == Qt::ToolTipRole && index.column() == 3) {
        return tr("%1\n\n(stop: %2)").arg(text, QString::fromStdString(a.stopReason));
    } else if (role == Qt::TextAlignmentRole && index.column() < 3) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant RankedAnswersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case 0:
        return tr("Rank");
    case 1:
        return tr("Reward");
    case 2:
        return tr("Sample");
    case 3:
        return tr("Answer");
    }
    return {};
}

}  // namespace tb
