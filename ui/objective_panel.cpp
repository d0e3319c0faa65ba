// ObjectivePanel: objective combo box and its options <-> StudioState's config; core's estimate
// for the chosen objective and for SFT, and the items in which they differ.
#include "objective_panel.h"

#include "studio_state.h"

#include "memory/estimator.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>

namespace tb {

namespace {

const Objective kObjectives[] = {Objective::Sft,   Objective::Dpo,  Objective::Ipo,
                                 Objective::Simpo, Objective::Orpo, Objective::Reward};

QString objectiveTitle(Objective o)
{
    switch (o) {
    case Objective::Sft:
        return QObject::tr("SFT (supervised next-token loss)");
    case Objective::Dpo:
        return QObject::tr("DPO (direct preference optimisation)");
    case Objective::Ipo:
        return QObject::tr("IPO (identity preference optimisation)");
    case Objective::Simpo:
        return QObject::tr("SimPO (reference-free, length-normalised)");
    case Objective::Orpo:
        return QObject::tr("ORPO (SFT plus odds-ratio penalty)");
    case Objective::Reward:
        return QObject::tr("Reward model (scalar head, Bradley-Terry)");
    }
    return {};
}

QString blurb(Objective o)
{
    switch (o) {
    case Objective::Sft:
        return QObject::tr("Learns to reproduce the answers of the training examples token by "
                           "token (cross-entropy on the answer tokens).");
    case Objective::Dpo:
        return QObject::tr("Raises the chosen answer's log-probability relative to the rejected "
                           "one's, both measured against a frozen reference model, through a "
                           "logistic loss scaled by beta.");
    case Objective::Ipo:
        return QObject::tr("Like DPO but with a squared loss that pulls the reference-relative "
                           "margin towards 1/(2·tau) instead of pushing it without bound.");
    case Objective::Simpo:
        return QObject::tr("Needs no reference model: the reward is the answer's mean "
                           "log-probability per token times beta, and chosen must beat rejected "
                           "by the margin gamma.");
    case Objective::Orpo:
        return QObject::tr("Needs no reference model: the SFT loss on the chosen answer plus "
                           "lambda times a penalty on the odds of the rejected answer.");
    case Objective::Reward:
        return QObject::tr("Trains a scalar score head so that the chosen answer scores above the "
                           "rejected one; the result ranks answers (Playground best-of-N) rather "
                           "than generating them.");
    }
    return {};
}

QString referenceBlurb(ReferenceKind k)
{
    switch (k) {
    case ReferenceKind::Auto:
        return QObject::tr("LoRA, adapters and prompt tuning: the policy with its trainable parts "
                           "switched off (no extra weights); full and partial: a frozen copy.");
    case ReferenceKind::Copy:
        return QObject::tr("Always a frozen copy of the base weights in memory.");
    case ReferenceKind::Precomputed:
        return QObject::tr("One pass before the first step stores each pair's reference "
                           "log-probabilities in the run folder; no reference model in memory.");
    }
    return {};
}

QString bytesText(qint64 bytes)
{
    return QString::fromStdString(formatBytes(bytes));
}

QString signedBytes(qint64 delta)
{
    return (delta < 0 ? QStringLiteral("−") : QStringLiteral("+")) + bytesText(std::llabs(delta));
}

}  // namespace

QString ObjectivePanel::objectiveBlurb(const QString& name)
{
    const auto o = parseObjective(name.toStdString());
    return o ? blurb(*o) : QString();
}

ObjectivePanel::ObjectivePanel(StudioState* state, QWidget* parent)
    : QWidget(parent), m_state(state)
{
    m_form = new QFormLayout(this);
    m_objective = new QComboBox(this);
    for (Objective o : kObjectives) {
        m_objective->addItem(objectiveTitle(o), QString::fromLatin1(objectiveName(o)));
        m_objective->setItemData(m_objective->count() - 1, blurb(o), Qt::ToolTipRole);
    }
    m_blurb = new QLabel(this);
    m_blurb->setWordWrap(true);
    m_beta = new QDoubleSpinBox(this);
    m_beta->setDecimals(3);
    m_beta->setRange(0.001, 100);
    m_beta->setSingleStep(0.05);
    m_smoothing = new QDoubleSpinBox(this);
    m_smoothing->setDecimals(2);
    m_smoothing->setRange(0, 0.49);
    m_smoothing->setSingleStep(0.05);
    m_smoothing->setToolTip(tr("The share of pairs assumed to be labelled the wrong way round "
                               "(conservative DPO); 0 trusts every label."));
    m_gamma = new QDoubleSpinBox(this);
    m_gamma->setDecimals(2);
    m_gamma->setRange(0, 100);
    m_gamma->setSingleStep(0.1);
    m_gamma->setToolTip(tr("SimPO's target margin: how far the chosen reward must exceed the "
                           "rejected one before the loss stops pushing."));
    m_reference = new QComboBox(this);
    for (ReferenceKind k : {ReferenceKind::Auto, ReferenceKind::Copy, ReferenceKind::Precomputed}) {
        m_reference->addItem(QString::fromLatin1(referenceKindName(k)), static_cast<int>(k));
        m_reference->setItemData(m_reference->count() - 1, referenceBlurb(k), Qt::ToolTipRole);
    }
    m_layout = new QComboBox(this);
    for (PairLayout l :
         {PairLayout::Auto, PairLayout::Standard, PairLayout::HhRlhf, PairLayout::UltraFeedback})
        m_layout->addItem(QString::fromLatin1(pairLayoutName(l)), static_cast<int>(l));
    m_layout->setToolTip(tr("How the pair files' rows are laid out: standard (prompt, chosen, "
                            "rejected), HH-RLHF (two full conversations), UltraFeedback "
                            "(message lists with scores); auto detects it per row."));
    m_memory = new QLabel(this);
    m_memory->setWordWrap(true);
    m_betaLabel = new QLabel(tr("Beta (β):"), this);
    m_form->addRow(tr("Objective:"), m_objective);
    m_form->addRow(m_blurb);
    m_form->addRow(m_betaLabel, m_beta);
    m_form->addRow(tr("Label smoothing:"), m_smoothing);
    m_form->addRow(tr("Gamma (γ):"), m_gamma);
    m_form->addRow(tr("Reference:"), m_reference);
    m_form->addRow(tr("Pair layout:"), m_layout);
    m_form->addRow(m_memory);

    auto changed = [this] { toState(); };
    connect(m_objective, &QComboBox::currentIndexChanged, this, changed);
    connect(m_reference, &QComboBox::currentIndexChanged, this, changed);
    connect(m_layout, &QComboBox::currentIndexChanged, this, changed);
    for (QDoubleSpinBox* box : {m_beta, m_smoothing, m_gamma})
        connect(box, &QDoubleSpinBox::valueChanged, this, changed);
    connect(m_state, &StudioState::modelChanged, this, &ObjectivePanel::refreshMemory);
    connect(m_state, &StudioState::configChanged, this, [this](QObject* origin) {
        if (origin != this)
            fromState();  // our own change: toState refreshed what derives from it
    });
    fromState();
}

void ObjectivePanel::chooseObjective(const QString& name)
{
    const int i = m_objective->findData(name);
    if (i >= 0)
        m_objective->setCurrentIndex(i);
}

bool ObjectivePanel::rowShown(const QWidget* field) const
{
    return m_form->isRowVisible(const_cast<QWidget*>(field));
}

void ObjectivePanel::fromState()
{
    if (m_updating)
        return;
    m_updating = true;
    const TrainConfig& c = m_state->config();
    m_objective->setCurrentIndex(
        std::max(0, m_objective->findData(QString::fromLatin1(objectiveName(c.objective)))));
    auto setValue = [](QDoubleSpinBox* box, double v) {
        if (box->value() != v)
            box->setValue(v);
    };
    setValue(m_beta, c.preference.beta);
    setValue(m_smoothing, c.preference.labelSmoothing);
    setValue(m_gamma, c.preference.gamma);
    m_reference->setCurrentIndex(
        std::max(0, m_reference->findData(static_cast<int>(c.preference.reference))));
    m_layout->setCurrentIndex(
        std::max(0, m_layout->findData(static_cast<int>(c.preference.layout))));
    m_updating = false;
    showRows();
    refreshMemory();
}

void ObjectivePanel::toState()
{
    if (m_updating)
        return;
    m_state->updateConfig(
        [this](TrainConfig& c) {
            c.objective =
                parseObjective(m_objective->currentData().toString().toStdString()).value();
            c.preference.beta = m_beta->value();
            c.preference.labelSmoothing = m_smoothing->value();
            c.preference.gamma = m_gamma->value();
            c.preference.reference = static_cast<ReferenceKind>(m_reference->currentData().toInt());
            c.preference.layout = static_cast<PairLayout>(m_layout->currentData().toInt());
        },
        this);
    showRows();
    refreshMemory();
}

void ObjectivePanel::showRows()
{
    const Objective o = m_state->config().objective;
    m_blurb->setText(blurb(o));
    m_objective->setToolTip(blurb(o));
    // beta is IPO's tau and ORPO's lambda (the same key); a reward model and SFT have none.
    const bool beta =
        o == Objective::Dpo || o == Objective::Ipo || o == Objective::Simpo || o == Objective::Orpo;
    m_betaLabel->setText(o == Objective::Ipo    ? tr("Tau (τ):")
                         : o == Objective::Orpo ? tr("Lambda (λ):")
                                                : tr("Beta (β):"));
    m_beta->setToolTip(o == Objective::Ipo ? tr("IPO's regularisation: the loss pulls the margin "
                                                "towards 1/(2·tau); smaller tau, larger margin.")
                       : o == Objective::Orpo
                           ? tr("The weight of the odds-ratio penalty next to the SFT loss.")
                           : tr("How strongly the rewards are scaled: larger beta keeps the "
                                "policy closer to the reference (DPO) or sharpens the margin "
                                "(SimPO)."));
    m_form->setRowVisible(m_beta, beta);
    m_form->setRowVisible(m_smoothing, o == Objective::Dpo || o == Objective::Simpo);
    m_form->setRowVisible(m_gamma, o == Objective::Simpo);
    m_form->setRowVisible(m_reference, needsReference(o));
    m_form->setRowVisible(m_layout, trainsOnPairs(o));
    m_reference->setToolTip(referenceBlurb(m_state->config().preference.reference));
}

void ObjectivePanel::refreshMemory()
{
    m_estimate = m_sftEstimate = -1;
    m_memoryDetail.clear();
    const auto& model = m_state->modelConfig();
    if (!model) {
        m_memory->setText(memoryText());
        return;
    }
    const TrainConfig& run = m_state->config();
    TrainConfig sft = run;
    sft.objective = Objective::Sft;
    auto options = [](const TrainConfig& c) {
        EstimateOptions o = estimateOptionsFor(c, c.data.maxLength);
        o.advise = false;
        return o;
    };
    try {
        const MemoryEstimate mine = estimateMemory(*model, run, options(run));
        const MemoryEstimate base = estimateMemory(*model, sft, options(sft));
        m_estimate = mine.total;
        m_sftEstimate = base.total;
        // The items in which the objective differs from SFT (whatever keys core itemises).
        std::map<std::string, qint64> delta;
        for (const MemoryItem& item : mine.items)
            delta[item.key] += item.bytes;
        for (const MemoryItem& item : base.items)
            delta[item.key] -= item.bytes;
        QStringList parts;
        for (const MemoryItem& item : mine.items)
            if (delta[item.key] != 0)
                parts << tr("%1 %2").arg(QString::fromStdString(item.key),
                                         signedBytes(delta[item.key]));
        for (const MemoryItem& item : base.items)
            if (delta[item.key] != 0 &&
                std::none_of(mine.items.begin(), mine.items.end(),
                             [&](const MemoryItem& m) { return m.key == item.key; }))
                parts << tr("%1 %2").arg(QString::fromStdString(item.key),
                                         signedBytes(delta[item.key]));
        m_memoryDetail = parts.join(QStringLiteral(", "));
    } catch (const std::exception& e) {
        m_memoryDetail = QString::fromUtf8(e.what());
    }
    m_memory->setText(memoryText());
    m_memory->setToolTip(tr("Core's estimate at the config's micro-batch and sequence length "
                            "(pair objectives hold a chosen and a rejected sequence per pair); "
                            "the Memory page itemises it."));
}

QString ObjectivePanel::memoryText() const
{
    if (!m_state->modelConfig())
        return tr("Open a model to see what the objective costs in memory.");
    if (m_estimate < 0)
        return tr("No memory estimate: %1").arg(m_memoryDetail);
    if (m_state->config().objective == Objective::Sft)
        return tr("Estimated peak memory: %1.").arg(bytesText(m_estimate));
    const qint64 delta = m_estimate - m_sftEstimate;
    if (delta == 0)
        return tr("Estimated peak memory: %1 (the same as SFT).").arg(bytesText(m_estimate));
    return tr("Estimated peak memory: %1 (%2 vs SFT%3).")
        .arg(bytesText(m_estimate), signedBytes(delta),
             m_memoryDetail.isEmpty() ? QString() : QStringLiteral(": ") + m_memoryDetail);
}

}  // namespace tb
