// The Train page's plots of a preference or reward run (the statistics core logs under TRL's
// names): rewards of the chosen and rejected answers, their margin, the share of pairs ranked
// right, and the answers' log-probabilities (ORPO: its SFT term and log odds ratio), train lines
// and validation points, with past runs' margins and accuracies overlaid. Shown only once a run
// carries these statistics. TrainPlots owns it and replots it with its own plots.
#pragma once

#include "train/metrics.h"

#include <QVector>
#include <QWidget>

#include <map>
#include <vector>

class QCustomPlot;
class QCPGraph;

namespace tb {

// A past run's preference statistics over its steps (run history overlay).
struct PreferenceCurve {
    QVector<double> steps, margins, accuracies;
    bool empty() const { return steps.isEmpty(); }
};
PreferenceCurve preferenceCurve(const std::vector<StepMetrics>& steps);

class PreferencePlots : public QWidget {
    Q_OBJECT
public:
    explicit PreferencePlots(QWidget* parent = nullptr);

    void clear();  // the live run's points; overlays stay
    // Adds the steps' and evals' statistics; those without any are skipped. True when any was
    // added.
    bool appendSteps(const std::vector<StepMetrics>& steps);
    bool appendEvals(const std::vector<EvalMetrics>& evals);
    // Checked past runs: (name, curve); runs without statistics are skipped.
    void setOverlays(const std::vector<std::pair<QString, PreferenceCurve>>& runs);

    // Whether any live or overlaid point is plotted (the owner shows the widget then).
    bool hasPoints() const;
    // The live run's points of one series, as plotted (step, value): "rewards/chosen",
    // "rewards/rejected", "rewards/margins", "rewards/accuracies", "logps/chosen",
    // "logps/rejected", "nll_loss", "log_odds_ratio"; prefixed "eval/" for validation points.
    std::vector<std::pair<double, double>> series(const QString& key) const;
    int overlayGraphs() const { return int(m_overlays.size()); }
    QList<QCustomPlot*> plots() const { return {m_rewards, m_margins, m_accuracies, m_logps}; }
    // PNG file names for the plots, in plots() order.
    static QStringList fileNames();

private:
    QCPGraph* graph(const QString& key) const;
    void addStats(const QString& prefix, double step, const PreferenceStats& p);

    QCustomPlot *m_rewards = nullptr, *m_margins = nullptr, *m_accuracies = nullptr,
                *m_logps = nullptr;
    std::map<QString, QCPGraph*> m_graphs;  // the live run's, by series key
    std::vector<QCPGraph*> m_overlays;
};

}  // namespace tb
