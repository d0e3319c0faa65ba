// Method page: a radio button per method, a stacked options box, and core's trainable counts.
#include "method_page.h"

#include "objective_panel.h"
#include "studio_state.h"

#include "memory/estimator.h"
#include "peft/trainable_count.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <exception>

namespace tb {

namespace {

const Method kMethods[] = {Method::Full, Method::Partial, Method::Lora, Method::Adapter,
                           Method::Prompt};

QString methodTitle(Method m)
{
    switch (m) {
    case Method::Full:
        return QObject::tr("Full fine-tuning");
    case Method::Partial:
        return QObject::tr("Partial (last blocks)");
    case Method::Lora:
        return QObject::tr("LoRA");
    case Method::Adapter:
        return QObject::tr("Bottleneck adapters");
    case Method::Prompt:
        return QObject::tr("Prompt tuning");
    }
    return {};
}

QString methodBlurb(Method m)
{
    switch (m) {
    case Method::Full:
        return QObject::tr(
            "Every weight trains. Needs gradients and optimizer states for the whole model.");
    case Method::Partial:
        return QObject::tr("Only the last transformer blocks (and optionally embeddings, head, "
                           "norms) train; the rest is frozen.");
    case Method::Lora:
        return QObject::tr("Frozen weights plus low-rank updates B·A on the chosen linear layers; "
                           "scaled by alpha / rank.");
    case Method::Adapter:
        return QObject::tr(
            "Small bottleneck MLPs inserted after attention and/or the MLP of every block.");
    case Method::Prompt:
        return QObject::tr("A few trainable virtual token embeddings prepended to every input; the "
                           "model is frozen.");
    }
    return {};
}

QString formatCount(qint64 n)
{
    return QString::fromStdString(groupDigits(n));
}

}  // namespace

void MethodComparisonModel::setRows(std::vector<Row> rows)
{
    if (rows.size() == m_rows.size()) {
        m_rows = std::move(rows);
        if (!m_rows.empty())
            Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
        return;
    }
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

int MethodComparisonModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int MethodComparisonModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : 3;
}

QVariant MethodComparisonModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const Row& r = m_rows[index.row()];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case 0:
            return r.chosen ? tr("%1 (chosen)").arg(r.method) : r.method;
        case 1:
            return r.trainable < 0 ? tr("n/a") : formatCount(r.trainable);
        case 2:
            return r.trainable < 0 ? QString() : QStringLiteral("%1 %").arg(r.percent, 0, 'g', 3);
        }
    } else if (role == Qt::ToolTipRole) {
        return r.error.isEmpty() ? QVariant() : QVariant(r.error);
    } else if (role == Qt::TextAlignmentRole) {
        return QVariant::fromValue(index.column() == 0 ? Qt::AlignLeft | Qt::AlignVCenter
                                                       : Qt::AlignRight | Qt::AlignVCenter);
    } else if (role == Qt::FontRole && r.chosen) {
        QFont f;
        f.setBold(true);
        return f;
    }
    return {};
}

QVariant MethodComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case 0:
        return tr("Method");
    case 1:
        return tr("Trainable parameters");
    case 2:
        return tr("Share of model");
    }
    return {};
}

MethodPage::MethodPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
{
    auto* layout = new QHBoxLayout(this);
    auto* left = new QVBoxLayout();
    layout->addLayout(left, 1);

    auto* objectiveBox = new QGroupBox(tr("Objective"), this);
    auto* objectiveLayout = new QVBoxLayout(objectiveBox);
    m_objective = new ObjectivePanel(m_state, objectiveBox);
    objectiveLayout->addWidget(m_objective);
    left->addWidget(objectiveBox);

    auto* methodBox = new QGroupBox(tr("Method"), this);
    auto* methodLayout = new QVBoxLayout(methodBox);
    m_methods = new QButtonGroup(this);
    for (Method m : kMethods) {
        auto* radio = new QRadioButton(methodTitle(m), methodBox);
        radio->setObjectName(QString::fromLatin1(methodName(m)));
        radio->setToolTip(methodBlurb(m));
        m_methods->addButton(radio, static_cast<int>(m));
        methodLayout->addWidget(radio);
    }
    left->addWidget(methodBox);

    auto* optionsBox = new QGroupBox(tr("Options"), this);
    auto* optionsLayout = new QVBoxLayout(optionsBox);
    m_stack = new QStackedWidget(optionsBox);
    buildOptions(m_stack);
    optionsLayout->addWidget(m_stack);
    left->addWidget(optionsBox);
    left->addStretch(1);

    auto* right = new QVBoxLayout();
    layout->addLayout(right, 1);
    auto* countBox = new QGroupBox(tr("Trainable parameters"), this);
    auto* countLayout = new QVBoxLayout(countBox);
    m_summary = new QLabel(countBox);
    QFont big = m_summary->font();
    big.setPointSizeF(big.pointSizeF() * 1.4);
    big.setBold(true);
    m_summary->setFont(big);
    m_summary->setWordWrap(true);
    m_error = new QLabel(countBox);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #c0392b;"));
    m_error->hide();
    countLayout->addWidget(m_summary);
    countLayout->addWidget(m_error);
    right->addWidget(countBox);

    auto* compareBox = new QGroupBox(tr("All methods on this model, same options"), this);
    auto* compareLayout = new QVBoxLayout(compareBox);
    m_comparison = new MethodComparisonModel(this);
    m_table = new QTableView(compareBox);
    m_table->setModel(m_comparison);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setAlternatingRowColors(true);
    compareLayout->addWidget(m_table);
    right->addWidget(compareBox, 1);

    connect(m_methods, &QButtonGroup::idToggled, this, [this](int id, bool on) {
        if (!on)
            return;
        m_stack->setCurrentIndex(id);
        toState();
    });
    connect(m_state, &StudioState::modelChanged, this, [this] {
        rebuildLoraTargets();
        fromState();
    });
    connect(m_state, &StudioState::configChanged, this, [this](QObject* origin) {
        if (origin !=
            this)  // our own change: the widgets show it already (toState refreshed the counts)
            fromState();
    });
    rebuildLoraTargets();
    fromState();
}

void MethodPage::buildOptions(QStackedWidget* stack)
{
    auto page = [stack](Method m) {
        auto* w = new QWidget(stack);
        auto* form = new QFormLayout(w);
        auto* blurb = new QLabel(methodBlurb(m), w);
        blurb->setWordWrap(true);
        form->addRow(blurb);
        stack->addWidget(w);
        return form;
    };
    auto changed = [this] { toState(); };

    page(Method::Full);

    QFormLayout* partial = page(Method::Partial);
    m_blocks = new QSpinBox(stack);
    m_blocks->setRange(0, 1000);
    partial->addRow(tr("Trainable blocks (last N):"), m_blocks);
    m_partialEmbeddings = new QCheckBox(tr("Embeddings"), stack);
    m_partialHead = new QCheckBox(tr("LM head"), stack);
    m_partialNorms = new QCheckBox(tr("All norms"), stack);
    partial->addRow(tr("Also train:"), m_partialEmbeddings);
    partial->addRow(QString(), m_partialHead);
    partial->addRow(QString(), m_partialNorms);
    connect(m_blocks, &QSpinBox::valueChanged, this, changed);
    for (QCheckBox* c : {m_partialEmbeddings, m_partialHead, m_partialNorms})
        connect(c, &QCheckBox::toggled, this, changed);

    QFormLayout* lora = page(Method::Lora);
    m_loraRank = new QSpinBox(stack);
    m_loraRank->setRange(1, 1024);
    m_loraAlpha = new QDoubleSpinBox(stack);
    m_loraAlpha->setRange(0.01, 4096);
    m_loraDropout = new QDoubleSpinBox(stack);
    m_loraDropout->setRange(0, 0.95);
    m_loraDropout->setSingleStep(0.05);
    m_rslora = new QCheckBox(tr("rsLoRA scaling (alpha / √rank)"), stack);
    auto* targets = new QWidget(stack);
    m_targetsLayout = new QVBoxLayout(targets);
    m_targetsLayout->setContentsMargins(0, 0, 0, 0);
    m_targetsLayout->setSpacing(2);
    lora->addRow(tr("Rank:"), m_loraRank);
    lora->addRow(tr("Alpha:"), m_loraAlpha);
    lora->addRow(tr("Dropout:"), m_loraDropout);
    lora->addRow(QString(), m_rslora);
    lora->addRow(tr("Target layers:"), targets);
    connect(m_loraRank, &QSpinBox::valueChanged, this, changed);
    connect(m_loraAlpha, &QDoubleSpinBox::valueChanged, this, changed);
    connect(m_loraDropout, &QDoubleSpinBox::valueChanged, this, changed);
    connect(m_rslora, &QCheckBox::toggled, this, changed);

    QFormLayout* adapter = page(Method::Adapter);
    m_adapterKind = new QComboBox(stack);
    m_adapterKind->addItem(tr("Houlsby (after attention and MLP)"),
                           static_cast<int>(AdapterKind::Houlsby));
    m_adapterKind->addItem(tr("Pfeiffer (after MLP)"), static_cast<int>(AdapterKind::Pfeiffer));
    m_adapterSize = new QSpinBox(stack);
    m_adapterSize->setRange(0, 65536);
    m_adapterSize->setSpecialValueText(tr("auto (hidden / reduction)"));
    m_adapterReduction = new QSpinBox(stack);
    m_adapterReduction->setRange(1, 1024);
    m_adapterActivation = new QComboBox(stack);
    for (AdapterActivation a : {AdapterActivation::Relu, AdapterActivation::Gelu,
                                AdapterActivation::Silu, AdapterActivation::Tanh})
        m_adapterActivation->addItem(QString::fromLatin1(adapterActivationName(a)),
                                     static_cast<int>(a));
    adapter->addRow(tr("Placement:"), m_adapterKind);
    adapter->addRow(tr("Bottleneck size:"), m_adapterSize);
    adapter->addRow(tr("Reduction factor:"), m_adapterReduction);
    adapter->addRow(tr("Activation:"), m_adapterActivation);
    connect(m_adapterKind, &QComboBox::currentIndexChanged, this, changed);
    connect(m_adapterActivation, &QComboBox::currentIndexChanged, this, changed);
    connect(m_adapterSize, &QSpinBox::valueChanged, this, changed);
    connect(m_adapterReduction, &QSpinBox::valueChanged, this, changed);

    QFormLayout* prompt = page(Method::Prompt);
    m_promptTokens = new QSpinBox(stack);
    m_promptTokens->setRange(1, 4096);
    m_promptInit = new QLineEdit(stack);
    m_promptInit->setPlaceholderText(tr("random initialisation"));
    prompt->addRow(tr("Virtual tokens:"), m_promptTokens);
    prompt->addRow(tr("Initialise from text:"), m_promptInit);
    connect(m_promptTokens, &QSpinBox::valueChanged, this, changed);
    connect(m_promptInit, &QLineEdit::editingFinished, this, changed);
}

void MethodPage::rebuildLoraTargets()
{
    for (QCheckBox* c : m_targets)
        delete c;
    m_targets.clear();
    const auto& model = m_state->modelConfig();
    if (!model)
        return;
    for (const std::string& name : loraTargetNames(*model)) {
        auto* c = new QCheckBox(QString::fromStdString(name), m_targetsLayout->parentWidget());
        m_targetsLayout->addWidget(c);
        connect(c, &QCheckBox::toggled, this, [this] { toState(); });
        m_targets.push_back(c);
    }
}

void MethodPage::chooseMethod(const QString& name)
{
    for (Method m : kMethods)
        if (name == QLatin1String(methodName(m)))
            m_methods->button(static_cast<int>(m))->setChecked(true);
}

void MethodPage::fromState()
{
    if (m_updating)
        return;
    m_updating = true;
    const TrainConfig& c = m_state->config();
    m_methods->button(static_cast<int>(c.method))->setChecked(true);
    m_stack->setCurrentIndex(static_cast<int>(c.method));
    if (const auto& model = m_state->modelConfig())
        m_blocks->setMaximum(static_cast<int>(model->numLayers));
    m_blocks->setValue(c.partial.trainableBlocks);
    auto hasModule = [&c](const char* m) {
        return std::find(c.partial.modules.begin(), c.partial.modules.end(), m) !=
               c.partial.modules.end();
    };
    m_partialEmbeddings->setChecked(hasModule("embeddings"));
    m_partialHead->setChecked(hasModule("lm_head"));
    m_partialNorms->setChecked(hasModule("norms"));
    m_loraRank->setValue(c.lora.rank);
    m_loraAlpha->setValue(c.lora.alpha);
    m_loraDropout->setValue(c.lora.dropout);
    m_rslora->setChecked(c.lora.rslora);
    showLoraTargets();
    m_adapterKind->setCurrentIndex(m_adapterKind->findData(static_cast<int>(c.adapter.kind)));
    m_adapterActivation->setCurrentIndex(
        m_adapterActivation->findData(static_cast<int>(c.adapter.activation)));
    m_adapterSize->setValue(c.adapter.size);
    m_adapterReduction->setValue(c.adapter.reductionFactor);
    m_promptTokens->setValue(c.prompt.numTokens);
    m_promptInit->setText(QString::fromStdString(c.prompt.initText));
    m_updating = false;
    refreshCounts();
}

void MethodPage::showLoraTargets()
{
    if (const auto& model = m_state->modelConfig()) {
        const auto targets = resolvedLoraTargets(*model, m_state->config().lora);
        for (QCheckBox* box : m_targets)
            box->setChecked(std::find(targets.begin(), targets.end(), box->text().toStdString()) !=
                            targets.end());
    }
}

void MethodPage::toState()
{
    if (m_updating)
        return;
    m_state->updateConfig(
        [this](TrainConfig& c) {
            c.method = static_cast<Method>(m_methods->checkedId());
            c.partial.trainableBlocks = m_blocks->value();
            c.partial.modules.clear();
            if (m_partialEmbeddings->isChecked())
                c.partial.modules.push_back("embeddings");
            if (m_partialHead->isChecked())
                c.partial.modules.push_back("lm_head");
            if (m_partialNorms->isChecked())
                c.partial.modules.push_back("norms");
            c.lora.rank = m_loraRank->value();
            c.lora.alpha = m_loraAlpha->value();
            c.lora.dropout = m_loraDropout->value();
            c.lora.rslora = m_rslora->isChecked();
            if (!m_targets.empty()) {
                c.lora.targets.clear();
                for (QCheckBox* box : m_targets)
                    if (box->isChecked())
                        c.lora.targets.push_back(box->text().toStdString());
            }
            c.adapter.kind = static_cast<AdapterKind>(m_adapterKind->currentData().toInt());
            c.adapter.activation =
                static_cast<AdapterActivation>(m_adapterActivation->currentData().toInt());
            c.adapter.size = m_adapterSize->value();
            c.adapter.reductionFactor = m_adapterReduction->value();
            c.prompt.numTokens = m_promptTokens->value();
            c.prompt.initText = m_promptInit->text().toStdString();
        },
        this);
    if (!m_targets.empty() && m_state->config().lora.targets.empty()) {
        // The last target unchecked: the config falls back to core's defaults; the boxes show them.
        m_updating = true;
        showLoraTargets();
        m_updating = false;
    }
    refreshCounts();
}

void MethodPage::refreshCounts()
{
    const auto& model = m_state->modelConfig();
    if (!model) {
        m_summary->setText(tr("Open a model to see the trainable parameters."));
        m_comparison->setRows({});
        return;
    }
    const TrainConfig& chosen = m_state->config();
    const qint64 total = parameterCount(*model);
    std::vector<MethodComparisonModel::Row> rows;
    for (Method m : kMethods) {
        TrainConfig run = chosen;
        run.method = m;
        MethodComparisonModel::Row row;
        row.method = methodTitle(m);
        row.chosen = m == chosen.method;
        try {
            if (m == Method::Lora && run.lora.targets.empty() && !m_targets.empty())
                throw std::runtime_error("choose at least one target layer");
            row.trainable = trainableParameterCount(*model, run);
            row.percent = total > 0 ? 100.0 * double(row.trainable) / double(total) : 0;
        } catch (const std::exception& e) {
            row.error = QString::fromUtf8(e.what());
        }
        rows.push_back(row);
    }
    const auto& mine = rows[static_cast<size_t>(chosen.method)];
    m_trainable = mine.trainable;
    m_percent = mine.percent;
    m_summary->setText(summaryText());
    m_error->setVisible(!mine.error.isEmpty());
    m_error->setText(mine.error);
    m_comparison->setRows(std::move(rows));
}

QString MethodPage::summaryText() const
{
    const auto& model = m_state->modelConfig();
    if (!model || m_trainable < 0)
        return tr("—");
    return tr("%1 of %2 parameters train (%3 %)")
        .arg(formatCount(m_trainable), formatCount(parameterCount(*model)))
        .arg(m_percent, 0, 'g', 3);
}

}  // namespace tb
