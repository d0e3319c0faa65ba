// Playground page: prompt and sampling settings; the GenerationController's batches fill the
// outputs (base, the base quantised when chosen, fine-tuned) and their weights lines.
#include "playground_page.h"

#include "quant_choice.h"

#include "generation_controller.h"
#include "ranked_answers_model.h"
#include "studio_state.h"

#include "train/reward_scorer.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <tuple>
#include <utility>

namespace tb {

PlaygroundPage::PlaygroundPage(StudioState* state, QWidget* parent)
    : QWidget(parent), m_state(state), m_controller(new GenerationController(this))
{
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout();
    layout->addLayout(top);

    auto* promptBox = new QGroupBox(tr("Prompt"), this);
    auto* promptLayout = new QVBoxLayout(promptBox);
    m_prompt = new QPlainTextEdit(promptBox);
    m_prompt->setPlaceholderText(tr("Tell me about Mia and the cat."));
    m_prompt->setPlainText(tr("Tell me about Mia and the cat."));
    m_prompt->setMaximumHeight(110);
    promptLayout->addWidget(m_prompt);
    auto* buttons = new QHBoxLayout();
    m_generate = new QPushButton(tr("Generate"), promptBox);
    m_generate->setDefault(true);
    m_stop = new QPushButton(tr("Stop"), promptBox);
    m_stop->setEnabled(false);
    m_status = new QLabel(promptBox);
    buttons->addWidget(m_generate);
    buttons->addWidget(m_stop);
    buttons->addWidget(m_status, 1);
    promptLayout->addLayout(buttons);
    top->addWidget(promptBox, 3);

    top->addWidget(buildSettings(), 2);

    buildOutputs(layout);
    auto* bestBox = new QGroupBox(tr("Best of N (ranked by a reward model)"), this);
    buildBestOfN(bestBox);
    layout->addWidget(bestBox);

    connect(m_generate, &QPushButton::clicked, this, &PlaygroundPage::generate);
    connect(m_stop, &QPushButton::clicked, this, &PlaygroundPage::cancel);
    connect(m_greedy, &QCheckBox::toggled, this, [this](bool on) {
        for (QWidget* w : {static_cast<QWidget*>(m_temperature), static_cast<QWidget*>(m_topK),
                           static_cast<QWidget*>(m_topP), static_cast<QWidget*>(m_seed)})
            w->setEnabled(!on);
    });
    connect(m_controller, &GenerationController::batchArrived, this, &PlaygroundPage::onBatch);
    connect(m_quantBase, &QComboBox::currentIndexChanged, this,
            &PlaygroundPage::showQuantizedBaseColumn);
    connect(m_run, &QComboBox::currentIndexChanged, this, [this] {
        if (m_run->currentIndex() >= 0)
            m_state->setSelectedRun(m_run->currentData().toString());
    });
    connect(m_state, &StudioState::runsChanged, this, &PlaygroundPage::refreshRuns);
    connect(m_state, &StudioState::modelChanged, this, &PlaygroundPage::showModelMissing);
    connect(m_state, &StudioState::selectedRunChanged, this, &PlaygroundPage::refreshRuns);
    connect(m_state, &StudioState::configChanged, this, [this] {
        const int i = m_template->findData(
            QString::fromLatin1(chatTemplateChoiceName(m_state->config().data.chatTemplate)));
        if (i >= 0)
            m_template->setCurrentIndex(i);
    });
    const int i = m_template->findData(
        QString::fromLatin1(chatTemplateChoiceName(m_state->config().data.chatTemplate)));
    m_template->setCurrentIndex(std::max(0, i));
    refreshRuns();
    showQuantizedBaseColumn();
}

QWidget* PlaygroundPage::buildSettings()
{
    auto* settings = new QGroupBox(tr("Sampling"), this);
    auto* form = new QFormLayout(settings);
    m_run = new QComboBox(settings);
    m_template = new QComboBox(settings);
    m_template->addItem(tr("none (raw text)"), QString());
    for (const char* t : {"model", "alpaca", "chatml", "llama3", "inst", "plain"})
        m_template->addItem(QString::fromLatin1(t), QString::fromLatin1(t));
    m_maxTokens = new QSpinBox(settings);
    m_maxTokens->setRange(1, 4096);
    m_maxTokens->setValue(48);
    m_temperature = new QDoubleSpinBox(settings);
    m_temperature->setRange(0.01, 5);
    m_temperature->setValue(0.8);
    m_temperature->setSingleStep(0.1);
    m_topK = new QSpinBox(settings);
    m_topK->setRange(0, 100000);
    m_topK->setValue(40);
    m_topK->setSpecialValueText(tr("off"));
    m_topP = new QDoubleSpinBox(settings);
    m_topP->setRange(0.01, 1);
    m_topP->setValue(0.95);
    m_topP->setSingleStep(0.05);
    m_repetition = new QDoubleSpinBox(settings);
    m_repetition->setRange(1, 3);
    m_repetition->setSingleStep(0.05);
    m_seed = new QSpinBox(settings);
    m_seed->setRange(0, 2147483647);
    m_greedy = new QCheckBox(tr("Greedy (argmax)"), settings);
    m_quantBase = new QComboBox(settings);
    m_quantBase->setToolTip(
        tr("A third column: the same base model with its blocks' linear weights held in 4 or 8 "
           "bits, as QLoRA holds its frozen base, to compare with the fp32 base and a run tuned "
           "on that base."));
    fillQuantChoice(m_quantBase, tr("off (base and fine-tuned only)"));
    form->addRow(tr("Fine-tuned run:"), m_run);
    form->addRow(tr("Quantised base:"), m_quantBase);
    form->addRow(tr("Chat template:"), m_template);
    form->addRow(tr("Max new tokens:"), m_maxTokens);
    form->addRow(tr("Temperature:"), m_temperature);
    form->addRow(tr("Top-k:"), m_topK);
    form->addRow(tr("Top-p:"), m_topP);
    form->addRow(tr("Repetition penalty:"), m_repetition);
    form->addRow(tr("Seed:"), m_seed);
    form->addRow(QString(), m_greedy);
    return settings;
}

void PlaygroundPage::buildOutputs(QBoxLayout* layout)
{
    auto* outputs = new QHBoxLayout();
    auto output = [this, outputs](const QString& title, QLabel** label, int side) {
        auto* box = new QGroupBox(this);
        auto* v = new QVBoxLayout(box);
        *label = new QLabel(title, box);
        QFont f = (*label)->font();
        f.setBold(true);
        (*label)->setFont(f);
        m_weights[side] = new QLabel(box);
        m_weights[side]->setWordWrap(true);
        m_weights[side]->setToolTip(
            tr("How this column's model holds its weights: the format, bits per weight (of the "
               "quantised layers, their absmax statistics included) and all its weights' bytes."));
        auto* edit = new QPlainTextEdit(box);
        edit->setReadOnly(true);
        v->addWidget(*label);
        v->addWidget(m_weights[side]);
        v->addWidget(edit, 1);
        outputs->addWidget(box, 1);
        return std::pair{box, edit};
    };
    m_base = output(tr("Base model"), &m_baseTitle, kBaseSide).second;
    std::tie(m_quantColumn, m_quantized) =
        output(tr("Base model, quantised"), &m_quantTitle, kQuantizedBaseSide);
    m_tuned = output(tr("Fine-tuned"), &m_tunedTitle, kTunedSide).second;
    layout->addLayout(outputs, 1);
}

QuantOptions PlaygroundPage::quantizedBase() const
{
    return quantChoice(m_quantBase);
}

void PlaygroundPage::showQuantizedBaseColumn()
{
    const QuantOptions q = quantizedBase();
    m_quantColumn->setVisible(q.enabled());
    m_quantTitle->setText(tr("Base model · %1").arg(QString::fromStdString(quantDescription(q))));
}

void PlaygroundPage::buildBestOfN(QWidget* box)
{
    auto* v = new QVBoxLayout(box);
    auto* row = new QHBoxLayout();
    m_rewardRun = new QComboBox(box);
    m_rewardRun->setPlaceholderText(tr("no reward-model run yet"));
    m_rewardRun->setToolTip(tr("A run trained with the objective “Reward model” (Method page); "
                               "it scores each answer, higher is better."));
    m_bestOf = new QSpinBox(box);
    m_bestOf->setRange(2, 16);
    m_bestOf->setValue(4);
    m_bestOf->setPrefix(tr("N = "));
    m_bestOfButton = new QPushButton(tr("Sample and rank"), box);
    m_bestOfButton->setToolTip(
        tr("Samples N answers from the fine-tuned run (or the base model) with the sampling "
           "settings above, seeds seed … seed + N − 1, and ranks them by the reward model."));
    row->addWidget(new QLabel(tr("Reward model:"), box));
    row->addWidget(m_rewardRun, 1);
    row->addWidget(m_bestOf);
    row->addWidget(m_bestOfButton);
    v->addLayout(row);
    m_ranked = new RankedAnswersModel(this);
    m_rankedView = new QTableView(box);
    m_rankedView->setModel(m_ranked);
    m_rankedView->verticalHeader()->hide();
    m_rankedView->horizontalHeader()->setStretchLastSection(true);
    m_rankedView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_rankedView->setMaximumHeight(170);
    v->addWidget(m_rankedView);
    connect(m_bestOfButton, &QPushButton::clicked, this, &PlaygroundPage::bestOfN);
}

PlaygroundPage::~PlaygroundPage() =
    default;  // the controller (a child) cancels and waits for its worker

bool PlaygroundPage::busy() const
{
    return m_controller->busy();
}

void PlaygroundPage::refreshRuns()
{
    const QSignalBlocker block(m_run);
    m_run->clear();
    m_run->addItem(tr("(none: base only)"), QString());
    for (const QString& dir : m_state->runs())
        m_run->addItem(QFileInfo(dir).fileName(), dir);
    m_run->setCurrentIndex(std::max(0, m_run->findData(m_state->selectedRun())));
    // The session's reward-model runs (run.json's objective), to score best-of-N samples with.
    const QString keep = m_rewardRun->currentData().toString();
    const QSignalBlocker blockReward(m_rewardRun);
    m_rewardRun->clear();
    for (const QString& dir : m_state->runs())
        if (isRewardRun(dir.toStdString()))
            m_rewardRun->addItem(QFileInfo(dir).fileName(), dir);
    m_rewardRun->setCurrentIndex(
        m_rewardRun->count() == 0 ? -1 : std::max(0, m_rewardRun->findData(keep)));
    m_bestOfButton->setEnabled(m_rewardRun->count() > 0 && !busy());
}

void PlaygroundPage::setPrompt(const QString& prompt)
{
    m_prompt->setPlainText(prompt);
}
QString PlaygroundPage::baseText() const
{
    return m_base->toPlainText();
}
QString PlaygroundPage::tunedText() const
{
    return m_tuned->toPlainText();
}
QString PlaygroundPage::quantizedBaseText() const
{
    return m_quantized->toPlainText();
}
QString PlaygroundPage::weightsText(int side) const
{
    return side >= 0 && side < 3 ? m_weights[side]->text() : QString();
}

void PlaygroundPage::cancel()
{
    m_controller->cancel();
}

void PlaygroundPage::clearOutputs()
{
    for (QPlainTextEdit* edit : {m_base, m_tuned, m_quantized})
        edit->clear();
    for (QLabel* label : m_weights)
        label->clear();
    m_tokens = 0;
}

void PlaygroundPage::onBatch(const GenerationBatch& batch)
{
    // One insertion per side per batch; the per-token signal keeps its meaning for listeners.
    for (const auto& [side, weights] : batch.weights)
        m_weights[side]->setText(weights);
    QString text[3];
    for (const auto& [side, piece] : batch.pieces) {
        const QString t = QString::fromStdString(piece);
        text[side] += t;
        ++m_tokens;
        Q_EMIT tokenArrived(side, t);
    }
    QPlainTextEdit* const edits[3] = {m_base, m_tuned, m_quantized};
    for (int side : {kBaseSide, kTunedSide, kQuantizedBaseSide}) {
        if (text[side].isEmpty())
            continue;
        QPlainTextEdit* edit = edits[side];
        edit->moveCursor(QTextCursor::End);
        edit->insertPlainText(text[side]);
    }
    if (batch.status)
        m_status->setText(*batch.status);
    if (batch.finished) {
        m_status->setText(*batch.finished);
        m_generate->setEnabled(true);
        m_stop->setEnabled(false);
        m_bestOfButton->setEnabled(m_rewardRun->count() > 0);
        if (!batch.ranked.empty())
            m_ranked->setAnswers(batch.ranked);
        Q_EMIT generationFinished(*batch.finished);
    }
}

GenerationRequest PlaygroundPage::request() const
{
    GenerationRequest request;
    request.modelPath = m_state->modelPath();
    request.runDir = m_run->currentData().toString();
    request.baseQuant = quantizedBase();
    GenerateOptions& options = request.options;
    options.maxNewTokens = m_maxTokens->value();
    options.greedy = m_greedy->isChecked();
    options.temperature = m_temperature->value();
    options.topK = m_topK->value();
    options.topP = m_topP->value();
    options.repetitionPenalty = m_repetition->value();
    options.seed = uint64_t(m_seed->value());
    request.chatTemplate = m_template->currentData().toString();
    request.prompt = m_prompt->toPlainText().toStdString();
    return request;
}

void PlaygroundPage::showModelMissing()
{
    const QString missing = m_state->modelMissingText();
    if (!missing.isEmpty())
        m_status->setText(tr("Cannot generate: %1").arg(missing));
    else if (m_status->text().startsWith(tr("Cannot generate")))
        m_status->clear();
    if (!busy())
        m_generate->setEnabled(missing.isEmpty());
}

QString PlaygroundPage::statusText() const
{
    return m_status->text();
}

bool PlaygroundPage::bestOfN()
{
    if (busy() || m_rewardRun->currentIndex() < 0)
        return false;
    if (!m_state->modelMissing().isEmpty()) {
        showModelMissing();
        return false;
    }
    BestOfNRequest best;
    best.generation = request();
    best.generation.baseQuant = {};  // best-of-N samples one model: the run's, or the base
    best.rewardRun = m_rewardRun->currentData().toString();
    best.n = m_bestOf->value();
    if (best.generation.modelPath.isEmpty()) {
        m_status->setText(tr("Open a model first."));
        return false;
    }
    clearOutputs();
    m_ranked->setAnswers({});
    const QString& runDir = best.generation.runDir;
    m_tunedTitle->setText(
        tr("%1 samples from %2")
            .arg(best.n)
            .arg(runDir.isEmpty() ? tr("the base model") : QFileInfo(runDir).fileName()));
    if (!m_controller->startBestOfN(best))
        return false;
    m_generate->setEnabled(false);
    m_bestOfButton->setEnabled(false);
    m_stop->setEnabled(true);
    m_status->setText(tr("Loading models…"));
    return true;
}

void PlaygroundPage::generate()
{
    if (busy())
        return;
    const GenerationRequest request = this->request();
    if (request.modelPath.isEmpty()) {
        m_status->setText(tr("Open a model first."));
        return;
    }
    if (!m_state->modelMissing().isEmpty()) {
        showModelMissing();
        return;
    }

    clearOutputs();
    const QString& runDir = request.runDir;
    m_tunedTitle->setText(runDir.isEmpty()
                              ? tr("Fine-tuned (choose a run)")
                              : tr("Fine-tuned: %1").arg(QFileInfo(runDir).fileName()));
    if (!m_controller->start(request))
        return;
    m_bestOfButton->setEnabled(false);
    m_generate->setEnabled(false);
    m_stop->setEnabled(true);
    m_status->setText(tr("Loading models…"));
}

}  // namespace tb
