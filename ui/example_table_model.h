// ExampleTableModel: the Evaluate page's per-example table: one row per held-out case with its
// prompt, reference, the base model's and one run's answers, and per metric both scores and their
// difference; rows whose answers differ are shaded, a worse score is red. ExampleFilterProxy sorts
// numerically (by a score difference, say) and keeps only the failing rows when asked.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include <memory>
#include <string>
#include <vector>

namespace tb {

struct EvalOutcome;

class ExampleTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Role {
        SortRole = Qt::UserRole,  // numbers for score columns, text otherwise
        RecordIdRole,             // the case's store record id (qint64; 0: not from a store)
        FailingRole,              // the run scored below the base on some metric (bool)
        DiffersRole,              // the two answers differ (bool)
    };
    // RunColumn only when comparing; the metric columns follow.
    enum Column { IdColumn, PromptColumn, ReferenceColumn, BaseColumn, RunColumn };

    explicit ExampleTableModel(QObject* parent = nullptr);

    // The outcome's cases; the compared run is system 1 (when there is one).
    void setOutcome(std::shared_ptr<const EvalOutcome> outcome);
    // Which tuned system the run columns show (1 .. systems-1).
    void setRun(int system);
    int run() const { return m_run; }
    bool comparing() const { return m_run > 0; }
    // The metric columns: per metric (base, run, Δ) when comparing, else one column each.
    int metricColumn(const std::string& metric, int which /* 0 base, 1 run, 2 Δ */) const;
    const std::vector<std::string>& metrics() const { return m_metrics; }
    // Whether the run's answer to case `row` scored below the base's on some metric.
    bool failing(int row) const;
    qint64 recordId(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    int firstMetricColumn() const { return comparing() ? RunColumn + 1 : RunColumn; }
    double score(int system, int row, const std::string& metric) const;
    QString answer(int system, int row) const;
    QVariant metricData(int row, int column, int role) const;

    std::shared_ptr<const EvalOutcome> m_outcome;
    std::vector<std::string> m_metrics;
    std::vector<bool> m_higherIsBetter;
    std::vector<bool> m_directional;
    int m_run = 0;
};

class ExampleFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit ExampleFilterProxy(QObject* parent = nullptr);
    void setFailingOnly(bool on);
    bool failingOnly() const { return m_failingOnly; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    bool m_failingOnly = false;
};

}  // namespace tb
