// ScorecardModel: the Evaluate page's scorecard as a table: one row per metric; columns the
// metric, each system's score with its 95% interval, and each tuned system's paired difference
// from the base with its interval and verdict (better / worse / no clear difference, colour-coded;
// longer / shorter for the length).
#pragma once

#include "eval_report.h"

#include <QAbstractTableModel>

namespace tb {

class ScorecardModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // Beyond the display text: the numbers (double) and the verdict, for tests and the chart.
    enum Role {
        ValueRole = Qt::UserRole,  // a score or a difference
        LowRole,                   // its interval's lower end
        HighRole,                  // its upper end
        VerdictRole,               // Δ columns: "better", "worse", "no clear difference"
    };

    explicit ScorecardModel(QObject* parent = nullptr);

    void setTable(ScoreTable table);
    const ScoreTable& table() const { return m_table; }
    // Column of system s's score / of tuned system s's (s >= 1) difference.
    int scoreColumn(int system) const { return 1 + system; }
    int deltaColumn(int system) const { return int(m_table.systems.size()) + system; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    QString metricNote(size_t row) const;  // " (lower is better)", " (tokens)" or empty

    ScoreTable m_table;
};

}  // namespace tb
