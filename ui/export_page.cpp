// Export page: run, format (and GGUF dtype) choice, a worker running exportRun, and a tree of the
// checks' results; a reward-model run offers only its transformers classifier folder.
#include "export_page.h"

#include "job_pool.h"
#include "studio_state.h"

#include "export/export.h"
#include "export/gguf.h"
#include "memory/estimator.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "train/reward_scorer.h"
#include "train/run_store.h"
#include "train/tuned_model.h"
#include "util/file_util.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QStandardItem>
#include <QStandardItemModel>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>
#include <exception>

namespace tb {

namespace {

// A reward model's merged folder: transformers' *ForSequenceClassification with one label (the
// score), read back from its config.json.
void checkRewardFolder(const ExportReport& r, ExportOutcome& out)
{
    nlohmann::json config;
    try {
        config = nlohmann::json::parse(readFile(r.outDir + "/config.json"));
    } catch (const std::exception& e) {
        out.ok = false;
        out.message = QObject::tr("The exported folder has no readable config.json: %1")
                          .arg(QString::fromUtf8(e.what()));
        return;
    }
    QString architecture;
    if (config.contains("architectures") && config["architectures"].is_array() &&
        !config["architectures"].empty() && config["architectures"][0].is_string())
        architecture = QString::fromStdString(config["architectures"][0].get<std::string>());
    // As transformers reads it: num_labels, else the size of id2label, else its default of 2.
    int64_t labels = 2;
    if (config.contains("num_labels") && config["num_labels"].is_number_integer())
        labels = config["num_labels"].get<int64_t>();
    else if (config.contains("id2label") && config["id2label"].is_object())
        labels = int64_t(config["id2label"].size());
    const bool ok =
        architecture.endsWith(QStringLiteral("ForSequenceClassification")) && labels == 1;
    out.results << qMakePair(
        QObject::tr("Architecture (config.json), labels"),
        QStringLiteral("%1, %2 %3")
            .arg(architecture.isEmpty() ? QObject::tr("missing") : architecture)
            .arg(labels)
            .arg(ok ? QObject::tr("✔ a one-score reward model")
                    : QObject::tr("✘ not a one-label sequence classifier")));
    out.results << qMakePair(
        QObject::tr("Load with transformers"),
        QStringLiteral("AutoModelForSequenceClassification.from_pretrained(\"%1\")")
            .arg(QString::fromStdString(r.outDir)));
    out.ok = ok;
    if (!ok)
        out.message = QObject::tr("The exported folder is not a one-label sequence classifier.");
}

// Runs core's export; for a merged folder, also reloads it and compares its logits with the tuned
// model's; for a GGUF file, re-reads its header and checks the tensors and architecture it
// declares.
ExportOutcome runExport(const QString& runDir, const ExportOptions& options, bool reward)
{
    ExportOutcome out;
    try {
        const ExportReport r = exportRun(runDir.toStdString(), options);
        out.ok = true;
        out.results << qMakePair(QObject::tr("Format"), QString::fromStdString(r.format));
        out.results << qMakePair(QObject::tr("Checkpoint exported"),
                                 QString::fromStdString(r.checkpoint));
        out.results << qMakePair(QObject::tr("Tensors written"), QString::number(r.tensors));
        const bool gguf = r.format.starts_with("gguf");
        out.results << qMakePair(gguf ? QObject::tr("File") : QObject::tr("Folder"),
                                 QString::fromStdString(r.outDir));
        for (const std::string& f : r.files)
            out.files << QString::fromStdString(f);
        for (const std::string& n : r.notes)
            out.results << qMakePair(QObject::tr("Note"), QString::fromStdString(n));
        if (r.quantLossTokens > 0)
            out.results << qMakePair(
                QObject::tr("What merging the %1 base bakes in (loss on %2 validation tokens)")
                    .arg(QString::fromStdString(r.quant))
                    .arg(r.quantLossTokens),
                QObject::tr("%1 adapter on %2 → %3 merged (max |Δlogit| %4); %5 on the original "
                            "base (PEFT)")
                    .arg(r.lossAdapterQuantized, 0, 'f', 4)
                    .arg(QString::fromStdString(r.quant))
                    .arg(r.lossMerged, 0, 'f', 4)
                    .arg(r.logitsMaxDiff, 0, 'g', 3)
                    .arg(r.lossAdapterOriginal, 0, 'f', 4));
        if (reward) {
            checkRewardFolder(r, out);
        } else if (r.format == "merged") {
            out.results << qMakePair(QObject::tr("Largest change from base (max |Δw|)"),
                                     QString::number(r.maxAbsChange, 'g', 4));
            // The merged folder must behave like base + method: same logits on a short prompt.
            const auto merged = Model::load(r.outDir, {"fp32", "cpu"});
            const auto tuned = loadTunedModel(runDir.toStdString(), {"fp32", "cpu"});
            const auto ids = loadTokenizer(r.outDir)->encode("Once upon a time", true);
            const auto a = merged->logits(ids), b = tuned->logits(ids);
            double diff = 0;
            for (size_t i = 0; i < a.size() && i < b.size(); ++i)
                diff = std::max(diff, double(std::abs(a[i] - b[i])));
            const bool same = a.size() == b.size() && diff < 1e-3;
            out.results << qMakePair(
                QObject::tr("Reloaded merged model vs tuned model (max |Δlogit|)"),
                QStringLiteral("%1 %2")
                    .arg(diff, 0, 'g', 3)
                    .arg(same ? QObject::tr("✔ match") : QObject::tr("✘ differ")));
            out.ok = same;
            if (!same)
                out.message =
                    QObject::tr("The merged model's logits differ from the tuned model's.");
        } else if (gguf) {
            const bool adapter = r.format == "gguf-lora";
            out.results << qMakePair(adapter ? QObject::tr("LoRA factors dtype")
                                             : QObject::tr("Weights dtype (norms stay f32)"),
                                     QString::fromStdString(options.dtype));
            out.results << qMakePair(QObject::tr("File size"),
                                     QLocale().formattedDataSize(r.bytes));
            if (r.format != "gguf-base")
                out.results << qMakePair(QObject::tr("Largest change from base (max |Δw|)"),
                                         QString::number(r.maxAbsChange, 'g', 4));
            // The file must read back: GGUF v3, every tensor in bounds and aligned, an architecture
            // the export writes, and an adapter that says it is one.
            const GgufSummary s = readGgufSummary(r.outDir);
            const auto arch = s.metadata.find("general.architecture");
            const auto type = s.metadata.find("general.type");
            const bool knownArch =
                arch != s.metadata.end() && (arch->second == "llama" || arch->second == "qwen2" ||
                                             arch->second == "qwen3" || arch->second == "gpt2");
            const bool ok = static_cast<int64_t>(s.tensors.size()) == r.tensors && knownArch &&
                            (adapter == (type != s.metadata.end() && type->second == "adapter"));
            out.results << qMakePair(
                QObject::tr("Re-read header (GGUF v%1, %2 keys, %3 tensors, architecture %4)")
                    .arg(s.version)
                    .arg(s.metadata.size())
                    .arg(s.tensors.size())
                    .arg(arch != s.metadata.end() ? QString::fromStdString(arch->second)
                                                  : QObject::tr("missing")),
                ok ? QObject::tr("✔ valid") : QObject::tr("✘ inconsistent"));
            for (const std::string& w : r.warnings)
                out.results << qMakePair(QObject::tr("Note"), QString::fromStdString(w));
            if (r.lossTokens > 0)
                out.results << qMakePair(
                    QObject::tr("What Q8_0 costs (loss on %1 validation tokens)").arg(r.lossTokens),
                    QObject::tr("%1 fp32 → %2 Q8_0 (%3%4)")
                        .arg(r.lossFp32, 0, 'f', 4)
                        .arg(r.lossQuantized, 0, 'f', 4)
                        .arg(r.lossQuantized >= r.lossFp32 ? QStringLiteral("+") : QString())
                        .arg(r.lossQuantized - r.lossFp32, 0, 'f', 4));
            if (adapter)
                out.results << qMakePair(
                    QObject::tr("Use with the base model (format “GGUF base model”)"),
                    QStringLiteral("llama-cli -m base.gguf --lora %1")
                        .arg(QFileInfo(QString::fromStdString(r.outDir)).fileName()));
            out.ok = ok;
            if (!ok)
                out.message = QObject::tr("The GGUF file does not read back as written.");
        }
    } catch (const std::exception& e) {
        out.message = QString::fromUtf8(e.what());
    }
    return out;
}

}  // namespace

ExportPage::ExportPage(StudioState* state, QWidget* parent) : QWidget(parent), m_state(state)
{
    auto* layout = new QVBoxLayout(this);
    auto* box = new QGroupBox(tr("Export a run"), this);
    auto* form = new QFormLayout(box);
    m_run = new QComboBox(box);
    m_format = new QComboBox(box);
    m_format->addItem(tr("PEFT adapter (adapter_config.json + adapter_model.safetensors)"),
                      QStringLiteral("peft"));
    m_format->addItem(tr("Merged model (Hugging Face folder)"), QStringLiteral("merged"));
    m_format->addItem(tr("GGUF merged model (llama.cpp)"), QStringLiteral("gguf"));
    m_format->addItem(tr("GGUF LoRA adapter (llama.cpp --lora)"), QStringLiteral("gguf-lora"));
    m_format->addItem(tr("GGUF base model, for the adapter (llama.cpp)"),
                      QStringLiteral("gguf-base"));
    m_format->addItem(tr("Reward model (transformers)"), QStringLiteral("reward"));
    m_dtype = new QComboBox(box);
    m_dtype->addItem(tr("f32 (exact)"), QStringLiteral("f32"));
    m_dtype->addItem(tr("f16 (half the size)"), QStringLiteral("f16"));
    m_dtype->addItem(tr("bf16 (half the size)"), QStringLiteral("bf16"));
    m_dtype->addItem(tr("q8_0 (8-bit blocks, about a quarter; not for LoRA adapters)"),
                     QStringLiteral("q8_0"));
    auto* outRow = new QHBoxLayout();
    m_out = new QLineEdit(box);
    auto* browse = new QPushButton(tr("Browse…"), box);
    outRow->addWidget(m_out, 1);
    outRow->addWidget(browse);
    m_force = new QCheckBox(tr("Export even when the weights equal the base model's"), box);
    form->addRow(tr("Run:"), m_run);
    form->addRow(tr("Format:"), m_format);
    m_note = new QLabel(box);
    m_note->setWordWrap(true);
    m_note->hide();
    form->addRow(QString(), m_note);
    form->addRow(tr("GGUF weights:"), m_dtype);
    m_outLabel = new QLabel(tr("Output folder:"), box);
    form->addRow(m_outLabel, outRow);
    form->addRow(QString(), m_force);
    auto* buttons = new QHBoxLayout();
    m_export = new QPushButton(tr("Export"), box);
    m_status = new QLabel(box);
    m_status->setWordWrap(true);
    buttons->addWidget(m_export);
    buttons->addWidget(m_status, 1);
    form->addRow(buttons);
    layout->addWidget(box);

    auto* resultsBox = new QGroupBox(tr("Checks and results"), this);
    auto* v = new QVBoxLayout(resultsBox);
    m_results = new QStandardItemModel(0, 2, this);
    m_results->setHorizontalHeaderLabels({tr("Check"), tr("Result")});
    m_resultsView = new QTreeView(resultsBox);
    m_resultsView->setModel(m_results);
    m_resultsView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_resultsView->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    v->addWidget(m_resultsView);
    layout->addWidget(resultsBox, 1);

    connect(m_export, &QPushButton::clicked, this, &ExportPage::exportSelected);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path =
            m_format->currentData().toString().startsWith(QStringLiteral("gguf"))
                ? QFileDialog::getSaveFileName(this, tr("Export to GGUF file"), m_out->text(),
                                               tr("GGUF files (*.gguf)"))
                : QFileDialog::getExistingDirectory(this, tr("Export to folder"), m_out->text());
        if (!path.isEmpty())
            setOutputDir(path);
    });
    connect(m_out, &QLineEdit::textEdited, this, [this] { m_outEdited = true; });
    connect(m_run, &QComboBox::currentIndexChanged, this, &ExportPage::showFormats);
    connect(m_format, &QComboBox::currentIndexChanged, this, &ExportPage::suggestOutput);
    connect(m_state, &StudioState::runsChanged, this, &ExportPage::refreshRuns);
    connect(m_state, &StudioState::selectedRunChanged, this, &ExportPage::refreshRuns);
    connect(&m_watcher, &QFutureWatcher<ExportOutcome>::finished, this, [this] {
        m_outcome = m_watcher.result();
        showOutcome();
        m_export->setEnabled(true);
        Q_EMIT exportFinished(m_outcome.ok);
    });
    refreshRuns();
}

ExportPage::~ExportPage()
{
    m_watcher.waitForFinished();
}

void ExportPage::refreshRuns()
{
    {
        const QSignalBlocker block(m_run);
        m_run->clear();
        for (const QString& dir : m_state->runs())
            m_run->addItem(QFileInfo(dir).fileName(), dir);
        m_run->setCurrentIndex(std::max(0, m_run->findData(m_state->selectedRun())));
    }
    m_export->setEnabled(m_run->count() > 0 && !busy());
    if (m_run->count() == 0)
        m_status->setText(tr("Train a run first; its newest checkpoint is exported."));
    showFormats();
}

bool ExportPage::rewardRun(const QString& runDir)
{
    return isRewardRun(runDir.toStdString());
}

void ExportPage::showFormats()
{
    // A reward model is a scalar head on the base: a transformers sequence classifier, not an
    // adapter or a GGUF language model.
    m_reward = m_run->count() > 0 && rewardRun(m_run->currentData().toString());
    auto* model = qobject_cast<QStandardItemModel*>(m_format->model());
    const QString notForReward =
        tr("Not for a reward model: PEFT adapters, plain merged folders and GGUF files hold a "
           "language model, and their loaders (PEFT's causal LM, llama.cpp) drop the score head. "
           "Use “Reward model (transformers)”.");
    for (int i = 0; i < m_format->count(); ++i) {
        const bool rewardItem = m_format->itemData(i).toString() == QLatin1String("reward");
        const bool enabled = m_reward == rewardItem;
        if (QStandardItem* item = model ? model->item(i) : nullptr) {
            item->setEnabled(enabled);
            item->setToolTip(enabled      ? QString()
                             : rewardItem ? tr("Only for a reward-model run (objective “reward”).")
                                          : notForReward);
        }
    }
    if (!formatEnabled(m_format->currentData().toString())) {
        const QSignalBlocker block(m_format);
        m_format->setCurrentIndex(
            m_format->findData(m_reward ? QStringLiteral("reward") : QStringLiteral("peft")));
    }
    m_note->setVisible(m_reward);
    m_note->setText(
        m_reward ? tr("This run trained a reward model. It exports as a Hugging Face "
                      "transformers folder with a *ForSequenceClassification architecture and "
                      "one label: the base weights with the run's method merged in and the "
                      "trained score head. transformers' AutoModelForSequenceClassification loads "
                      "it; logits[:, 0] is the reward of a prompt and answer (higher is better). "
                      "%1")
                       .arg(notForReward)
                 : QString());
    suggestOutput();
}

bool ExportPage::formatEnabled(const QString& format) const
{
    const int i = m_format->findData(format);
    const auto* model = qobject_cast<const QStandardItemModel*>(m_format->model());
    return i >= 0 && (!model || model->item(i)->isEnabled());
}

void ExportPage::suggestOutput()
{
    const bool gguf = m_format->currentData().toString().startsWith(QStringLiteral("gguf"));
    m_dtype->setEnabled(gguf);
    m_outLabel->setText(gguf ? tr("Output file:") : tr("Output folder:"));
    if (m_outEdited || m_run->count() == 0)
        return;
    const QString run = m_run->currentData().toString();
    const QString format = m_format->currentData().toString();
    if (gguf)
        m_out->setText(run + QStringLiteral("/export-gguf/") + QFileInfo(run).fileName() +
                       (format == QStringLiteral("gguf") ? QString() : format.mid(4)) +
                       QStringLiteral(".gguf"));
    else
        m_out->setText(run + QStringLiteral("/export-") + format);
}

void ExportPage::setFormat(const QString& format)
{
    if (formatEnabled(format))
        m_format->setCurrentIndex(m_format->findData(format));
}

void ExportPage::setGgufDtype(const QString& dtype)
{
    m_dtype->setCurrentIndex(std::max(0, m_dtype->findData(dtype)));
}

void ExportPage::setOutputDir(const QString& dir)
{
    m_out->setText(dir);
    m_outEdited = true;
}

void ExportPage::exportSelected()
{
    if (busy() || m_run->count() == 0 || !formatEnabled(m_format->currentData().toString()))
        return;
    ExportOptions options;
    const bool reward = m_format->currentData().toString() == QLatin1String("reward");
    // Core writes a reward run's merged folder as a sequence classifier.
    options.format = reward ? "merged" : m_format->currentData().toString().toStdString();
    options.outDir = m_out->text().toStdString();
    options.force = m_force->isChecked();
    options.dtype = m_dtype->currentData().toString().toStdString();
    m_export->setEnabled(false);
    m_results->removeRows(0, m_results->rowCount());
    m_status->setText(tr("Exporting…"));
    m_watcher.setFuture(QtConcurrent::run(longJobPool(), runExport, m_run->currentData().toString(),
                                          options, reward));
}

void ExportPage::showOutcome()
{
    m_results->removeRows(0, m_results->rowCount());
    m_status->setText(m_outcome.ok ? tr("✔ Exported.") : tr("✘ %1").arg(m_outcome.message));
    m_status->setStyleSheet(m_outcome.ok ? QStringLiteral("color: #27ae60;")
                                         : QStringLiteral("color: #c0392b;"));
    for (const auto& [check, result] : m_outcome.results)
        m_results->appendRow({new QStandardItem(check), new QStandardItem(result)});
    if (!m_outcome.files.isEmpty()) {
        auto* files = new QStandardItem(tr("Files"));
        m_results->appendRow({files, new QStandardItem(QString::number(m_outcome.files.size()))});
        for (const QString& f : m_outcome.files)
            files->appendRow({new QStandardItem(QFileInfo(f).fileName()), new QStandardItem(f)});
        m_resultsView->expand(files->index());
    }
}

QString ExportPage::formatNote() const
{
    return m_note->isHidden() ? QString() : m_note->text();
}

}  // namespace tb
