// RankProgress: one row per rank, rewritten with each drain's newest step of that rank.
#include "rank_progress.h"

#include <QHeaderView>

#include <algorithm>

namespace tb {

namespace {

enum Column { kRank, kStep, kLoss, kTokens, kMemory, kColumns };

}  // namespace

RankProgress::RankProgress(QWidget* parent) : QTableWidget(0, kColumns, parent)
{
    setHorizontalHeaderLabels(
        {tr("Rank"), tr("Step"), tr("Loss"), tr("Tokens / s"), tr("Memory after step (MiB)")});
    verticalHeader()->hide();
    horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSelectionMode(QAbstractItemView::NoSelection);
}

void RankProgress::reset(int ranks)
{
    setRowCount(0);
    setRowCount(ranks);
    for (int r = 0; r < ranks; ++r) {
        setItem(r, kRank, new QTableWidgetItem(QString::number(r)));
        for (int c = kStep; c < kColumns; ++c)
            setItem(r, c, new QTableWidgetItem(QStringLiteral("–")));
    }
    // As tall as its rows, up to four (then it scrolls).
    const int rows = std::min(ranks, 4);
    int height = horizontalHeader()->sizeHint().height() + 2 * frameWidth();
    for (int r = 0; r < rows; ++r)
        height += rowHeight(r);
    setFixedHeight(height);
}

void RankProgress::update(const std::vector<RankStep>& steps)
{
    std::vector<const StepMetrics*> newest(size_t(rowCount()), nullptr);
    for (const RankStep& s : steps)
        if (s.rank >= 0 && s.rank < rowCount())
            newest[size_t(s.rank)] = &s.step;
    for (int r = 0; r < rowCount(); ++r) {
        const StepMetrics* m = newest[size_t(r)];
        if (!m)
            continue;
        item(r, kStep)->setText(m->totalSteps > 0
                                    ? QStringLiteral("%1 / %2").arg(m->step).arg(m->totalSteps)
                                    : QString::number(m->step));
        item(r, kStep)->setData(Qt::UserRole, qint64(m->step));
        item(r, kLoss)->setText(QString::number(m->loss, 'f', 4));
        item(r, kTokens)->setText(QString::number(m->tokensPerSecond, 'f', 0));
        item(r, kMemory)
            ->setText(QString::number(double(m->memoryCurrent) / (1024.0 * 1024.0), 'f', 1));
    }
}

qint64 RankProgress::stepOf(int rank) const
{
    return rank >= 0 && rank < rowCount() ? item(rank, kStep)->data(Qt::UserRole).toLongLong() : 0;
}

}  // namespace tb
