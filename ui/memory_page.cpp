// Memory page: controls -> EstimateOptions -> core's estimateMemory for each method -> stacked
// bars; the comparison tab, its stepper and the catalog list live in their own files.
#include "memory_page.h"

#include "catalog_chooser.h"
#include "memory_compare.h"
#include "memory_stepper.h"
#include "plot_style.h"

#include "studio_state.h"

#include "model/model.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cstdlib>
#include <exception>

namespace tb {

namespace {

QString bytesText(qint64 bytes)
{
    return QString::fromStdString(formatBytes(bytes));
}

}  // namespace

MemoryPage::MemoryPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
{
    auto* layout = new QHBoxLayout(this);
    m_baseFont = font();
    auto* controls = new QGroupBox(tr("Setup"), this);
    controls->setFixedWidth(340);
    m_controls = controls;
    buildControls(controls);
    layout->addWidget(controls);

    auto* right = new QVBoxLayout();
    layout->addLayout(right, 1);
    auto* top = new QHBoxLayout();
    m_catalog = new CatalogChooser(this);
    m_presentation = new QCheckBox(tr("Presentation mode"), this);
    m_presentation->setToolTip(tr("Large fonts for a projector"));
    top->addWidget(m_catalog, 1);
    top->addWidget(m_presentation);
    right->addLayout(top);
    connect(m_catalog, &CatalogChooser::modelChosen, this, &MemoryPage::modelRequested);
    connect(m_presentation, &QCheckBox::toggled, this, &MemoryPage::setPresentation);
    m_tabs = new QTabWidget(this);
    m_plot = new QCustomPlot(m_tabs);
    m_plot->setMinimumHeight(300);
    m_plot->yAxis->setLabel(tr("Memory per device"));
    m_plot->legend->setVisible(true);
    m_plot->legend->setFont(font());
    // The legend sits beside the plot, not over the bars (seven entries would hide the tallest
    // ones).
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->axisRect()->insetLayout()->simplify();
    auto* legendColumn = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(0, 1, legendColumn);
    legendColumn->addElement(0, 0, m_plot->legend);
    legendColumn->addElement(1, 0, new QCPLayoutElement(m_plot));  // pushes the legend to the top
    legendColumn->setRowStretchFactor(1, 10);
    m_plot->plotLayout()->setColumnStretchFactor(1, 0.001);
    applyPlotPalette(m_plot, palette());
    QCPBars* below = nullptr;
    for (int i = 0; i < kComponentCount; ++i) {
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(componentTitle(i));
        bars->setPen(QPen(componentColor(i).darker(130)));
        bars->setBrush(componentColor(i));
        bars->setWidth(0.6);
        if (below)
            bars->moveAbove(below);
        below = bars;
        m_bars.push_back(bars);
    }
    m_deviceLine = new QCPItemStraightLine(m_plot);
    m_deviceLine->setPen(QPen(QColor(0xc0, 0x39, 0x2b), 2, Qt::DashLine));
    m_deviceLabel = new QCPItemText(m_plot);
    m_deviceLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    m_deviceLabel->setColor(QColor(0xc0, 0x39, 0x2b));
    m_deviceLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
    // Generating with the same model needs this much: what training adds shows above it.
    m_inferenceLine = new QCPItemStraightLine(m_plot);
    m_inferenceLine->setPen(QPen(palette().color(QPalette::WindowText), 1.5, Qt::DotLine));
    m_inferenceLabel = new QCPItemText(m_plot);
    m_inferenceLabel->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    m_inferenceLabel->setColor(palette().color(QPalette::WindowText));
    m_tabs->addTab(m_plot, tr("This setup"));
    m_tabs->addTab(buildCompareTab(), tr("Compare methods"));
    right->addWidget(m_tabs, 3);

    auto* verdictBox = new QGroupBox(tr("Verdict"), this);
    auto* verdictLayout = new QVBoxLayout(verdictBox);
    m_verdict = new QLabel(verdictBox);
    m_verdict->setWordWrap(true);
    QFont bold = m_verdict->font();
    bold.setBold(true);
    m_verdict->setFont(bold);
    m_advice = new QLabel(verdictBox);
    m_advice->setWordWrap(true);
    m_advice->setTextFormat(Qt::RichText);
    verdictLayout->addWidget(m_verdict);
    verdictLayout->addWidget(m_advice);
    right->addWidget(verdictBox);

    m_table = new QTableWidget(0, 3, this);
    m_table->setHorizontalHeaderLabels({tr("Component"), tr("Bytes"), tr("Why")});
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);
    right->addWidget(m_table, 2);

    connect(m_state, &StudioState::configChanged, this, [this](QObject* origin) {
        if (origin !=
            this)  // our own change: the controls show it already (toState refreshed the estimate)
            fromState();
    });
    connect(m_state, &StudioState::modelChanged, this, [this] {
        m_catalog->showModel(m_state->modelPath());
        clearMeasured();
    });
    fromState();
}

QWidget* MemoryPage::buildCompareTab()
{
    auto* tab = new QWidget(m_tabs);
    auto* v = new QVBoxLayout(tab);
    m_stepper = new MemoryStepper(tab);
    m_compare = new ComparisonChart(tab);
    v->addWidget(m_stepper);
    v->addWidget(m_compare, 1);
    connect(m_stepper, &MemoryStepper::stageChanged, m_compare, &ComparisonChart::setStage);
    return tab;
}

void MemoryPage::setPresentation(bool on)
{
    if (m_presentation->isChecked() != on) {
        m_presentation->setChecked(on);  // toggled calls back
        return;
    }
    QFont f = m_baseFont;
    if (on)
        f.setPointSizeF(f.pointSizeF() * 1.8);
    setFont(f);  // every child without a font of its own: controls, tables, the comparison chart
    QFont bold = f;
    bold.setBold(true);
    m_verdict->setFont(bold);
    m_controls->setFixedWidth(on ? 560 : 340);
    m_table->setVisible(!on);  // the chart and the verdict get the room
    setPlotFont(m_plot, f);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool MemoryPage::presentation() const
{
    return m_presentation->isChecked();
}

QFont MemoryPage::chartFont() const
{
    return m_plot->yAxis->labelFont();
}

void MemoryPage::buildControls(QWidget* box)
{
    auto* form = new QFormLayout(box);
    auto slider = [box, form](const QString& label, int lo, int hi, QSlider** out, QLabel** value) {
        auto* row = new QWidget(box);
        auto* h = new QHBoxLayout(row);
        h->setContentsMargins(0, 0, 0, 0);
        *out = new QSlider(Qt::Horizontal, row);
        (*out)->setRange(lo, hi);
        *value = new QLabel(row);
        (*value)->setMinimumWidth(44);
        (*value)->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        h->addWidget(*out, 1);
        h->addWidget(*value);
        form->addRow(label, row);
    };
    // Batch and LoRA rank move in powers of two; sequence length in steps of 16 tokens up to 8192.
    slider(tr("Micro-batch:"), 0, 8, &m_batch, &m_batchValue);
    slider(tr("Sequence length:"), 1, 512, &m_seq, &m_seqValue);
    slider(tr("LoRA rank:"), 0, 8, &m_rank, &m_rankValue);
    m_precision = new QComboBox(box);
    m_precision->addItem(tr("fp32"), static_cast<int>(Precision::Fp32));
    m_precision->addItem(tr("bf16 mixed"), static_cast<int>(Precision::Bf16));
    m_precision->addItem(tr("fp16 mixed"), static_cast<int>(Precision::Fp16));
    form->addRow(tr("Precision:"), m_precision);
    // QLoRA: the frozen base weights held in 4 (or 8) bits; LoRA, adapters and prompts train on
    // top.
    m_quant = new QComboBox(box);
    m_quant->addItem(tr("none (load dtype)"), static_cast<int>(QuantKind::None));
    m_quant->addItem(tr("nf4 (QLoRA)"), static_cast<int>(QuantKind::Nf4));
    m_quant->addItem(tr("fp4"), static_cast<int>(QuantKind::Fp4));
    m_quant->addItem(tr("int8"), static_cast<int>(QuantKind::Int8));
    m_quant->setToolTip(tr("LoRA, adapters and prompt tuning only: full and partial fine-tuning "
                           "train the base weights, which stay unquantised"));
    form->addRow(tr("Frozen base:"), m_quant);
    m_doubleQuant = new QCheckBox(tr("Double quantisation"), box);
    m_doubleQuant->setToolTip(tr("4-bit formats: the per-block absmax values in 8 bits too"));
    form->addRow(QString(), m_doubleQuant);
    m_checkpointing = new QCheckBox(tr("Gradient checkpointing"), box);
    form->addRow(QString(), m_checkpointing);
    m_chunkedLoss = new QCheckBox(tr("Chunked loss (no full logits)"), box);
    form->addRow(QString(), m_chunkedLoss);
    m_gpus = new QSpinBox(box);
    m_gpus->setRange(1, 64);
    form->addRow(tr("GPUs:"), m_gpus);
    m_zero = new QComboBox(box);
    m_zero->addItem(tr("0 (replicated)"), 0);
    m_zero->addItem(tr("1 (optimizer states)"), 1);
    m_zero->addItem(tr("2 (+ gradients)"), 2);
    m_zero->addItem(tr("3 (+ weights)"), 3);
    form->addRow(tr("ZeRO stage:"), m_zero);
    m_device = new QComboBox(box);
    for (const auto& [name, bytes] : deviceMemoryPresets())
        m_device->addItem(name, bytes);
    // Without a GPU, this machine's memory (and no CUDA overhead) is the useful default.
    m_device->setCurrentIndex(cudaAvailable() ? m_device->findText(QStringLiteral("24 GB"))
                                              : m_device->count() - 1);
    form->addRow(tr("Device memory:"), m_device);

    auto toState = [this] {
        if (m_updating)
            return;
        m_state->updateConfig(
            [this](TrainConfig& c) {
                c.batchSize = 1 << m_batch->value();
                c.data.maxLength = 16 * m_seq->value();
                c.lora.rank = 1 << m_rank->value();
                c.precision = static_cast<Precision>(m_precision->currentData().toInt());
                c.gradientCheckpointing = m_checkpointing->isChecked();
                c.loss = m_chunkedLoss->isChecked() ? LossKind::Chunked : LossKind::Full;
                c.quant.kind = static_cast<QuantKind>(m_quant->currentData().toInt());
                c.quant.doubleQuant =
                    m_doubleQuant->isChecked() &&
                    (c.quant.kind == QuantKind::Nf4 || c.quant.kind == QuantKind::Fp4);
            },
            this);
        refresh();
    };
    for (QSlider* s : {m_batch, m_seq, m_rank})
        connect(s, &QSlider::valueChanged, this, toState);
    connect(m_precision, &QComboBox::currentIndexChanged, this, toState);
    connect(m_quant, &QComboBox::currentIndexChanged, this, toState);
    connect(m_doubleQuant, &QCheckBox::toggled, this, toState);
    connect(m_checkpointing, &QCheckBox::toggled, this, toState);
    connect(m_chunkedLoss, &QCheckBox::toggled, this, toState);
    connect(m_gpus, &QSpinBox::valueChanged, this, &MemoryPage::refresh);
    connect(m_zero, &QComboBox::currentIndexChanged, this, &MemoryPage::refresh);
    connect(m_device, &QComboBox::currentIndexChanged, this, &MemoryPage::refresh);
}

void MemoryPage::fromState()
{
    if (m_updating)
        return;
    m_updating = true;
    const TrainConfig& c = m_state->config();
    auto log2 = [](int v) {
        int n = 0;
        while ((1 << (n + 1)) <= v)
            ++n;
        return n;
    };
    m_batch->setValue(log2(c.batchSize));
    m_seq->setValue(std::max(1, c.data.maxLength / 16));
    m_rank->setValue(log2(c.lora.rank));
    m_precision->setCurrentIndex(std::max(0, m_precision->findData(static_cast<int>(c.precision))));
    m_checkpointing->setChecked(c.gradientCheckpointing);
    m_chunkedLoss->setChecked(c.loss == LossKind::Chunked);
    m_quant->setCurrentIndex(std::max(0, m_quant->findData(static_cast<int>(c.quant.kind))));
    m_doubleQuant->setChecked(c.quant.doubleQuant);
    m_updating = false;
    refresh();
}

void MemoryPage::setDeviceMemory(qint64 bytes)
{
    int index = m_device->findData(bytes);
    if (index < 0) {
        m_device->addItem(bytesText(bytes), bytes);
        index = m_device->count() - 1;
    }
    m_device->setCurrentIndex(index);
}

void MemoryPage::setGpus(int gpus, int zeroStage)
{
    m_gpus->setValue(gpus);
    m_zero->setCurrentIndex(zeroStage);
}

void MemoryPage::refresh()
{
    const TrainConfig& run = m_state->config();
    m_batchValue->setText(QString::number(run.batchSize));
    m_seqValue->setText(QString::number(run.data.maxLength));
    m_rankValue->setText(QString::number(run.lora.rank));
    m_rank->setEnabled(run.method == Method::Lora);
    m_doubleQuant->setEnabled(run.quant.kind == QuantKind::Nf4 || run.quant.kind == QuantKind::Fp4);

    m_options = estimateOptionsFor(run, run.data.maxLength);
    m_options.gpus = m_gpus->value();
    m_options.zero = m_zero->currentData().toInt();
    const qint64 device = m_device->currentData().toLongLong();
    const bool thisMachine = m_device->currentIndex() == m_device->count() - 1 && device > 0 &&
                             m_device->currentText().startsWith(tr("This machine"));
    m_options.cudaOverhead = !(thisMachine && !cudaAvailable());
    if (device > 0)
        m_options.deviceMemory = device;
    else
        m_options.deviceMemory.reset();

    m_estimate.reset();
    std::vector<std::pair<QString, std::vector<double>>> columns;
    QString error;
    const auto& model = m_state->modelConfig();
    if (model) {
        try {
            m_estimate = estimateMemory(*model, run, m_options);
            columns.emplace_back(tr("%1\n(chosen)").arg(methodLabel(run.method, run.quant)),
                                 componentBytes(*m_estimate));
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        EstimateOptions quick = m_options;
        quick.advise = false;
        m_sftTotal.reset();
        if (run.objective != Objective::Sft) {
            // The same setup trained with SFT, beside it: what the objective itself costs.
            TrainConfig sft = run;
            sft.objective = Objective::Sft;
            EstimateOptions o = quick;
            o.objective = "sft";
            o.reference = "none";
            try {
                const MemoryEstimate e = estimateMemory(*model, sft, o);
                m_sftTotal = e.total;
                columns.emplace_back(tr("%1\nSFT").arg(methodLabel(run.method)), componentBytes(e));
            } catch (const std::exception&) {
            }
        }
        // Every other method beside it, QLoRA (LoRA on an NF4 base, double-quantised) included:
        // full, partial and plain LoRA on the unquantised base, adapters and prompts on the run's.
        const QuantOptions nf4{QuantKind::Nf4, true, false};
        const std::pair<Method, std::optional<QuantOptions>> others[] = {
            {Method::Full, QuantOptions{}}, {Method::Partial, QuantOptions{}},
            {Method::Lora, QuantOptions{}}, {Method::Adapter, std::nullopt},
            {Method::Prompt, std::nullopt}, {Method::Lora, nf4}};
        for (const auto& [m, quant] : others) {
            TrainConfig other = run;
            other.method = m;
            other.quant = quant.value_or(run.quant);
            if (m == run.method && (m != Method::Lora || other.quant.kind == run.quant.kind))
                continue;  // the chosen setup
            const QString label =
                other.quant == nf4 && m == Method::Lora ? tr("QLoRA\nnf4") : methodLabel(m);
            try {
                columns.emplace_back(label, componentBytes(estimateMemory(*model, other, quick)));
            } catch (const std::exception&) {
                columns.emplace_back(tr("%1\n(n/a)").arg(methodLabel(m, other.quant)),
                                     std::vector<double>(kComponentCount, 0.0));
            }
        }
        m_compare->setBars(compareSetups(*model, run, m_options), device, m_device->currentText());
        if (m_measured) {
            std::vector<double> estimated(kComponentCount, 0.0), measured(kComponentCount, 0.0);
            for (const auto& item : m_measured->items)
                for (int i = 0; i < kComponentCount; ++i)
                    if (item.key == componentKey(i)) {
                        estimated[i] = double(item.estimated);
                        measured[i] = double(item.measured);
                    }
            columns.emplace_back(tr("Run\nestimated"), estimated);
            columns.emplace_back(tr("Run\nmeasured"), measured);
        }
    }
    if (!model)
        m_compare->setBars({}, device, m_device->currentText());
    drawChart(columns, double(device), m_estimate ? double(m_estimate->inference) : 0.0);

    // Verdict, advice and the itemised table come straight from core's estimate.
    m_table->setRowCount(0);
    if (!m_estimate) {
        m_verdict->setText(model ? tr("No estimate: %1").arg(error)
                                 : tr("Open a model to estimate its memory."));
        m_advice->clear();
        return;
    }
    const MemoryEstimate& e = *m_estimate;
    m_verdict->setText(verdictText());
    m_verdict->setStyleSheet(!e.fits   ? QString()
                             : *e.fits ? QStringLiteral("color: #27ae60;")
                                       : QStringLiteral("color: #c0392b;"));
    QString advice;
    for (const QString& a : adviceShown())
        advice += QStringLiteral("<li>%1</li>").arg(a.toHtmlEscaped());
    m_advice->setText(advice.isEmpty() ? QString() : tr("What would fit:<ul>%1</ul>").arg(advice));
    m_advice->setVisible(!advice.isEmpty());
    auto addRow = [this](const QString& name, qint64 bytes, const QString& why,
                         const QString& formula) {
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        m_table->setItem(row, 0, new QTableWidgetItem(name));
        auto* b = new QTableWidgetItem(bytesText(bytes));
        b->setData(Qt::UserRole, bytes);
        b->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(row, 1, b);
        auto* w = new QTableWidgetItem(why);
        w->setToolTip(formula);
        m_table->setItem(row, 2, w);
    };
    for (const MemoryItem& item : e.items) {
        QString title = QString::fromStdString(item.key);
        for (int i = 0; i < kComponentCount; ++i)
            if (item.key == componentKey(i))
                title = componentTitle(i);
        addRow(title, item.bytes, QString::fromStdString(item.explanation),
               QString::fromStdString(item.formula));
    }
    addRow(tr("Total (peak: %1)").arg(QString::fromStdString(e.peakPhase)), e.total,
           tr("%1 parameters, %2 trainable")
               .arg(QString::fromStdString(groupDigits(e.parameters)),
                    QString::fromStdString(groupDigits(e.trainableParameters))),
           QString());
    addRow(tr("For comparison: inference"), e.inference,
           tr("Generating with the same model at the same batch and sequence length; training "
              "needs %1× that "
              "(gradients, optimizer states and saved activations are training's own).")
               .arg(double(e.total) / double(std::max<qint64>(e.inference, 1)), 0, 'f', 1),
           QString::fromStdString(e.inferenceFormula));
}

QString MemoryPage::verdictText() const
{
    if (!m_estimate)
        return {};
    const MemoryEstimate& e = *m_estimate;
    const QString total = bytesText(e.total);
    const QString inference =
        tr(" Inference with the same model: %1 (training needs %2×).")
            .arg(bytesText(e.inference))
            .arg(double(e.total) / double(std::max<qint64>(e.inference, 1)), 0, 'f', 1);
    QString objective;
    if (m_sftTotal) {
        const qint64 delta = e.total - *m_sftTotal;
        objective =
            tr(" %1 %2 vs SFT.")
                .arg(QString::fromLatin1(objectiveName(m_state->config().objective)).toUpper(),
                     (delta < 0 ? QStringLiteral("−") : QStringLiteral("+")) +
                         bytesText(std::abs(delta)));
    }
    if (!e.fits)
        return tr("Estimated peak: %1 per device.").arg(total) + objective + inference;
    const QString device = bytesText(*m_options.deviceMemory);
    return (*e.fits ? tr("Fits: %1 of %2 per device.").arg(total, device)
                    : tr("Does not fit: %1 needed, %2 per device.").arg(total, device)) +
           objective + inference;
}

QStringList MemoryPage::adviceShown() const
{
    QStringList out;
    if (m_estimate)
        for (const std::string& a : m_estimate->advice)
            out << QString::fromStdString(a);
    return out;
}

double MemoryPage::barBytes(const QString& key, int column) const
{
    for (int i = 0; i < kComponentCount; ++i) {
        if (key != QLatin1String(componentKey(i)))
            continue;
        auto it = m_bars[i]->data()->findBegin(column, false);
        if (it == m_bars[i]->data()->constEnd() || it->key != column)
            return 0;
        return it->value * m_scale;
    }
    return 0;
}

void MemoryPage::drawChart(const std::vector<std::pair<QString, std::vector<double>>>& columns,
                           double deviceBytes, double inferenceBytes)
{
    double peak = 0;
    for (const auto& [name, values] : columns) {
        double sum = 0;
        for (double v : values)
            sum += v;
        peak = std::max(peak, sum);
    }
    // One unit for the axis: the largest power of 1024 below the tallest bar.
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    m_scale = 1;
    while (unit < 4 && peak / m_scale >= 1024) {
        m_scale *= 1024;
        ++unit;
    }
    m_plot->yAxis->setLabel(tr("Memory per device (%1)").arg(QLatin1String(units[unit])));
    m_categories.clear();
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int i = 0; i < kComponentCount; ++i) {
        QVector<double> keys, values;
        for (size_t c = 0; c < columns.size(); ++c) {
            keys << double(c);
            values << columns[c].second[i] / m_scale;
        }
        m_bars[i]->setData(keys, values, true);
    }
    // The objective's own items show in the legend only when some column has them.
    bool others = false;
    for (const auto& column : columns)
        others = others || column.second[kComponentCount - 1] > 0;
    if (others)
        m_bars[kComponentCount - 1]->addToLegend();
    else
        m_bars[kComponentCount - 1]->removeFromLegend();
    for (size_t c = 0; c < columns.size(); ++c) {
        ticker->addTick(double(c), columns[c].first);
        m_categories << columns[c].first;
    }
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setRange(-0.6, std::max<double>(1, double(columns.size())) - 0.4);
    m_plot->xAxis->grid()->setVisible(false);
    double top = std::max(peak, 1.0) / m_scale * 1.15;
    const bool lineShown = deviceBytes > 0 && deviceBytes / m_scale <= top * 1.6;
    if (lineShown)
        top = std::max(top, deviceBytes / m_scale * 1.1);
    m_plot->yAxis->setRange(0, top);
    const bool inferenceShown = inferenceBytes > 0 && inferenceBytes / m_scale <= top;
    m_inferenceLine->setVisible(inferenceShown);
    m_inferenceLabel->setVisible(inferenceShown);
    if (inferenceShown) {
        const double y = inferenceBytes / m_scale;
        m_inferenceLine->point1->setCoords(-1, y);
        m_inferenceLine->point2->setCoords(1, y);
        m_inferenceLabel->position->setType(QCPItemPosition::ptPlotCoords);
        m_inferenceLabel->position->setCoords(double(columns.size()) - 0.45, y);
        m_inferenceLabel->setText(tr("inference: %1").arg(bytesText(qint64(inferenceBytes))));
    }
    m_deviceLine->setVisible(lineShown);
    m_deviceLabel->setVisible(deviceBytes > 0);
    if (deviceBytes > 0) {
        const QString name = m_device->currentText();
        if (lineShown) {
            m_deviceLine->point1->setCoords(-1, deviceBytes / m_scale);
            m_deviceLine->point2->setCoords(1, deviceBytes / m_scale);
            m_deviceLabel->position->setType(QCPItemPosition::ptPlotCoords);
            m_deviceLabel->position->setCoords(-0.55, deviceBytes / m_scale);
            m_deviceLabel->setText(tr("device: %1").arg(name));
        } else {
            m_deviceLabel->position->setType(QCPItemPosition::ptAxisRectRatio);
            m_deviceLabel->position->setCoords(0.01, 0.08);
            m_deviceLabel->setText(tr("device: %1 (far above this scale)").arg(name));
        }
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryPage::showMeasured(const MemoryReport& report)
{
    m_measured = report;
    refresh();
}

void MemoryPage::clearMeasured()
{
    m_measured.reset();
    refresh();
}

}  // namespace tb
