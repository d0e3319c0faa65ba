// GenerationController: a QtConcurrent worker that loads (or reuses) the models and streams their
// tokens into an EventBuffer; the drain caches the loaded models and hands the pages one batch.
#include "generation_controller.h"

#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "train/tuned_model.h"

#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace tb {

namespace {

// The worker: everything it learns goes into `events`; it returns when both sides are done or
// cancelled.
void runGeneration(const GenerationRequest& request, std::shared_ptr<Model> base,
                   std::shared_ptr<Model> tuned, const std::shared_ptr<std::atomic<bool>>& cancel,
                   EventBuffer<GenerationBatch>* events)
{
    try {
        if (!base) {
            base = Model::load(request.modelPath.toStdString(), {"fp32", "auto"});
            events->add([&](GenerationBatch& b) {
                b.baseModel = base;
                b.baseModelPath = request.modelPath;
            });
        }
        if (!request.runDir.isEmpty() && !tuned) {
            tuned = loadTunedModel(request.runDir.toStdString(), {"fp32", "auto"});
            events->add([&](GenerationBatch& b) {
                b.tunedModel = tuned;
                b.tunedModelRun = request.runDir;
            });
        }
        const auto tokenizer = loadTokenizer(request.modelPath.toStdString());
        std::vector<int32_t> ids;
        GenerateOptions options = request.options;
        if (request.chatTemplate.isEmpty()) {
            ids = tokenizer->encode(request.prompt, true);
        } else {
            // The prompt as a user message in the chat template (the model's own or a family),
            // stopping at the template's end-of-turn tokens as well as EOS.
            const std::string name = request.chatTemplate.toStdString();
            const auto chat = chatTemplateByName(name, request.modelPath.toStdString());
            if (!chat)
                throw Error("unknown chat template '" + name + "'");
            ids = chatPromptIds(
                *chat, *tokenizer,
                jinja::Value::array({{{"role", "user"}, {"content", request.prompt}}}));
            options.stopTokenIds = chatStopIds(*chat, *tokenizer);
        }
        events->add([](GenerationBatch& b) { b.status = GenerationController::tr("Generating…"); });
        QString summary;
        const std::pair<int, std::shared_ptr<Model>> sides[] = {
            {0, base}, {1, request.runDir.isEmpty() ? nullptr : tuned}};
        for (const auto& [side, model] : sides) {
            if (!model || *cancel)
                continue;
            const int s = side;
            const GenerateResult r = model->generate(
                ids, options, tokenizer.get(), [&](int32_t, const std::string& piece) {
                    if (!piece.empty())
                        events->add([&](GenerationBatch& b) { b.pieces.emplace_back(s, piece); });
                    return !cancel->load();
                });
            const double rate = r.decodeSeconds > 0 ? double(r.tokens.size()) / r.decodeSeconds : 0;
            summary += GenerationController::tr("%1: %2 tokens, %3 tok/s, stop: %4.  ")
                           .arg(side == 0 ? GenerationController::tr("base")
                                          : GenerationController::tr("fine-tuned"))
                           .arg(r.tokens.size())
                           .arg(rate, 0, 'f', 0)
                           .arg(QString::fromStdString(r.stopReason));
        }
        events->add([&](GenerationBatch& b) { b.finished = summary.trimmed(); });
    } catch (const std::exception& e) {
        const QString message =
            GenerationController::tr("Error: %1").arg(QString::fromUtf8(e.what()));
        events->add([&](GenerationBatch& b) { b.finished = message; });
    }
}

}  // namespace

GenerationController::GenerationController(QObject* parent)
    : QObject(parent), m_events(this, [this](GenerationBatch&& b) { drain(std::move(b)); })
{
    qRegisterMetaType<tb::GenerationBatch>();
}

GenerationController::~GenerationController()
{
    cancel();
    m_future.waitForFinished();  // the worker adds to m_events until it returns
}

bool GenerationController::start(const GenerationRequest& request)
{
    if (m_busy)
        return false;
    m_future.waitForFinished();  // the last worker has reported `finished`; it is returning
    m_events.discard();
    m_busy = true;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    // The worker gets the cached models by value; what it loads comes back through the buffer.
    std::shared_ptr<Model> base = m_baseModelPath == request.modelPath ? m_baseModel : nullptr;
    std::shared_ptr<Model> tuned = m_tunedModelRun == request.runDir ? m_tunedModel : nullptr;
    m_future = QtConcurrent::run([request, base, tuned, cancel = m_cancel, events = &m_events] {
        runGeneration(request, base, tuned, cancel, events);
    });
    return true;
}

void GenerationController::cancel()
{
    if (m_cancel)
        *m_cancel = true;
}

void GenerationController::drain(GenerationBatch&& batch)
{
    if (batch.baseModel) {
        m_baseModel = batch.baseModel;
        m_baseModelPath = batch.baseModelPath;
    }
    if (batch.tunedModel) {
        m_tunedModel = batch.tunedModel;
        m_tunedModelRun = batch.tunedModelRun;
    }
    if (batch.finished)
        m_busy = false;
    Q_EMIT batchArrived(batch);
    if (batch.finished)
        Q_EMIT finished(*batch.finished);
}

}  // namespace tb
