// ScoreChart: QCPBars in a QCPBarsGroup per system, QCPErrorBars from the intervals, a text ticker
// of the metrics.
#include "score_chart.h"

#include "metric_units.h"
#include "plot_style.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include <algorithm>

namespace tb {

namespace {

const QColor kSystemColors[] = {QColor(0x8c, 0x8c, 0x8c), QColor(0x34, 0x6d, 0xb3),
                                QColor(0xe0, 0x7b, 0x39), QColor(0x5a, 0xa4, 0x69),
                                QColor(0x8c, 0x6b, 0xb1), QColor(0xc9, 0xa2, 0x27)};

}  // namespace

ScoreChart::ScoreChart(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(200);
    m_plot->yAxis->setLabel(tr("score (0-100 metrics ÷ 100), 95% intervals"));
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    m_group = new QCPBarsGroup(m_plot);  // the plot owns it; bars leave it when deleted
    applyPlotPalette(m_plot, palette());
    layout->addWidget(m_plot);
}

void ScoreChart::setTable(const ScoreTable& table)
{
    m_plot->clearPlottables();
    m_bars.clear();
    m_errors.clear();
    m_ticks.clear();
    std::vector<size_t> shown;  // metric rows on the chart
    for (size_t m = 0; m < table.metrics.size(); ++m) {
        const MetricScale scale = metricScale(table.metrics[m]);
        if (scale == MetricScale::Tokens)
            continue;
        shown.push_back(m);
        const QString name = QString::fromStdString(table.metrics[m]);
        m_ticks << (scale == MetricScale::Percent ? tr("%1 ÷100").arg(name) : name);
    }
    QVector<double> ticks;
    for (qsizetype i = 0; i < m_ticks.size(); ++i)
        ticks << double(i + 1);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    ticker->setTicks(ticks, QVector<QString>(m_ticks.begin(), m_ticks.end()));
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setTickLabelRotation(m_ticks.size() > 6 ? 30 : 0);
    const int systems = int(table.systems.size());
    const double width = 0.8 / std::max(1, systems);
    double top = 1.0, bottom = 0.0;
    for (int s = 0; s < systems; ++s) {
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(table.systems[s]);
        const QColor color = kSystemColors[size_t(s) % std::size(kSystemColors)];
        bars->setPen(QPen(color.darker(130)));
        bars->setBrush(color);
        bars->setWidth(width);
        bars->setBarsGroup(m_group);
        QVector<double> values, minus, plus;
        for (size_t m : shown) {
            const ScoreCell& c = table.cells[m][size_t(s)];
            const double k = metricScale(table.metrics[m]) == MetricScale::Percent ? 0.01 : 1.0;
            values << c.score * k;
            minus << std::max(0.0, (c.score - c.lo) * k);
            plus << std::max(0.0, (c.hi - c.score) * k);
            top = std::max(top, c.hi * k);
            bottom = std::min(bottom, c.lo * k);
        }
        bars->setData(ticks, values, true);
        auto* errors = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);
        errors->removeFromLegend();
        errors->setDataPlottable(bars);
        errors->setData(minus, plus);
        errors->setPen(QPen(QColor(0x30, 0x30, 0x30), 1.2));
        m_bars.push_back(bars);
        m_errors.push_back(errors);
    }
    m_plot->xAxis->setRange(0.4, double(m_ticks.size()) + 0.6);
    m_plot->yAxis->setRange(bottom, top * 1.3);  // head room for the legend above the bars
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

std::vector<std::array<double, 3>> ScoreChart::barsOf(int system) const
{
    std::vector<std::array<double, 3>> out;
    if (system < 0 || size_t(system) >= m_bars.size())
        return out;
    const auto bars = m_bars[size_t(system)]->data();
    QCPErrorBars* errors = m_errors[size_t(system)];
    for (int i = 0; i < bars->size(); ++i) {
        const double v = bars->at(i)->value;
        const QCPErrorBarsData& e = errors->data()->at(i);
        out.push_back({v, v - e.errorMinus, v + e.errorPlus});
    }
    return out;
}

}  // namespace tb
