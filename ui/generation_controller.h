// GenerationController: runs the Playground's generations (base, the base quantised when asked,
// then fine-tuned; or best-of-N samples ranked by a reward model) on a worker; tokens, status,
// rankings, how each model holds its weights and the models it loaded come back through an
// EventBuffer, drained on the GUI thread in batches.
#pragma once

#include "event_buffer.h"
#include "model/model.h"

#include <QFuture>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb {

// One generation's request: which model and run, the prompt already as the user typed it, the
// sampling.
struct GenerationRequest {
    QString modelPath;
    QString runDir;  // empty: base only
    // The base once more with its blocks' linear weights quantised as QLoRA holds them (side 2);
    // none: no third answer.
    QuantOptions baseQuant;
    QString chatTemplate;  // empty: raw text
    std::string prompt;
    GenerateOptions options;
};

// Best-of-N: N sampled answers to the request's prompt (seeds seed, seed + 1, ...) from the run's
// model (the base when it names none), each scored by a reward-model run.
struct BestOfNRequest {
    GenerationRequest generation;
    QString rewardRun;
    int n = 4;  // 2-16
};

// One sampled answer and its reward (higher is preferred).
struct RankedAnswer {
    int sample = 0;  // 0-based: drawn with seed + sample
    std::string text;
    double score = 0;
    std::string stopReason;
};

// Sides of the Playground's answers.
enum GenerationSide { kBaseSide = 0, kTunedSide = 1, kQuantizedBaseSide = 2 };

// Everything the worker reported since the last drain.
struct GenerationBatch {
    // (side, text) in order; side 0: base, 1: fine-tuned, 2: the base quantised
    std::vector<std::pair<int, std::string>> pieces;
    std::optional<QString> status;  // the latest status line
    // (side, how its model holds its weights: describeWeights), before its first piece.
    std::vector<std::pair<int, QString>> weights;
    // Models the worker loaded, handed to the controller (which caches them for the next request).
    std::shared_ptr<Model> baseModel, tunedModel, quantizedModel;
    QString baseModelPath, tunedModelRun, quantizedModelPath;
    QuantOptions quantizedModelOptions;
    std::optional<QString> finished;   // the summary, or "Error: ..."
    std::vector<RankedAnswer> ranked;  // best-of-N: the answers, best first (with `finished`)
};

class GenerationController : public QObject {
    Q_OBJECT
public:
    explicit GenerationController(QObject* parent = nullptr);
    ~GenerationController() override;  // cancels and waits for the worker

    // False when a generation is running.
    bool start(const GenerationRequest& request);
    // Samples, then scores with core's RewardScorer, all on the worker; the ranking arrives with
    // `finished`. False when a generation is running.
    bool startBestOfN(const BestOfNRequest& request);
    void cancel();
    bool busy() const { return m_busy; }
    int drains() const { return m_events.drains(); }

Q_SIGNALS:
    void
    batchArrived(const tb::GenerationBatch& batch);  // pieces and status; `finished` last of all
    void finished(const QString& message);

private:
    void drain(GenerationBatch&& batch);

    EventBuffer<GenerationBatch> m_events;
    QFuture<void> m_future;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    bool m_busy = false;
    // Loaded models, reused while their source is unchanged; written only here, on the GUI thread,
    // from a drained batch; the (single) worker gets its own reference with the request.
    std::shared_ptr<Model> m_baseModel, m_tunedModel, m_quantizedModel;
    QString m_baseModelPath, m_tunedModelRun, m_quantizedModelPath;
    QuantOptions m_quantizedModelOptions;
};

}  // namespace tb

Q_DECLARE_METATYPE(tb::GenerationBatch)
