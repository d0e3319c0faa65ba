// EvalController: runs the Evaluate page's work on a worker thread: an evaluation (the base model
// alone, or the base model and runs compared on the same held-out cases) or a regression suite.
// Progress, status and the outcome come back through an EventBuffer (ui/'s one worker pattern),
// drained on the GUI thread in ~40 ms batches; Cancel makes the progress callback return false.
#pragma once

#include "eval/evaluate.h"
#include "eval/scorecard.h"
#include "eval/suite.h"
#include "event_buffer.h"
#include "train/evaluate_run.h"

#include <QFuture>
#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace tb {

// One evaluation: the base model alone (no runs) or with the runs, on one held-out set.
struct EvalRequest {
    QString baseModel;     // model folder (empty: the first run's base model)
    QStringList runs;      // run folders; empty: the base model alone
    QString chatTemplate;  // the base model alone: a template name ("model", "alpaca", ...)
    EvalDataSource data;   // data.run empty and no file/store: the first run's validation split
    eval::EvalSettings settings;
    // Comparisons: the base model once per entry, its weights held as the entry says (empty: once,
    // as stored); e.g. {none, nf4 double} puts the quantised base beside the base and the runs.
    std::vector<QuantOptions> bases;
    // Where the results go: empty: RUN/eval/compare-<time> for a comparison (the first run),
    // runsFolder/eval/base-<time> for the base model alone.
    QString outDir;
    QString runsFolder;
};

// What an evaluation produced (shared read-only with the page once it finished).
struct EvalOutcome {
    std::optional<eval::Scorecard> scorecard;  // the base model and one or more runs
    std::vector<eval::EvalResult> results;     // per system, the base model first
    QStringList labels;                        // per system
    QString dir;                               // the folder written
    QStringList warnings;                      // rows the importer skipped
};

struct SuiteRequest {
    QString runDir;
    QString suiteFile;
    int maxNewTokens = 128;
    int batch = 8;
    bool skipBase = false;
    QString outDir;  // empty: RUN/eval/suite-<time>
};

struct SuiteOutcome {
    eval::SuiteReport report;
    QString runDir;
    QString dir;  // suite.json and suite.md
};

// Everything the worker reported since the last drain.
struct EvalBatch {
    std::optional<std::pair<qint64, qint64>> progress;  // the latest (done, total) cases
    std::optional<QString> status;                      // the latest status line
    struct Finish {
        bool ok = false;
        bool cancelled = false;
        QString message;
        std::shared_ptr<const EvalOutcome> evaluation;
        std::shared_ptr<const SuiteOutcome> suite;
    };
    std::optional<Finish> finished;
};

class EvalController : public QObject {
    Q_OBJECT
public:
    enum class Task { None, Evaluation, Suite };

    explicit EvalController(QObject* parent = nullptr);
    ~EvalController() override;  // cancels and waits for the worker

    // False when work is running.
    bool startEvaluation(const EvalRequest& request);
    bool startSuite(const SuiteRequest& request);
    // An evaluation stops after the batch in flight; a suite (which reports no progress) finishes,
    // and its result is dropped.
    void cancel();
    bool busy() const { return m_task != Task::None; }
    Task task() const { return m_task; }
    int drains() const { return m_events.drains(); }

    std::shared_ptr<const EvalOutcome> lastEvaluation() const { return m_evaluation; }
    std::shared_ptr<const SuiteOutcome> lastSuite() const { return m_suite; }

Q_SIGNALS:
    void progress(qint64 done, qint64 total);
    void status(const QString& line);
    // After the outcome is stored (lastEvaluation / lastSuite); cancelled: ok is false.
    void evaluationFinished(bool ok, bool cancelled, const QString& message);
    void suiteFinished(bool ok, bool cancelled, const QString& message);

private:
    bool launch(Task task, std::function<void(const std::atomic<bool>&)> work);
    void drain(EvalBatch&& batch);

    EventBuffer<EvalBatch> m_events;
    QFuture<void> m_future;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    Task m_task = Task::None;
    std::shared_ptr<const EvalOutcome> m_evaluation;
    std::shared_ptr<const SuiteOutcome> m_suite;
};

// The worker's steps as plain functions (no Qt event loop). The progress callback returns false
// to cancel: then nullptr, and nothing written (a suite asks once more after its last case).
// Errors throw tb::Error.
std::shared_ptr<EvalOutcome> runEvaluation(const EvalRequest& request,
                                           const eval::EvalProgress& progress);
std::shared_ptr<SuiteOutcome> runSuiteRequest(const SuiteRequest& request,
                                              const eval::EvalProgress& progress = {});

}  // namespace tb
