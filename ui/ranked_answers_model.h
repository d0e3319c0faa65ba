// The Playground's best-of-N table: the sampled answers ranked by a reward model's score, best
// first (rank, reward, sample, answer).
#pragma once

#include "generation_controller.h"

#include <QAbstractTableModel>

#include <vector>

namespace tb {

class RankedAnswersModel : public QAbstractTableModel {
    Q_OBJECT
public:
    explicit RankedAnswersModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

    void setAnswers(std::vector<RankedAnswer> answers);  // best first
    const std::vector<RankedAnswer>& answers() const { return m_answers; }
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<RankedAnswer> m_answers;
};

}  // namespace tb
