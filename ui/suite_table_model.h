// SuiteTableModel: a regression suite's report as a table: one row per case with whether it
// passed on the base and the tuned model, its status (pass, fail, REGRESSED: passed on the base
// and fails now) and the failed checks' reasons; gate-failing rows are red.
#pragma once

#include "eval/suite.h"

#include <QAbstractTableModel>

namespace tb {

class SuiteTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { IdColumn, RequiredColumn, BaseColumn, TunedColumn, StatusColumn, ReasonsColumn };

    explicit SuiteTableModel(QObject* parent = nullptr);

    void setReport(eval::SuiteReport report);
    const eval::SuiteReport& report() const { return m_report; }
    // "REGRESSED", "FAIL (required)", "fail" or "pass".
    static QString statusText(const eval::SuiteCaseReport& c);
    // One line: passes, failures, regressions and whether the gate passes.
    static QString gateSummary(const eval::SuiteReport& report);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    eval::SuiteReport m_report;
};

}  // namespace tb
