// Line splitting, rank prefixes, the metrics-file tail and the failure message of a launched run.
#include "launch_output.h"

#include "train/schedule.h"

#include <QFile>
#include <QRegularExpression>

#include <nlohmann/json.hpp>

#include <exception>
#include <utility>

namespace tb {

QList<QByteArray> LineSplitter::feed(const QByteArray& bytes)
{
    QList<QByteArray> lines;
    m_pending += bytes;
    qsizetype begin = 0;
    for (qsizetype nl; (nl = m_pending.indexOf('\n', begin)) >= 0; begin = nl + 1) {
        QByteArray line = m_pending.mid(begin, nl - begin);
        if (line.endsWith('\r'))
            line.chop(1);
        lines << line;
    }
    m_pending.remove(0, begin);
    return lines;
}

QByteArray LineSplitter::takeRest()
{
    return std::exchange(m_pending, QByteArray());
}

LaunchLine parseLaunchLine(const QString& line, bool fromStderr)
{
    static const QRegularExpression rankPrefix(QStringLiteral("^\\[rank (\\d+)\\] "));
    LaunchLine out;
    out.text = line;
    if (const QRegularExpressionMatch m = rankPrefix.match(line); m.hasMatch())
        out.rank = m.captured(1).toInt();
    else if (line.startsWith(QLatin1String("[launch]")) || fromStderr)
        out.rank = LaunchLine::kLauncherRank;
    else
        out.rank = 0;
    return out;
}

QString launchLineBody(const LaunchLine& line)
{
    static const QRegularExpression prefix(QStringLiteral("^(\\[rank \\d+\\] |\\[launch\\] ?)"));
    QString body = line.text;
    return body.remove(prefix);
}

JsonlTail::JsonlTail(QString path) : m_path(std::move(path)) {}

QList<QByteArray> JsonlTail::poll(qint64 maxBytes)
{
    QFile file(m_path);
    if (!file.open(QIODevice::ReadOnly))
        return {};                 // not written yet
    if (file.size() < m_offset) {  // cut (a restarted run starts its metrics again)
        m_offset = 0;
        m_lines.clear();
        ++m_restarts;
    }
    if (file.size() == m_offset || !file.seek(m_offset))
        return {};
    const QByteArray bytes = file.read(maxBytes);
    m_offset += bytes.size();
    return m_lines.feed(bytes);
}

bool addMetricsLine(const QByteArray& line, int rank, int64_t totalSteps, JobEventBatch& batch)
{
    try {
        const nlohmann::json j = nlohmann::json::parse(line.toStdString());
        const std::string type = j.value("type", "");
        if (type == "step") {
            StepMetrics m = stepMetricsFromJson(j);
            m.totalSteps = totalSteps;
            batch.rankSteps.push_back({rank, m});
            if (rank == 0)
                batch.steps.push_back(m);
        } else if (rank != 0) {
            return true;  // the other ranks' files hold their steps only
        } else if (type == "eval") {
            batch.evals.push_back(evalMetricsFromJson(j));
        } else if (type == "generation_eval") {
            batch.generationEvals.push_back(generationEvalFromJson(j));
        } else if (type == "diverged") {
            batch.divergences.push_back(diagnosisFromJson(j));
        }
        return true;
    } catch (const std::exception&) {
        return false;  // a torn or foreign line: skipped, as readRunMetrics does
    }
}

std::optional<RunPlan> planFromRunInfo(const QByteArray& runJson, const OptimOptions& optim,
                                       const QString& runDir)
{
    try {
        const nlohmann::json j = nlohmann::json::parse(runJson.toStdString());
        const int64_t planned = j.value("planned_steps", int64_t(0));
        if (planned <= 0)
            return std::nullopt;
        RunPlan plan;
        plan.runDir = runDir.toStdString();
        plan.totalSteps = planned;
        plan.schedule = plannedSchedule(optim, planned);
        plan.trainableParameters = j.value("trainable_parameters", int64_t(0));
        plan.precisionPath = j.value("precision_path", std::string());
        const auto dist = j.find("dist");
        plan.device = dist != j.end() && dist->value("backend", "") == "nccl" ? "cuda" : "cpu";
        return plan;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

void LaunchFailure::note(const LaunchLine& line)
{
    const QString body = launchLineBody(line);
    if (line.text.startsWith(QLatin1String("[launch]"))) {
        // Which rank ended how, and what the launcher did about the others; not its Ctrl-C notes.
        if (m_launcher.size() < 4 && !body.startsWith(QLatin1String("Ctrl-C")))
            m_launcher << body;
        return;
    }
    // An error (not a warning) of a rank, or the launcher's own (its unprefixed stderr).
    if (m_firstError.isEmpty() && body.startsWith(QLatin1String("tunebench: ")) &&
        !body.startsWith(QLatin1String("tunebench: warning:")))
        m_firstError = line.text;
}

QString LaunchFailure::message(int exitCode) const
{
    QString text = m_launcher.isEmpty()
                       ? QStringLiteral("the launcher exited with status %1").arg(exitCode)
                       : m_launcher.join(QStringLiteral("; "));
    if (!m_firstError.isEmpty())
        text += QStringLiteral(": ") + m_firstError;
    return text;
}

}  // namespace tb
