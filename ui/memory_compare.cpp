// Comparison view: seven setups -> core's estimateMemory each -> five stacked components per bar,
// drawn with QCustomPlot and exported through savePng and QSvgGenerator.
#include "memory_compare.h"

#include "memory_items.h"
#include "plot_style.h"

#include <qcustomplot.h>

#include <QCoreApplication>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QPushButton>
#include <QSvgGenerator>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

const char* const kTitles[kTeachingComponents] = {
    QT_TRANSLATE_NOOP("tb::ComparisonChart", "Weights"),
    QT_TRANSLATE_NOOP("tb::ComparisonChart", "Gradients"),
    QT_TRANSLATE_NOOP("tb::ComparisonChart", "Optimizer states"),
    QT_TRANSLATE_NOOP("tb::ComparisonChart", "Activations + logits"),
    QT_TRANSLATE_NOOP("tb::ComparisonChart", "Overhead")};
// The Memory page's colours for the same components (memory_items.h: weights, gradients,
// optimizer states, activations, overhead).
const int kColorOf[kTeachingComponents] = {0, 1, 2, 4, 6};

QString bytesText(qint64 bytes)
{
    return QString::fromStdString(formatBytes(bytes));
}

}  // namespace

QString teachingComponentTitle(int component)
{
    return QCoreApplication::translate("tb::ComparisonChart", kTitles[component]);
}

int teachingComponentOf(const std::string& key)
{
    if (key == "gradients")
        return int(TeachingComponent::Gradients);
    if (key == "optimizer_states" || key == "master_weights")
        return int(TeachingComponent::OptimizerStates);
    if (key == "activations" || key == "logits" || key == "logprobs")
        return int(TeachingComponent::Activations);
    if (key == "overhead")
        return int(TeachingComponent::Overhead);
    return int(TeachingComponent::Weights);  // weights, a reference copy, a reward head
}

std::vector<ComparisonSetup> comparisonSetups(const TrainConfig& run)
{
    // bf16 and fp16 are Tunebench's mixed precisions: fp32 weights, autocast compute.
    const QString own = QString::fromLatin1(precisionName(run.precision));
    auto setup = [&run](const QString& key, const QString& label, Method method,
                        Precision precision, QuantKind quant) {
        ComparisonSetup s{key, label, run};
        s.run.method = method;
        s.run.precision = precision;
        s.run.quant = QuantOptions{};
        s.run.quant.kind = quant;
        s.run.quant.doubleQuant = quant != QuantKind::None;
        return s;
    };
    return {
        setup(QStringLiteral("full-fp32"), QObject::tr("Full\nfp32"), Method::Full, Precision::Fp32,
              QuantKind::None),
        setup(QStringLiteral("full-bf16"), QObject::tr("Full\nbf16"), Method::Full, Precision::Bf16,
              QuantKind::None),
        setup(QStringLiteral("partial"), QObject::tr("Partial\n%1").arg(own), Method::Partial,
              run.precision, QuantKind::None),
        setup(QStringLiteral("lora-bf16"), QObject::tr("LoRA\nbf16"), Method::Lora, Precision::Bf16,
              QuantKind::None),
        setup(QStringLiteral("qlora-nf4"), QObject::tr("QLoRA\nnf4"), Method::Lora, Precision::Bf16,
              QuantKind::Nf4),
        setup(QStringLiteral("adapter"), QObject::tr("Adapter\n%1").arg(own), Method::Adapter,
              run.precision, QuantKind::None),
        setup(QStringLiteral("prompt"), QObject::tr("Prompt\n%1").arg(own), Method::Prompt,
              run.precision, QuantKind::None),
    };
}

std::vector<ComparisonBar> compareSetups(const ModelConfig& model, const TrainConfig& run,
                                         const EstimateOptions& base)
{
    std::vector<ComparisonBar> bars;
    for (const ComparisonSetup& s : comparisonSetups(run)) {
        ComparisonBar bar{s.key, s.label, {}, 0, {}};
        EstimateOptions o = estimateOptionsFor(s.run, s.run.data.maxLength);
        o.gpus = base.gpus;
        o.zero = base.zero;
        o.deviceMemory = base.deviceMemory;
        o.cudaOverhead = base.cudaOverhead;
        o.advise = false;
        try {
            const MemoryEstimate e = estimateMemory(model, s.run, o);
            for (const MemoryItem& item : e.items)
                bar.bytes[size_t(teachingComponentOf(item.key))] += item.bytes;
            bar.total = e.total;
        } catch (const std::exception& e) {
            bar.error = QString::fromUtf8(e.what());
        }
        bars.push_back(bar);
    }
    return bars;
}

ComparisonChart::ComparisonChart(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(300);
    // The legend in a row of its own above the bars, so it never hides one.
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->axisRect()->insetLayout()->simplify();
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setWrap(0);
    applyPlotPalette(m_plot, palette());
    QCPBars* below = nullptr;
    for (int i = 0; i < kTeachingComponents; ++i) {
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(teachingComponentTitle(i));
        const QColor color = componentColor(kColorOf[i]);
        bars->setPen(QPen(color.darker(130)));
        bars->setBrush(color);
        bars->setWidth(0.62);
        if (below)
            bars->moveAbove(below);
        below = bars;
        m_layers.push_back(bars);
    }
    m_deviceLine = new QCPItemStraightLine(m_plot);
    m_deviceLine->setPen(QPen(QColor(0xc0, 0x39, 0x2b), 2, Qt::DashLine));
    m_deviceLabel = new QCPItemText(m_plot);
    m_deviceLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_deviceLabel->setColor(QColor(0xc0, 0x39, 0x2b));
    QColor veil = palette().color(QPalette::Base);
    veil.setAlpha(200);
    m_deviceLabel->setBrush(veil);
    m_plot->xAxis->grid()->setVisible(false);
    layout->addWidget(m_plot, 1);

    auto* buttons = new QHBoxLayout();
    buttons->addStretch(1);
    auto* png = new QPushButton(tr("Export PNG…"), this);
    auto* svg = new QPushButton(tr("Export SVG…"), this);
    png->setObjectName(QStringLiteral("exportPng"));
    svg->setObjectName(QStringLiteral("exportSvg"));
    buttons->addWidget(png);
    buttons->addWidget(svg);
    layout->addLayout(buttons);
    connect(png, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getSaveFileName(
            this, tr("Export chart"), QStringLiteral("memory.png"), tr("PNG images (*.png)"));
        if (!file.isEmpty())
            exportPng(file);
    });
    connect(svg, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getSaveFileName(
            this, tr("Export chart"), QStringLiteral("memory.svg"), tr("SVG images (*.svg)"));
        if (!file.isEmpty())
            exportSvg(file);
    });
    setPlotFont(m_plot, font());
}

void ComparisonChart::setBars(const std::vector<ComparisonBar>& bars, qint64 deviceBytes,
                              const QString& deviceName)
{
    m_bars = bars;
    m_device = deviceBytes;
    m_deviceName = deviceName;
    redraw();
}

void ComparisonChart::setStage(int stage)
{
    m_stage = std::clamp(stage, 0, kTeachingComponents);
    redraw();
}

void ComparisonChart::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        setPlotFont(m_plot, font());
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

double ComparisonChart::drawnBytes(int bar, int component) const
{
    const auto data = m_layers[size_t(component)]->data();
    auto it = data->findBegin(bar, false);
    if (it == data->constEnd() || it->key != bar)
        return 0;
    return it->value * m_scale;
}

int ComparisonChart::segmentsDrawn() const
{
    int n = 0;
    for (QCPBars* bars : m_layers)
        n += bars->data()->size();
    return n;
}

bool ComparisonChart::deviceLineShown() const
{
    return m_deviceLine->visible();
}

QFont ComparisonChart::textFont() const
{
    return m_plot->xAxis->tickLabelFont();
}

void ComparisonChart::redraw()
{
    const int shown = m_stage == 0 ? kTeachingComponents : m_stage;
    double peak = 0;
    for (const ComparisonBar& b : m_bars) {
        double sum = 0;
        for (qint64 v : b.bytes)
            sum += double(v);
        peak = std::max(peak, sum);  // the scale stays put while the stepper adds components
    }
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    m_scale = 1;
    while (unit < 4 && peak / m_scale >= 1024) {
        m_scale *= 1024;
        ++unit;
    }
    m_plot->yAxis->setLabel(tr("Memory per device (%1)").arg(QLatin1String(units[unit])));
    for (int i = 0; i < kTeachingComponents; ++i) {
        QVector<double> keys, values;
        for (size_t c = 0; c < m_bars.size() && i < shown; ++c)
            if (m_bars[c].bytes[size_t(i)] > 0) {
                keys << double(c);
                values << double(m_bars[c].bytes[size_t(i)]) / m_scale;
            }
        m_layers[size_t(i)]->setData(keys, values, true);
        m_layers[size_t(i)]->setVisible(i < shown);
        if (i < shown)
            m_layers[size_t(i)]->addToLegend();
        else
            m_layers[size_t(i)]->removeFromLegend();
    }
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (QCPItemText* t : m_totals)
        m_plot->removeItem(t);
    m_totals.clear();
    const double top = std::max(peak, 1.0) / m_scale * 1.18;
    for (size_t c = 0; c < m_bars.size(); ++c) {
        const ComparisonBar& b = m_bars[c];
        ticker->addTick(double(c), b.label);
        double height = 0;
        for (int i = 0; i < shown; ++i)
            height += double(b.bytes[size_t(i)]) / m_scale;
        // Above each bar: what is stacked so far, or core's peak (red: above the device) once
        // every component shows.
        auto* text = new QCPItemText(m_plot);
        text->position->setCoords(double(c), height + top * 0.01);
        text->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        text->setText(!b.error.isEmpty() ? tr("n/a")
                      : m_stage == 0     ? bytesText(b.total)
                                         : bytesText(qint64(height * m_scale)));
        const bool fits = m_device <= 0 || b.total <= m_device;
        text->setColor(fits || m_stage != 0 ? palette().color(QPalette::Text)
                                            : QColor(0xc0, 0x39, 0x2b));
        m_totals.push_back(text);
    }
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setRange(-0.6, std::max<double>(1, double(m_bars.size())) - 0.4);
    double range = top;
    const bool lineShown = m_device > 0 && double(m_device) / m_scale <= top * 1.6;
    if (lineShown)
        range = std::max(range, double(m_device) / m_scale * 1.1);
    m_plot->yAxis->setRange(0, range);
    m_deviceLine->setVisible(lineShown);
    m_deviceLabel->setVisible(lineShown);
    if (lineShown) {
        const double y = double(m_device) / m_scale;
        m_deviceLine->point1->setCoords(-1, y);
        m_deviceLine->point2->setCoords(1, y);
        m_deviceLabel->position->setCoords(-0.55, y);
        m_deviceLabel->setText(tr("device: %1").arg(m_deviceName));
    }
    setPlotFont(m_plot, font());  // the new text items too
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool ComparisonChart::exportPng(const QString& path, int width, int height)
{
    m_plot->replot();
    return m_plot->savePng(path, width, height);
}

bool ComparisonChart::exportSvg(const QString& path, int width, int height)
{
    m_plot->replot();
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(QSize(width, height));
    svg.setViewBox(QRect(0, 0, width, height));
    svg.setTitle(tr("Memory per device by method"));
    QCPPainter painter;
    if (!painter.begin(&svg))
        return false;
    m_plot->toPainter(&painter, width, height);
    return painter.end();
}

}  // namespace tb
