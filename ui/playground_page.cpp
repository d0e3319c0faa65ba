// Playground page: prompt and sampling settings; a worker loads the models (cached) and streams tokens.
#include "playground_page.h"

#include "studio_state.h"

#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "train/tuned_model.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace tb {

PlaygroundPage::PlaygroundPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
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

    auto* settings = new QGroupBox(tr("Sampling"), this);
    auto* form = new QFormLayout(settings);
    m_run = new QComboBox(settings);
    m_template = new QComboBox(settings);
    m_template->addItem(tr("none (raw text)"), QString());
    for (const char* t : {"alpaca", "chatml", "llama3", "inst", "plain"})
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
    form->addRow(tr("Fine-tuned run:"), m_run);
    form->addRow(tr("Chat template:"), m_template);
    form->addRow(tr("Max new tokens:"), m_maxTokens);
    form->addRow(tr("Temperature:"), m_temperature);
    form->addRow(tr("Top-k:"), m_topK);
    form->addRow(tr("Top-p:"), m_topP);
    form->addRow(tr("Repetition penalty:"), m_repetition);
    form->addRow(tr("Seed:"), m_seed);
    form->addRow(QString(), m_greedy);
    top->addWidget(settings, 2);

    auto* outputs = new QHBoxLayout();
    auto output = [this, outputs](const QString& title, QLabel** label) {
        auto* box = new QGroupBox(this);
        auto* v = new QVBoxLayout(box);
        *label = new QLabel(title, box);
        QFont f = (*label)->font();
        f.setBold(true);
        (*label)->setFont(f);
        auto* edit = new QPlainTextEdit(box);
        edit->setReadOnly(true);
        v->addWidget(*label);
        v->addWidget(edit, 1);
        outputs->addWidget(box, 1);
        return edit;
    };
    m_base = output(tr("Base model"), &m_baseTitle);
    m_tuned = output(tr("Fine-tuned"), &m_tunedTitle);
    layout->addLayout(outputs, 1);

    connect(m_generate, &QPushButton::clicked, this, &PlaygroundPage::generate);
    connect(m_stop, &QPushButton::clicked, this, &PlaygroundPage::cancel);
    connect(m_greedy, &QCheckBox::toggled, this, [this](bool on) {
        for (QWidget* w : {static_cast<QWidget*>(m_temperature), static_cast<QWidget*>(m_topK),
                           static_cast<QWidget*>(m_topP), static_cast<QWidget*>(m_seed)})
            w->setEnabled(!on);
    });
    connect(&m_watcher, &QFutureWatcher<QString>::finished, this, [this] {
        const QString message = m_watcher.result();
        m_status->setText(message);
        m_generate->setEnabled(true);
        m_stop->setEnabled(false);
        Q_EMIT generationFinished(message);
    });
    connect(m_run, &QComboBox::currentIndexChanged, this, [this] {
        if (m_run->currentIndex() >= 0)
            m_state->setSelectedRun(m_run->currentData().toString());
    });
    connect(m_state, &StudioState::runsChanged, this, &PlaygroundPage::refreshRuns);
    connect(m_state, &StudioState::selectedRunChanged, this, &PlaygroundPage::refreshRuns);
    connect(m_state, &StudioState::configChanged, this, [this] {
        const int i = m_template->findData(QString::fromStdString(m_state->config().data.chatTemplate));
        if (i >= 0)
            m_template->setCurrentIndex(i);
    });
    const int i = m_template->findData(QString::fromStdString(m_state->config().data.chatTemplate));
    m_template->setCurrentIndex(std::max(0, i));
    refreshRuns();
}

PlaygroundPage::~PlaygroundPage()
{
    cancel();
    m_watcher.waitForFinished();
}

void PlaygroundPage::refreshRuns()
{
    const QSignalBlocker block(m_run);
    m_run->clear();
    m_run->addItem(tr("(none: base only)"), QString());
    for (const QString& dir : m_state->runs())
        m_run->addItem(QFileInfo(dir).fileName(), dir);
    m_run->setCurrentIndex(std::max(0, m_run->findData(m_state->selectedRun())));
}

void PlaygroundPage::setPrompt(const QString& prompt) { m_prompt->setPlainText(prompt); }
QString PlaygroundPage::baseText() const { return m_base->toPlainText(); }
QString PlaygroundPage::tunedText() const { return m_tuned->toPlainText(); }

void PlaygroundPage::cancel()
{
    if (m_cancel)
        *m_cancel = true;
}

void PlaygroundPage::appendToken(int side, const QString& text)
{
    QPlainTextEdit* edit = side == 0 ? m_base : m_tuned;
    edit->moveCursor(QTextCursor::End);
    edit->insertPlainText(text);
    ++m_tokens;
    Q_EMIT tokenArrived(side, text);
}

void PlaygroundPage::generate()
{
    if (busy())
        return;
    const QString modelPath = m_state->modelPath();
    const QString runDir = m_run->currentData().toString();
    if (modelPath.isEmpty()) {
        m_status->setText(tr("Open a model first."));
        return;
    }
    GenerateOptions options;
    options.maxNewTokens = m_maxTokens->value();
    options.greedy = m_greedy->isChecked();
    options.temperature = m_temperature->value();
    options.topK = m_topK->value();
    options.topP = m_topP->value();
    options.repetitionPenalty = m_repetition->value();
    options.seed = uint64_t(m_seed->value());
    const QString templateName = m_template->currentData().toString();
    const std::string prompt = m_prompt->toPlainText().toStdString();

    m_base->clear();
    m_tuned->clear();
    m_tokens = 0;
    m_tunedTitle->setText(runDir.isEmpty() ? tr("Fine-tuned (choose a run)") : tr("Fine-tuned: %1").arg(QFileInfo(runDir).fileName()));
    m_generate->setEnabled(false);
    m_stop->setEnabled(true);
    m_status->setText(tr("Loading models…"));
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    auto cancel = m_cancel;

    // Runs on a pool thread; widgets are touched only through queued calls back to the GUI thread.
    m_watcher.setFuture(QtConcurrent::run([this, modelPath, runDir, options, templateName, prompt, cancel]() -> QString {
        try {
            if (!m_baseModel || m_baseModelPath != modelPath) {
                m_baseModel = Model::load(modelPath.toStdString(), {"fp32", "auto"});
                m_baseModelPath = modelPath;
            }
            if (!runDir.isEmpty() && (!m_tunedModel || m_tunedModelRun != runDir)) {
                m_tunedModel = loadTunedModel(runDir.toStdString(), {"fp32", "auto"});
                m_tunedModelRun = runDir;
            }
            const auto tokenizer = loadTokenizer(modelPath.toStdString());
            std::string text = prompt;
            if (!templateName.isEmpty())
                if (auto family = parseChatTemplateName(templateName.toStdString()))
                    text = renderChatText(*family, {{"user", prompt}}, true);
            const std::vector<int32_t> ids = tokenizer->encode(text, true);
            QMetaObject::invokeMethod(this, [this] { m_status->setText(tr("Generating…")); }, Qt::QueuedConnection);
            QString summary;
            const std::pair<int, std::shared_ptr<Model>> sides[] = {{0, m_baseModel}, {1, runDir.isEmpty() ? nullptr : m_tunedModel}};
            for (const auto& [side, model] : sides) {
                if (!model || *cancel)
                    continue;
                const GenerateResult r = model->generate(ids, options, tokenizer.get(), [this, side, cancel](int32_t, const std::string& piece) {
                    if (!piece.empty()) {
                        const QString t = QString::fromStdString(piece);
                        QMetaObject::invokeMethod(this, [this, side, t] { appendToken(side, t); }, Qt::QueuedConnection);
                    }
                    return !cancel->load();
                });
                const double rate = r.decodeSeconds > 0 ? double(r.tokens.size()) / r.decodeSeconds : 0;
                summary += tr("%1: %2 tokens, %3 tok/s, stop: %4.  ")
                               .arg(side == 0 ? tr("base") : tr("fine-tuned"))
                               .arg(r.tokens.size())
                               .arg(rate, 0, 'f', 0)
                               .arg(QString::fromStdString(r.stopReason));
            }
            return summary.trimmed();
        } catch (const std::exception& e) {
            return tr("Error: %1").arg(QString::fromUtf8(e.what()));
        }
    }));
}

} // namespace tb
