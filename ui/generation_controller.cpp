// GenerationController: a QtConcurrent worker that loads (or reuses) the models and streams their
// tokens into an EventBuffer; the drain caches the loaded models and hands the pages one batch.
#include "generation_controller.h"
#include "job_pool.h"

#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "train/reward_scorer.h"
#include "train/tuned_model.h"

#include <QFileInfo>

#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>

namespace tb {

namespace {

// The prompt's ids: raw text, or the prompt as a user message in the chat template (the model's
// own or a family), stopping at the template's end-of-turn tokens as well as EOS.
std::vector<int32_t> promptIds(const GenerationRequest& request, const Tokenizer& tokenizer,
                               GenerateOptions& options)
{
    if (request.chatTemplate.isEmpty())
        return tokenizer.encode(request.prompt, true);
    const std::string name = request.chatTemplate.toStdString();
    const auto chat = chatTemplateByName(name, request.modelPath.toStdString());
    if (!chat)
        throw Error("unknown chat template '" + name + "'");
    options.stopTokenIds = chatStopIds(*chat, tokenizer);
    return chatPromptIds(*chat, tokenizer,
                         jinja::Value::array({{{"role", "user"}, {"content", request.prompt}}}));
}

// The models a request needs: the controller's cached ones, the others loaded here (and handed
// back through `events` for the cache). Stop is checked between loads (a load itself runs to its
// end): a stopped request loads no further model.
struct SideModels {
    std::shared_ptr<Model> base, quantized, tuned;
};

void loadSides(const GenerationRequest& request, SideModels& m, const std::atomic<bool>& cancel,
               EventBuffer<GenerationBatch>* events)
{
    const std::string path = request.modelPath.toStdString();
    if (!m.base && !cancel) {
        m.base = Model::load(path, {"fp32", "auto", {}});
        events->add([&](GenerationBatch& b) {
            b.baseModel = m.base;
            b.baseModelPath = request.modelPath;
        });
    }
    if (request.baseQuant.enabled() && !m.quantized && !cancel) {
        events->add([&](GenerationBatch& b) {
            b.status = GenerationController::tr("Loading the base in %1…")
                           .arg(QString::fromStdString(quantDescription(request.baseQuant)));
        });
        m.quantized = Model::load(path, {"fp32", "auto", request.baseQuant});
        events->add([&](GenerationBatch& b) {
            b.quantizedModel = m.quantized;
            b.quantizedModelPath = request.modelPath;
            b.quantizedModelOptions = request.baseQuant;
        });
    }
    if (!request.runDir.isEmpty() && !m.tuned && !cancel) {
        m.tuned = loadTunedModel(request.runDir.toStdString(), {"fp32", "auto", {}});
        events->add([&](GenerationBatch& b) {
            b.tunedModel = m.tuned;
            b.tunedModelRun = request.runDir;
        });
    }
}

QString sideName(int side, const GenerationRequest& request)
{
    if (side == kQuantizedBaseSide)
        return GenerationController::tr("base %1").arg(
            QString::fromStdString(quantDescription(request.baseQuant)));
    return side == kBaseSide ? GenerationController::tr("base")
                             : GenerationController::tr("fine-tuned");
}

// The worker: everything it learns goes into `events`; it returns when every side is done or
// cancelled. Sides answer in the order of the columns: base, base quantised, fine-tuned.
void runGeneration(const GenerationRequest& request, SideModels models,
                   const std::shared_ptr<std::atomic<bool>>& cancel,
                   EventBuffer<GenerationBatch>* events)
{
    try {
        loadSides(request, models, *cancel, events);
        if (*cancel) {
            events->add(
                [](GenerationBatch& b) { b.finished = GenerationController::tr("Cancelled."); });
            return;
        }
        const auto tokenizer = loadTokenizer(request.modelPath.toStdString());
        GenerateOptions options = request.options;
        const std::vector<int32_t> ids = promptIds(request, *tokenizer, options);
        events->add([](GenerationBatch& b) { b.status = GenerationController::tr("Generating…"); });
        QString summary;
        const std::pair<int, std::shared_ptr<Model>> sides[] = {
            {kBaseSide, models.base},
            {kQuantizedBaseSide, request.baseQuant.enabled() ? models.quantized : nullptr},
            {kTunedSide, request.runDir.isEmpty() ? nullptr : models.tuned}};
        for (const auto& [side, model] : sides) {
            if (!model || *cancel)
                continue;
            const int s = side;
            const QString weights =
                QString::fromStdString(describeWeights(model->weightFootprint()));
            events->add([&](GenerationBatch& b) { b.weights.emplace_back(s, weights); });
            const GenerateResult r = model->generate(
                ids, options, tokenizer.get(), [&](int32_t, const std::string& piece) {
                    if (!piece.empty())
                        events->add([&](GenerationBatch& b) { b.pieces.emplace_back(s, piece); });
                    return !cancel->load();
                });
            const double rate = r.decodeSeconds > 0 ? double(r.tokens.size()) / r.decodeSeconds : 0;
            summary += GenerationController::tr("%1: %2 tokens, %3 tok/s, stop: %4.  ")
                           .arg(sideName(side, request))
                           .arg(r.tokens.size())
                           .arg(rate, 0, 'f', 0)
                           .arg(QString::fromStdString(r.stopReason));
        }
        events->add([&](GenerationBatch& b) { b.finished = summary.trimmed(); });
    } catch (const std::exception& e) {
        // A load stopped by Stop is a cancel, not an error.
        const QString message =
            *cancel ? GenerationController::tr("Cancelled.")
                    : GenerationController::tr("Error: %1").arg(QString::fromUtf8(e.what()));
        events->add([&](GenerationBatch& b) { b.finished = message; });
    }
}

// Best-of-N on the worker: N samples from the run's model (streamed to side 1, one answer after
// another), then one RewardScorer over all of them; the ranking comes with `finished`.
void runBestOfN(const BestOfNRequest& request, std::shared_ptr<Model> base,
                std::shared_ptr<Model> tuned, const std::shared_ptr<std::atomic<bool>>& cancel,
                EventBuffer<GenerationBatch>* events)
{
    const GenerationRequest& g = request.generation;
    try {
        std::shared_ptr<Model> model = g.runDir.isEmpty() ? base : tuned;
        if (!model && g.runDir.isEmpty()) {
            model = Model::load(g.modelPath.toStdString(), {"fp32", "auto", {}});
            events->add([&](GenerationBatch& b) {
                b.baseModel = model;
                b.baseModelPath = g.modelPath;
            });
        } else if (!model) {
            model = loadTunedModel(g.runDir.toStdString(), {"fp32", "auto", {}});
            events->add([&](GenerationBatch& b) {
                b.tunedModel = model;
                b.tunedModelRun = g.runDir;
            });
        }
        const auto tokenizer = loadTokenizer(g.modelPath.toStdString());
        GenerateOptions options = g.options;
        options.greedy = false;  // N greedy answers would be one answer N times
        const std::vector<int32_t> ids = promptIds(g, *tokenizer, options);
        std::vector<RankedAnswer> answers;
        for (int i = 0; i < request.n && !*cancel; ++i) {
            events->add([&](GenerationBatch& b) {
                b.status =
                    GenerationController::tr("Sampling answer %1 of %2…").arg(i + 1).arg(request.n);
                if (i > 0)
                    b.pieces.emplace_back(1, "\n\n");
            });
            options.seed = g.options.seed + uint64_t(i);
            const GenerateResult r = model->generate(
                ids, options, tokenizer.get(), [&](int32_t, const std::string& piece) {
                    if (!piece.empty())
                        events->add([&](GenerationBatch& b) { b.pieces.emplace_back(1, piece); });
                    return !cancel->load();
                });
            answers.push_back({i, r.text, 0.0, r.stopReason});
        }
        if (*cancel) {
            events->add(
                [](GenerationBatch& b) { b.finished = GenerationController::tr("Cancelled."); });
            return;
        }
        events->add([](GenerationBatch& b) {
            b.status = GenerationController::tr("Scoring with the reward model…");
        });
        // The reward run renders prompt + answer with its own template; a raw-text prompt stays
        // plain text.
        const std::vector<ChatMessage> prompt = {
            {g.chatTemplate.isEmpty() ? "text" : "user", g.prompt}};
        std::vector<std::string> texts;
        for (const RankedAnswer& a : answers)
            texts.push_back(a.text);
        const RewardScorer scorer(request.rewardRun.toStdString());
        const std::vector<double> scores = scorer.score(prompt, texts);
        for (size_t i = 0; i < answers.size() && i < scores.size(); ++i)
            answers[i].score = scores[i];
        std::stable_sort(
            answers.begin(), answers.end(),
            [](const RankedAnswer& a, const RankedAnswer& b) { return a.score > b.score; });
        const QString summary =
            GenerationController::tr("%1 answers ranked by %2; best: sample %3 (reward %4).")
                .arg(answers.size())
                .arg(QFileInfo(request.rewardRun).fileName())
                .arg(answers.front().sample + 1)
                .arg(answers.front().score, 0, 'f', 3);
        events->add([&](GenerationBatch& b) {
            b.ranked = answers;
            b.finished = summary;
        });
    } catch (const std::exception& e) {
        const QString message =
            *cancel ? GenerationController::tr("Cancelled.")
                    : GenerationController::tr("Error: %1").arg(QString::fromUtf8(e.what()));
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
    SideModels models;
    models.base = m_baseModelPath == request.modelPath ? m_baseModel : nullptr;
    models.tuned = m_tunedModelRun == request.runDir ? m_tunedModel : nullptr;
    if (m_quantizedModelPath == request.modelPath && m_quantizedModelOptions == request.baseQuant)
        models.quantized = m_quantizedModel;
    m_future =
        QtConcurrent::run(longJobPool(), [request, models, cancel = m_cancel, events = &m_events] {
            const LoadStopGuard stopLoads(cancel.get());  // Stop or closing: no waiting on a load
            runGeneration(request, models, cancel, events);
        });
    return true;
}

bool GenerationController::startBestOfN(const BestOfNRequest& request)
{
    if (m_busy)
        return false;
    m_future.waitForFinished();
    m_events.discard();
    m_busy = true;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    const GenerationRequest& g = request.generation;
    std::shared_ptr<Model> base = m_baseModelPath == g.modelPath ? m_baseModel : nullptr;
    std::shared_ptr<Model> tuned = m_tunedModelRun == g.runDir ? m_tunedModel : nullptr;
    m_future = QtConcurrent::run(longJobPool(),
                                 [request, base, tuned, cancel = m_cancel, events = &m_events] {
                                     const LoadStopGuard stopLoads(cancel.get());
                                     runBestOfN(request, base, tuned, cancel, events);
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
    if (batch.quantizedModel) {
        m_quantizedModel = batch.quantizedModel;
        m_quantizedModelPath = batch.quantizedModelPath;
        m_quantizedModelOptions = batch.quantizedModelOptions;
    }
    if (batch.finished)
        m_busy = false;
    Q_EMIT batchArrived(batch);
    if (batch.finished)
        Q_EMIT finished(*batch.finished);
}

}  // namespace tb
