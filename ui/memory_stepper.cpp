// Stepper: Back / Next / Show all over the five components, and the sentence of the current step.
#include "memory_stepper.h"

#include "memory_compare.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

#include <algorithm>

namespace tb {

int MemoryStepper::stepCount()
{
    return kTeachingComponents;
}

QString MemoryStepper::stepTitle(int step)
{
    return teachingComponentTitle(std::clamp(step, 1, stepCount()) - 1);
}

QString MemoryStepper::stepSentence(int step)
{
    switch (step) {
    case 1:
        return tr("Weights: every parameter of the model, at the bytes of its precision (4 in "
                  "fp32, 2 in bf16, about half a byte in 4-bit NF4); inference needs them too, "
                  "and QLoRA shrinks exactly this part.");
    case 2:
        return tr("Gradients: backward writes one gradient for each trainable parameter, so full "
                  "fine-tuning adds a second copy of the model while LoRA, adapters and prompts "
                  "add almost nothing.");
    case 3:
        return tr("Optimizer states: AdamW keeps a running mean and variance of every trainable "
                  "parameter's gradient in fp32 (8 bytes each), the largest part of full "
                  "fine-tuning and a sliver for the methods that train a few parameters.");
    case 4:
        return tr("Activations and logits: the forward pass keeps each block's intermediate "
                  "tensors (and the tokens × vocabulary logits) for backward, so this part grows "
                  "with micro-batch × sequence length whatever the method, and gradient "
                  "checkpointing or the chunked loss shrink it.");
    case 5:
        return tr("Overhead: the CUDA context, library workspaces and the caching allocator's "
                  "rounding, a fixed cost of every GPU before any tensor.");
    default:
        return {};
    }
}

MemoryStepper::MemoryStepper(QWidget* parent) : QWidget(parent)
{
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    m_back = new QPushButton(tr("◀ Back"), this);
    m_next = new QPushButton(tr("Next ▶"), this);
    m_all = new QPushButton(tr("Show all"), this);
    m_label = new QLabel(this);
    m_label->setWordWrap(true);
    m_label->setObjectName(QStringLiteral("stepSentence"));
    row->addWidget(m_back);
    row->addWidget(m_next);
    row->addWidget(m_all);
    row->addWidget(m_label, 1);
    connect(m_back, &QPushButton::clicked, this, &MemoryStepper::back);
    connect(m_next, &QPushButton::clicked, this, &MemoryStepper::next);
    connect(m_all, &QPushButton::clicked, this, &MemoryStepper::showAll);
    setStage(0);
}

QString MemoryStepper::text() const
{
    return m_label->text();
}

void MemoryStepper::setStage(int stage)
{
    stage = std::clamp(stage, 0, stepCount());
    const bool changed = stage != m_stage;
    m_stage = stage;
    m_label->setText(
        stage == 0 ? tr("Step through the bars: Next adds the components one at a "
                        "time, with what each adds and why.")
                   : tr("Step %1 of %2. %3").arg(stage).arg(stepCount()).arg(stepSentence(stage)));
    m_back->setEnabled(stage > 0);
    m_next->setEnabled(stage < stepCount());
    m_all->setEnabled(stage > 0);
    if (changed)
        Q_EMIT stageChanged(stage);
}

void MemoryStepper::next()
{
    setStage(m_stage + 1);
}

void MemoryStepper::back()
{
    setStage(m_stage - 1);
}

void MemoryStepper::showAll()
{
    setStage(0);
}

}  // namespace tb
