// PreferencePlots: four QCustomPlots over PreferenceStats, one graph per series made up front;
// TrainPlots rescales and replots them in its one deferred pass.
#include "preference_plots.h"

#include "plot_style.h"

#include <qcustomplot.h>

#include <QHBoxLayout>

namespace tb {

namespace {

const QColor kChosen(0x27, 0xae, 0x60), kRejected(0xc0, 0x39, 0x2b), kMargin(0x34, 0x6d, 0xb3),
    kAccuracy(0x8c, 0x6b, 0xb1), kNll(0xc9, 0xa2, 0x27), kOdds(0x7f, 0x8c, 0x8d);

}  // namespace

PreferenceCurve preferenceCurve(const std::vector<StepMetrics>& steps)
{
    PreferenceCurve c;
    for (const StepMetrics& m : steps)
        if (m.preference) {
            c.steps << double(m.step);
            c.margins << m.preference->rewardsMargins;
            c.accuracies << m.preference->rewardsAccuracies;
        }
    return c;
}

QStringList PreferencePlots::fileNames()
{
    return {QStringLiteral("rewards.png"), QStringLiteral("reward-margin.png"),
            QStringLiteral("reward-accuracy.png"), QStringLiteral("logps.png")};
}

PreferencePlots::PreferencePlots(QWidget* parent) : QWidget(parent)
{
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(6);
    m_rewards = makeTitledPlot(this, tr("Rewards"), tr("step"), tr("mean reward per pair"));
    m_margins = makeTitledPlot(this, tr("Reward margin"), tr("step"), tr("chosen − rejected"));
    m_accuracies = makeTitledPlot(this, tr("Reward accuracy"), tr("step"),
                                  tr("share of pairs with chosen > rejected"));
    m_logps =
        makeTitledPlot(this, tr("Log-probabilities"), tr("step"), tr("mean log p(answer) (nats)"));
    m_logps->yAxis2->setLabel(tr("ORPO: NLL, log odds ratio"));
    for (QCustomPlot* p : plots())
        row->addWidget(p);

    // Train lines and validation points (circles) for each series; ORPO's two on the right axis.
    struct Series {
        const char* key;
        QCustomPlot* plot;
        QString name;
        QColor color;
        bool right;
    };
    const Series series[] = {
        {"rewards/chosen", m_rewards, tr("chosen"), kChosen, false},
        {"rewards/rejected", m_rewards, tr("rejected"), kRejected, false},
        {"rewards/margins", m_margins, tr("margin"), kMargin, false},
        {"rewards/accuracies", m_accuracies, tr("accuracy"), kAccuracy, false},
        {"logps/chosen", m_logps, tr("chosen"), kChosen, false},
        {"logps/rejected", m_logps, tr("rejected"), kRejected, false},
        {"nll_loss", m_logps, tr("NLL (right)"), kNll, true},
        {"log_odds_ratio", m_logps, tr("log odds ratio (right)"), kOdds, true},
    };
    for (const Series& s : series) {
        QCPAxis* y = s.right ? s.plot->yAxis2 : s.plot->yAxis;
        const QString key = QString::fromLatin1(s.key);
        QCPGraph* train = makePlotGraph(s.plot, s.name, s.color, false, y);
        QCPGraph* eval =
            makePlotGraph(s.plot, tr("%1 (validation)").arg(s.name), s.color.darker(140), true, y);
        eval->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, s.color.darker(140), 6));
        m_graphs.emplace(key, train);
        m_graphs.emplace(QStringLiteral("eval/") + key, eval);
        // A series shows in the legend once it has a point (ORPO's only for ORPO runs).
        train->removeFromLegend();
        eval->removeFromLegend();
    }
    m_accuracies->yAxis->setRange(0, 1);
}

QCPGraph* PreferencePlots::graph(const QString& key) const
{
    const auto it = m_graphs.find(key);
    return it == m_graphs.end() ? nullptr : it->second;
}

void PreferencePlots::clear()
{
    for (const auto& [key, g] : m_graphs) {
        g->data()->clear();
        g->removeFromLegend();
    }
    m_logps->yAxis2->setVisible(false);
}

void PreferencePlots::addStats(const QString& prefix, double step, const PreferenceStats& p)
{
    auto add = [&](const char* key, double value) {
        QCPGraph* g = graph(prefix + QLatin1String(key));
        if (g->dataCount() == 0)
            g->addToLegend();
        g->addData(step, value);
    };
    add("rewards/chosen", p.rewardsChosen);
    add("rewards/rejected", p.rewardsRejected);
    add("rewards/margins", p.rewardsMargins);
    add("rewards/accuracies", p.rewardsAccuracies);
    // A reward model's lines carry no log-probabilities: its zeros would only flatten the plot.
    if (p.logpsChosen != 0 || p.logpsRejected != 0) {
        add("logps/chosen", p.logpsChosen);
        add("logps/rejected", p.logpsRejected);
    }
    if (p.nllLoss)
        add("nll_loss", *p.nllLoss);
    if (p.logOddsRatio)
        add("log_odds_ratio", *p.logOddsRatio);
    if (p.nllLoss || p.logOddsRatio)
        m_logps->yAxis2->setVisible(true);
}

bool PreferencePlots::appendSteps(const std::vector<StepMetrics>& steps)
{
    bool any = false;
    for (const StepMetrics& m : steps)
        if (m.preference) {
            addStats(QString(), double(m.step), *m.preference);
            any = true;
        }
    return any;
}

bool PreferencePlots::appendEvals(const std::vector<EvalMetrics>& evals)
{
    bool any = false;
    for (const EvalMetrics& e : evals)
        if (e.preference) {
            addStats(QStringLiteral("eval/"), double(e.step), *e.preference);
            any = true;
        }
    return any;
}

void PreferencePlots::setOverlays(const std::vector<std::pair<QString, PreferenceCurve>>& runs)
{
    for (QCPGraph* g : m_overlays)
        g->parentPlot()->removeGraph(g);
    m_overlays.clear();
    static const QColor palette[] = {QColor(0x5a, 0xa4, 0x69), QColor(0xc9, 0xa2, 0x27),
                                     QColor(0x8c, 0x6b, 0xb1), QColor(0x8c, 0x8c, 0x8c),
                                     QColor(0xe0, 0x7b, 0x39)};
    size_t shown = 0;
    for (const auto& [name, curve] : runs) {
        if (curve.empty())
            continue;
        QColor c = palette[shown++ % std::size(palette)];
        c.setAlpha(170);
        for (auto [plot, values] :
             {std::pair{m_margins, &curve.margins}, std::pair{m_accuracies, &curve.accuracies}}) {
            QCPGraph* g = makePlotGraph(plot, name, c);
            g->setPen(QPen(c, 1.2, Qt::DotLine));
            g->setData(curve.steps, *values, true);
            m_overlays.push_back(g);
        }
    }
}

bool PreferencePlots::hasPoints() const
{
    if (!m_overlays.empty())
        return true;
    for (const auto& [key, g] : m_graphs)
        if (g->dataCount() > 0)
            return true;
    return false;
}

std::vector<std::pair<double, double>> PreferencePlots::series(const QString& key) const
{
    std::vector<std::pair<double, double>> out;
    if (QCPGraph* g = graph(key))
        for (auto p = g->data()->constBegin(); p != g->data()->constEnd(); ++p)
            out.emplace_back(p->key, p->value);
    return out;
}

}  // namespace tb
