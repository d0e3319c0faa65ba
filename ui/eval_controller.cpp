// EvalController: a QtConcurrent worker that evaluates (core's compareRuns or evaluateLoaded) or
// runs a regression suite (runSuiteOnRun), writes the results folder as the CLI does, and reports
// through an EventBuffer; the drain stores the outcome and tells the page.
#include "eval_controller.h"
#include "job_pool.h"

#include "eval/terminology.h"
#include "model/model.h"
#include "tokenizer/model_template.h"
#include "util/error.h"
#include "util/file_util.h"

#include <QDateTime>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace tb {

namespace {

std::string stamp()
{
    return QDateTime::currentDateTimeUtc()
        .toString(QStringLiteral("yyyyMMdd-HHmmss"))
        .toStdString();
}

// The base model alone: its own chat template, or the one named (the project's choice).
std::shared_ptr<EvalOutcome> evaluateBase(const EvalRequest& request, const EvalCases& cases,
                                          const eval::EvalProgress& progress)
{
    const std::string modelDir = request.baseModel.toStdString();
    std::shared_ptr<const ChatTemplate> chat;
    const std::string name = request.chatTemplate.toStdString();
    if (!name.empty() && name != "model") {
        auto t = chatTemplateByName(name, modelDir);
        if (!t)
            fail("unknown chat template '", name, "'");
        chat = std::make_shared<const ChatTemplate>(std::move(*t));
    }
    const EvalModel model = loadModelForEval(modelDir, chat);
    eval::EvalResult r = evaluateLoaded(model, cases, request.settings, progress);
    if (r.cancelled)
        return nullptr;
    auto out = std::make_shared<EvalOutcome>();
    std::string dir = request.outDir.toStdString();
    if (dir.empty())
        dir = joinPath(joinPath(request.runsFolder.toStdString(), "eval"), "base-" + stamp());
    r.name = "base";
    eval::writeEvalResult(r, dir);
    out->dir = QString::fromStdString(dir);
    out->labels << QStringLiteral("base");
    out->results.push_back(std::move(r));
    return out;
}

}  // namespace

std::shared_ptr<EvalOutcome> runEvaluation(const EvalRequest& given,
                                           const eval::EvalProgress& progress)
{
    EvalRequest request = given;
    eval::EvalSettings& settings = request.settings;
    if (!settings.glossaryPath.empty() && settings.metricOptions.glossary.empty())
        settings.metricOptions.glossary = eval::loadGlossary(settings.glossaryPath);
    eval::buildMetrics(settings.metrics, settings.metricOptions);  // before loading any model
    std::vector<std::string> runs;
    for (const QString& r : request.runs)
        runs.push_back(r.toStdString());
    EvalDataSource source = request.data;
    if (source.file.empty() && source.store.empty() && source.run.empty() && !runs.empty())
        source.run = runs.front();
    const EvalCases cases = loadEvalCases(source);
    QStringList warnings;
    for (const std::string& w : cases.warnings)
        warnings << QString::fromStdString(w);
    if (runs.empty()) {
        if (request.baseModel.isEmpty())
            fail("evaluation: open a model or choose a run");
        auto out = evaluateBase(request, cases, progress);
        if (out)
            out->warnings = warnings;
        return out;
    }
    bool cancelled = false;
    auto step = [&](int64_t done, int64_t total) {
        cancelled = !progress(done, total);
        return !cancelled;
    };
    const std::string base =
        request.baseModel.isEmpty() ? runBaseModel(runs.front()) : request.baseModel.toStdString();
    auto out = std::make_shared<EvalOutcome>();
    try {
        out->scorecard =
            compareRuns(base, runs, cases, request.settings, step, &out->results, request.bases);
    } catch (const std::exception&) {
        if (cancelled)
            return nullptr;  // compareRuns stops with an error once the callback says so
        throw;
    }
    std::string dir = request.outDir.toStdString();
    if (dir.empty())
        dir = runEvalDir(runs.front(), "compare-" + stamp());
    eval::writeScorecard(*out->scorecard, dir);
    for (size_t i = 0; i < out->results.size(); ++i) {
        out->results[i].name = out->scorecard->systems[i].label;
        eval::writeEvalResult(out->results[i], joinPath(dir, "system-" + std::to_string(i)));
        out->labels << QString::fromStdString(out->scorecard->systems[i].label);
    }
    out->dir = QString::fromStdString(dir);
    out->warnings = warnings;
    return out;
}

std::shared_ptr<SuiteOutcome> runSuiteRequest(const SuiteRequest& request,
                                              const eval::EvalProgress& progress)
{
    const std::vector<eval::SuiteCase> suite = eval::readSuite(request.suiteFile.toStdString());
    auto out = std::make_shared<SuiteOutcome>();
    const std::string run = request.runDir.toStdString();
    out->report = runSuiteOnRun(run, suite, request.maxNewTokens, request.batch, request.skipBase,
                                "auto", progress);
    // A cancel heard after the last case: nothing written, as for one heard before it.
    const int64_t steps = int64_t(suite.size()) * (request.skipBase ? 1 : 2);
    if (progress && !progress(steps, steps))
        return nullptr;
    std::string dir = request.outDir.toStdString();
    if (dir.empty())
        dir = runEvalDir(run, "suite-" + stamp());
    makeDirectories(dir);
    writeFileAtomic(joinPath(dir, "suite.json"), toJson(out->report).dump(2) + "\n");
    writeFileAtomic(joinPath(dir, "suite.md"), eval::suiteMarkdown(out->report));
    out->runDir = request.runDir;
    out->dir = QString::fromStdString(dir);
    return out;
}

EvalController::EvalController(QObject* parent)
    : QObject(parent), m_events(this, [this](EvalBatch&& b) { drain(std::move(b)); })
{
}

EvalController::~EvalController()
{
    cancel();
    m_future.waitForFinished();  // the worker adds to m_events until it returns
}

bool EvalController::launch(Task task, std::function<void(const std::atomic<bool>&)> work)
{
    if (busy())
        return false;
    m_future.waitForFinished();  // the last worker has reported `finished`; it is returning
    m_events.discard();
    m_task = task;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_future = QtConcurrent::run(longJobPool(), [work = std::move(work), cancel = m_cancel] {
        // Cancel or closing stops a model load between tensors.
        const LoadStopGuard stopLoads(cancel.get());
        work(*cancel);
    });
    return true;
}

bool EvalController::startEvaluation(const EvalRequest& request)
{
    EventBuffer<EvalBatch>* events = &m_events;
    return launch(Task::Evaluation, [request, events](const std::atomic<bool>& cancel) {
        EvalBatch::Finish f;
        try {
            events->add([](EvalBatch& b) { b.status = EvalController::tr("Loading models…"); });
            auto progress = [&](int64_t done, int64_t total) {
                events->add([&](EvalBatch& b) {
                    b.progress = std::pair<qint64, qint64>(done, total);
                    b.status = EvalController::tr("Answered %1 of %2 cases").arg(done).arg(total);
                });
                return !cancel.load();
            };
            f.evaluation = runEvaluation(request, progress);
            f.cancelled = !f.evaluation;
            f.ok = !f.cancelled;
            f.message = f.cancelled
                            ? EvalController::tr("Evaluation cancelled.")
                            : EvalController::tr("Evaluated; results in %1").arg(f.evaluation->dir);
        } catch (const std::exception& e) {
            f.cancelled = cancel.load();
            f.message = f.cancelled
                            ? EvalController::tr("Evaluation cancelled.")
                            : EvalController::tr("Error: %1").arg(QString::fromUtf8(e.what()));
        }
        events->add([&](EvalBatch& b) { b.finished = f; });
    });
}

bool EvalController::startSuite(const SuiteRequest& request)
{
    EventBuffer<EvalBatch>* events = &m_events;
    return launch(Task::Suite, [request, events](const std::atomic<bool>& cancel) {
        EvalBatch::Finish f;
        try {
            events->add([](EvalBatch& b) {
                b.status = EvalController::tr("Running the suite on the base and tuned models…");
            });
            auto progress = [&](int64_t done, int64_t total) {
                events->add([&](EvalBatch& b) {
                    b.progress = std::pair<qint64, qint64>(done, total);
                    b.status = EvalController::tr("Checked %1 of %2 cases").arg(done).arg(total);
                });
                return !cancel.load();
            };
            f.suite = runSuiteRequest(request, progress);
            f.cancelled = !f.suite;
            f.ok = !f.cancelled;
            f.message = f.cancelled ? EvalController::tr("Suite cancelled.")
                        : f.suite->report.gateFailed()
                            ? EvalController::tr("The gate fails: %1 regressions, %2 required "
                                                 "cases failing.")
                                  .arg(f.suite->report.regressions)
                                  .arg(f.suite->report.requiredFailed)
                            : EvalController::tr("The gate passes.");
        } catch (const std::exception& e) {
            f.cancelled = cancel.load();
            f.message = f.cancelled
                            ? EvalController::tr("Suite cancelled.")
                            : EvalController::tr("Error: %1").arg(QString::fromUtf8(e.what()));
        }
        events->add([&](EvalBatch& b) { b.finished = f; });
    });
}

void EvalController::cancel()
{
    if (m_cancel)
        *m_cancel = true;
}

void EvalController::drain(EvalBatch&& batch)
{
    if (batch.progress)
        Q_EMIT progress(batch.progress->first, batch.progress->second);
    if (batch.status)
        Q_EMIT status(*batch.status);
    if (!batch.finished)
        return;
    const Task task = m_task;
    m_task = Task::None;
    const EvalBatch::Finish& f = *batch.finished;
    if (task == Task::Evaluation) {
        if (f.evaluation)
            m_evaluation = f.evaluation;
        Q_EMIT evaluationFinished(f.ok, f.cancelled, f.message);
    } else {
        if (f.suite)
            m_suite = f.suite;
        Q_EMIT suiteFinished(f.ok, f.cancelled, f.message);
    }
}

}  // namespace tb
