// The synthetic-examples dialog and its job: seeds from the store, generation with the loaded
// model.
#include "synth_dialog.h"

#include "data_jobs.h"

#include "data/store/store.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace tb {

SynthDialog::SynthDialog(const QString& chatTemplate, qint64 selectedId, QWidget* parent)
    : QDialog(parent), m_selectedId(selectedId), m_chatTemplate(chatTemplate)
{
    setWindowTitle(tr("Generate synthetic examples"));
    auto* layout = new QVBoxLayout(this);
    auto* note =
        new QLabel(tr("The loaded model writes new examples from seed records. They are stored as "
                      "synthetic and pending review, with the seed's id in \"seed_id\"."),
                   this);
    note->setWordWrap(true);
    layout->addWidget(note);
    auto* form = new QFormLayout();
    m_seeds = new QComboBox(this);
    m_seeds->addItem(tr("accepted records"), QStringLiteral("accepted"));
    m_seeds->addItem(tr("pending records"), QStringLiteral("pending"));
    m_seeds->addItem(tr("all records"), QStringLiteral("all"));
    if (selectedId > 0)
        m_seeds->addItem(tr("the selected record (#%1)").arg(selectedId),
                         QStringLiteral("selected"));
    m_limit = new QSpinBox(this);
    m_limit->setRange(1, 100000);
    m_limit->setValue(20);
    m_perSeed = new QSpinBox(this);
    m_perSeed->setRange(1, 100);
    m_perSeed->setValue(2);
    m_maxTokens = new QSpinBox(this);
    m_maxTokens->setRange(1, 4096);
    m_maxTokens->setValue(64);
    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setRange(0, 2);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(0.8);
    m_temperature->setSpecialValueText(tr("greedy"));
    m_seed = new QSpinBox(this);
    m_seed->setRange(0, 1 << 30);
    m_template = new QPlainTextEdit(this);
    m_template->setPlaceholderText(
        tr("Optional, e.g. \"Write another question like: {instruction}\". Empty: answer "
           "each seed's prompt anew (the reply replaces its response)."));
    m_template->setMaximumHeight(80);
    form->addRow(tr("Seeds:"), m_seeds);
    form->addRow(tr("At most:"), m_limit);
    form->addRow(tr("Per seed:"), m_perSeed);
    form->addRow(tr("New tokens:"), m_maxTokens);
    form->addRow(tr("Temperature:"), m_temperature);
    form->addRow(tr("Random seed:"), m_seed);
    form->addRow(tr("Prompt template:"), m_template);
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Generate"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

SynthRequest SynthDialog::request(const QString& modelDir) const
{
    SynthRequest r;
    r.modelDir = modelDir;
    r.seeds = m_seeds->currentData().toString();
    r.selectedId = m_selectedId;
    r.limit = m_limit->value();
    r.options.perSeed = m_perSeed->value();
    r.options.promptTemplate = m_template->toPlainText().toStdString();
    // The run's template, when it names one; the model's own otherwise (plain when it has none).
    const std::string chat = m_chatTemplate.toStdString();
    const auto family = chatTemplateOrPlain(chat, modelDir.toStdString());
    r.options.chatTemplate =
        family ? chatTemplateName(*family) : chat;  // generateSynthetic names a bad one
    r.options.generate.maxNewTokens = m_maxTokens->value();
    r.options.generate.greedy = m_temperature->value() == 0;
    r.options.generate.temperature = m_temperature->value();
    r.options.generate.topP = 0.95;
    r.options.generate.seed = uint64_t(m_seed->value());
    return r;
}

bool runSynthetic(DataJobs* jobs, const SynthRequest& request,
                  const std::function<void(const SynthReport&)>& onDone)
{
    return jobs->run(
        QObject::tr("Generate synthetic examples"),
        [request, onDone](DataStore& store, const CurateProgress& progress) -> DataJobs::Finish {
            std::vector<int64_t> seeds;
            if (request.seeds == QLatin1String("selected")) {
                seeds.push_back(request.selectedId);
            } else {
                RecordQuery q;
                if (request.seeds != QLatin1String("all"))
                    q.status = parseReviewStatus(request.seeds.toStdString());
                q.synthetic = false;  // seeds are real examples
                q.limit = request.limit;
                seeds = store.recordIds(q);
            }
            progress("loading the model", 0);
            const auto model = Model::load(request.modelDir.toStdString());
            const auto tokenizer = loadTokenizer(request.modelDir.toStdString());
            SynthOptions o = request.options;
            o.who = "synthetic";
            const SynthReport report = generateSynthetic(
                store, *model, *tokenizer, seeds, o, [&progress](int64_t done, int64_t total) {
                    return !progress ||
                           progress("generating", total > 0 ? double(done) / double(total) : 1);
                });
            return [report, onDone] {
                if (onDone)
                    onDone(report);
            };
        });
}

}  // namespace tb
