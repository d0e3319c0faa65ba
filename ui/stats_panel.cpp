// Statistics tab of the Data page: core's token statistics as a QCustomPlot histogram with the
// cutoff.
#include "data_jobs.h"
#include "data_panels.h"
#include "plot_style.h"

#include "data/store/store.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace tb {

StatsPanel::StatsPanel(DataContext context, QWidget* parent)
    : QWidget(parent), m_ctx(std::move(context))
{
    auto* layout = new QVBoxLayout(this);
    auto* row = new QHBoxLayout();
    m_maxLength = new QSpinBox(this);
    m_maxLength->setRange(1, 1 << 20);
    m_maxLength->setValue(256);
    m_maxLength->setSuffix(tr(" tokens"));
    m_maxLength->setToolTip(
        tr("The run's maximum sequence length: longer examples are truncated in training"));
    auto* compute = new QPushButton(tr("Count tokens"), this);
    compute->setToolTip(
        tr("Tokenizes every record's training text with the model's tokenizer and chat template "
           "(counts are stored and reused)"));
    row->addWidget(new QLabel(tr("Max length"), this));
    row->addWidget(m_maxLength);
    row->addStretch(1);
    row->addWidget(compute);
    layout->addLayout(row);
    m_summary = new QLabel(tr("Count tokens to see the length distribution."), this);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_truncated = new QLabel(this);
    QFont bold = m_truncated->font();
    bold.setBold(true);
    m_truncated->setFont(bold);
    layout->addWidget(m_truncated);

    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(220);
    m_plot->xAxis->setLabel(tr("tokens per example"));
    m_plot->yAxis->setLabel(tr("records"));
    applyPlotPalette(m_plot, palette());
    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setPen(QPen(QColor(0x2c, 0x6f, 0xbb).darker(120)));
    m_bars->setBrush(QColor(0x2c, 0x6f, 0xbb, 170));
    m_cutoff = new QCPItemStraightLine(m_plot);
    m_cutoff->setPen(QPen(QColor(0xc0, 0x39, 0x2b), 2, Qt::DashLine));
    m_cutoff->setVisible(false);
    m_cutoffLabel = new QCPItemText(m_plot);
    m_cutoffLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_cutoffLabel->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_cutoffLabel->setColor(QColor(0xc0, 0x39, 0x2b));
    m_cutoffLabel->setPadding(QMargins(4, 2, 4, 2));
    m_cutoffLabel->setVisible(false);
    layout->addWidget(m_plot, 1);

    connect(compute, &QPushButton::clicked, this, &StatsPanel::compute);
    // A new max length counts the truncated records again from the report's lengths, on the
    // spot; another model or template, or records changed since the report, counts the store
    // again on the worker (while a job holds the store, changed records' old lengths stand in).
    auto* debounce = new QTimer(this);
    debounce->setSingleShot(true);
    debounce->setInterval(400);
    connect(debounce, &QTimer::timeout, this, [this] {
        if (!m_report)
            return;
        const QString tmpl = m_ctx.chatTemplate ? m_ctx.chatTemplate() : QStringLiteral("auto");
        const bool sameCount = m_ctx.modelDir() == m_reportModel && tmpl == m_reportTemplate;
        if ((m_stale || !sameCount) && this->compute())
            return;
        if (!sameCount)
            return;  // another tokenizer's lengths say nothing; the next count will
        m_report->maxLength = m_maxLength->value();
        m_report->truncated = m_report->lengths.countOver(m_report->maxLength);
        showReport();
    });
    connect(m_maxLength, &QSpinBox::valueChanged, this, [this, debounce](int v) {
        Q_EMIT maxLengthChanged(v);
        debounce->start();
    });
}

void StatsPanel::markStale()
{
    if (m_report && !m_settling)
        m_stale = true;
}

void StatsPanel::clear()
{
    m_report.reset();
    m_stale = false;
    m_summary->setText(tr("Count tokens to see the length distribution."));
    m_truncated->clear();
    m_bars->data()->clear();
    m_cutoff->setVisible(false);
    m_cutoffLabel->setVisible(false);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void StatsPanel::setMaxLength(int tokens)
{
    if (tokens != m_maxLength->value())
        m_maxLength->setValue(tokens);
}

int StatsPanel::maxLength() const
{
    return m_maxLength->value();
}

bool StatsPanel::compute()
{
    const QString model = m_ctx.modelDir();
    const QString tmpl = m_ctx.chatTemplate ? m_ctx.chatTemplate() : QStringLiteral("auto");
    const std::string modelDir = model.toStdString();
    const int64_t maxLength = m_maxLength->value();
    const std::string chatTemplate = tmpl.toStdString();
    return m_ctx.jobs->run(
        tr("Token statistics"),
        [this, modelDir, maxLength, chatTemplate, model,
         tmpl](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            TokenStatsReport r = tokenStats(store, modelDir, maxLength, chatTemplate, 20, progress);
            return [this, r = std::move(r), model, tmpl] {
                m_report = r;
                m_reportModel = model;
                m_reportTemplate = tmpl;
                m_stale = false;
                // The page refreshes after every job, this one included: not a change.
                m_settling = true;
                QTimer::singleShot(0, this, [this] { m_settling = false; });
                showReport();
                if (r.counted > 0)
                    m_ctx.changed();  // the table's token column
            };
        });
}

void StatsPanel::showReport()
{
    const TokenStatsReport& r = *m_report;
    const LengthStats& t = r.tokens;
    m_summary->setText(
        tr("%1 records, template %2: min %3, median %4, p95 %5, max %6, mean %7 tokens.")
            .arg(r.records)
            .arg(QString::fromStdString(r.chatTemplate))
            .arg(t.min)
            .arg(t.median)
            .arg(t.p95)
            .arg(t.max)
            .arg(t.mean, 0, 'f', 1));
    const QString truncated =
        r.truncated == 0
            ? tr("No record is longer than %1 tokens.").arg(r.maxLength)
            : tr("%1 of %2 records (%3%) are longer than %4 tokens and will be truncated.")
                  .arg(r.truncated)
                  .arg(r.records)
                  .arg(100.0 * double(r.truncated) / double(std::max<int64_t>(r.records, 1)), 0,
                       'f', 1)
                  .arg(r.maxLength);
    m_truncated->setText(truncated);
    m_truncated->setStyleSheet(r.truncated > 0 ? QStringLiteral("color:#c0392b") : QString());

    QVector<double> keys, values;
    double width = 1, top = 0, left = 0, right = 1;
    const auto it = r.histograms.find("total");
    if (it != r.histograms.end() && !it->second.counts.empty()) {
        const Histogram& h = it->second;
        width = double(h.edges[1] - h.edges[0]);
        for (size_t i = 0; i < h.counts.size(); ++i) {
            keys << double(h.edges[i]) + width / 2;
            values << double(h.counts[i]);
            top = std::max(top, double(h.counts[i]));
        }
        left = double(h.edges.front());
        right = double(h.edges.back());
    }
    m_bars->setWidth(width * 0.9);
    m_bars->setData(keys, values, true);
    const double cutoff = double(r.maxLength);
    m_cutoff->point1->setCoords(cutoff, 0);
    m_cutoff->point2->setCoords(cutoff, 1);
    m_cutoff->setVisible(true);
    m_cutoffLabel->position->setCoords(cutoff, 0.02);
    // The label sits inside the plot: right of the line, or left of it near the right edge.
    const double lo = std::min(left, cutoff) - width, hi = std::max(right, cutoff) + width;
    m_cutoffLabel->setPositionAlignment((cutoff > (lo + hi) / 2 ? Qt::AlignRight : Qt::AlignLeft) |
                                        Qt::AlignTop);
    m_cutoffLabel->setText(tr("max length %1\n%2 truncated").arg(r.maxLength).arg(r.truncated));
    m_cutoffLabel->setVisible(true);
    // Keep the cutoff in view even when every record is far shorter (or longer).
    m_plot->xAxis->setRange(std::max(0.0, lo), hi);
    m_plot->yAxis->setRange(0, std::max(1.0, top * 1.15));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

std::optional<double> StatsPanel::cutoffLineAt() const
{
    if (!m_cutoff->visible())
        return std::nullopt;
    return m_cutoff->point1->coords().x();
}

int StatsPanel::histogramBins() const
{
    return m_bars->data()->size();
}

QString StatsPanel::truncatedText() const
{
    return m_truncated->text();
}

}  // namespace tb
