// ScoreChart: the Evaluate page's bar chart: per metric one bar per system with its 95% interval
// as an error bar. 0-1 metrics as they are; 0-100 metrics (sacrebleu's BLEU, chrF, TER) divided by
// 100 so they share the axis (their tick says so); the mean length is left out (not a score).
#pragma once

#include "eval_report.h"

#include <QWidget>

#include <array>
#include <vector>

class QCustomPlot;
class QCPBars;
class QCPBarsGroup;
class QCPErrorBars;

namespace tb {

class ScoreChart : public QWidget {
    Q_OBJECT
public:
    explicit ScoreChart(QWidget* parent = nullptr);

    void setTable(const ScoreTable& table);
    QCustomPlot* plot() const { return m_plot; }
    // One bars plottable and one error-bars plottable per system.
    const std::vector<QCPBars*>& bars() const { return m_bars; }
    const std::vector<QCPErrorBars*>& errorBars() const { return m_errors; }
    const QStringList& tickLabels() const { return m_ticks; }
    // System s's bar heights and error-bar ends (value - minus, value + plus), in chart units.
    std::vector<std::array<double, 3>> barsOf(int system) const;

private:
    QCustomPlot* m_plot = nullptr;
    QCPBarsGroup* m_group = nullptr;
    std::vector<QCPBars*> m_bars;
    std::vector<QCPErrorBars*> m_errors;
    QStringList m_ticks;
};

}  // namespace tb
