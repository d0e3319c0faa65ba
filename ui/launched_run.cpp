// LaunchedRun: the launcher in a QProcess, its output as lines, the ranks' files followed by a
// timer; all of it added to the EventBuffer.
#include "launched_run.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcessEnvironment>

#include <csignal>
#include <iterator>
#include <utility>

#include <signal.h>

namespace tb {

namespace {

constexpr int kPollMs = 250;         // the files are read four times a second
constexpr int kCloseWaitMs = 30000;  // the destructor's wait for the ranks' checkpoint

template <class T> void appendAll(std::vector<T>& into, std::vector<T>& from)
{
    into.insert(into.end(), std::make_move_iterator(from.begin()),
                std::make_move_iterator(from.end()));
}

bool hasRecords(const JobEventBatch& b)
{
    return b.plan || !b.steps.empty() || !b.rankSteps.empty() || !b.evals.empty() ||
           !b.generationEvals.empty() || !b.divergences.empty();
}

}  // namespace

LaunchedRun::LaunchedRun(EventBuffer<JobEventBatch>* events, QObject* parent)
    : QObject(parent), m_events(events)
{
    m_poll.setInterval(kPollMs);
    connect(&m_poll, &QTimer::timeout, this, &LaunchedRun::pollFiles);
    connect(&m_process, &QProcess::readyReadStandardOutput, this, [this] { readChannel(false); });
    connect(&m_process, &QProcess::readyReadStandardError, this, [this] { readChannel(true); });
    connect(&m_process, &QProcess::finished, this, &LaunchedRun::onFinished);
    connect(&m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart || m_ended)
            return;  // other errors end in finished()
        m_ended = true;
        m_poll.stop();
        const std::string message = tr("cannot start %1: %2")
                                        .arg(m_process.program(), m_process.errorString())
                                        .toStdString();
        m_events->add([&](JobEventBatch& b) { b.failed = message; });
    });
}

LaunchedRun::~LaunchedRun()
{
    disconnect(&m_process, nullptr, this, nullptr);  // nothing reaches the buffer from here on
    if (!running())
        return;
    ::kill(pid_t(m_process.processId()), SIGINT);
    if (!m_process.waitForFinished(kCloseWaitMs)) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

bool LaunchedRun::start(const LaunchCommand& command, const QStringList& extraEnvironment,
                        const QString& runDir, int processes, const OptimOptions& optim,
                        QString* error)
{
    if (!QFileInfo(command.program).isExecutable()) {
        if (error)
            *error = tr("%1 not found: the tunebench command line is built beside "
                        "tunebench-studio and starts the processes")
                         .arg(command.program);
        return false;
    }
    m_runDir = runDir;
    m_optim = optim;
    m_tails.clear();
    m_tails.emplace_back(QDir(runDir).filePath(QStringLiteral("metrics.jsonl")));
    for (int r = 1; r < processes; ++r)
        m_tails.emplace_back(QDir(runDir).filePath(QStringLiteral("ranks/rank-%1.jsonl").arg(r)));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QStringList* list : {&command.environment, &extraEnvironment})
        for (const QString& kv : *list) {
            const qsizetype eq = kv.indexOf(QLatin1Char('='));
            if (eq > 0)
                env.insert(kv.left(eq), kv.mid(eq + 1));
        }
    m_process.setProcessEnvironment(env);
    m_process.setProcessChannelMode(QProcess::SeparateChannels);  // stdout unprefixed = rank 0
    // Stop's SIGINT must reach the launcher even when the studio was started with it ignored
    // (nohup, a background job): an ignored signal would stay ignored across exec.
    m_process.setChildProcessModifier([] { ::signal(SIGINT, SIG_DFL); });
    m_process.start(command.program, command.arguments, QIODevice::ReadOnly);
    m_poll.start();
    return true;
}

void LaunchedRun::stop()
{
    if (!running() || m_process.processId() <= 0)
        return;
    ++m_stops;
    if (m_stops <= 2)
        ::kill(pid_t(m_process.processId()), SIGINT);
    else
        m_process.kill();
}

void LaunchedRun::readChannel(bool fromStderr)
{
    const QByteArray bytes =
        fromStderr ? m_process.readAllStandardError() : m_process.readAllStandardOutput();
    addLines((fromStderr ? m_stderr : m_stdout).feed(bytes), fromStderr);
}

void LaunchedRun::addLines(const QList<QByteArray>& lines, bool fromStderr)
{
    if (lines.isEmpty())
        return;
    std::vector<LaunchLine> parsed;
    for (const QByteArray& line : lines) {
        parsed.push_back(parseLaunchLine(QString::fromUtf8(line), fromStderr));
        m_failure.note(parsed.back());
    }
    m_events->add([&](JobEventBatch& b) { appendAll(b.launchLines, parsed); });
}

void LaunchedRun::pollFiles()
{
    JobEventBatch found;
    if (!m_planSent) {
        QFile info(QDir(m_runDir).filePath(QStringLiteral("run.json")));
        if (info.open(QIODevice::ReadOnly))
            if ((found.plan = planFromRunInfo(info.readAll(), m_optim, m_runDir))) {
                m_plannedSteps = found.plan->totalSteps;
                m_planSent = true;
            }
    }
    // At most 512 KiB a file a tick (about 1,500 step lines, a few ms to parse on this GUI-thread
    // timer): a resumed run's earlier lines are taken in over a few seconds of ticks instead of
    // tens of MB parsed in one, which would freeze the window.
    constexpr qint64 kBytesPerTick = qint64(512) << 10;
    for (size_t rank = 0; rank < m_tails.size(); ++rank)
        for (const QByteArray& line : m_tails[rank].poll(kBytesPerTick))
            addMetricsLine(line, int(rank), m_plannedSteps, found);
    if (!found.steps.empty()) {
        if (!m_first)
            m_first = found.steps.front();
        m_last = found.steps.back();
    }
    if (!hasRecords(found))
        return;
    m_events->add([&](JobEventBatch& b) {
        if (found.plan)
            b.plan = std::move(found.plan);
        appendAll(b.steps, found.steps);
        appendAll(b.rankSteps, found.rankSteps);
        appendAll(b.evals, found.evals);
        appendAll(b.generationEvals, found.generationEvals);
        appendAll(b.divergences, found.divergences);
    });
}

TrainSummary LaunchedRun::summary() const
{
    TrainSummary s;
    s.runDir = m_runDir.toStdString();
    if (m_first && m_last) {
        s.steps = m_last->step;
        s.initialLoss = m_first->loss;
        s.finalLoss = m_last->loss;
        s.tokensPerSecond = m_last->tokensPerSecond;
    }
    s.stopped = m_stops > 0 && (m_plannedSteps <= 0 || s.steps < m_plannedSteps);
    return s;
}

void LaunchedRun::onFinished(int exitCode, QProcess::ExitStatus status)
{
    if (m_ended)
        return;
    m_ended = true;
    // What the launcher wrote last (a line without its newline too), then the files' last lines.
    readChannel(false);
    readChannel(true);
    for (bool err : {false, true})
        if (QByteArray rest = (err ? m_stderr : m_stdout).takeRest(); !rest.isEmpty())
            addLines({rest}, err);
    pollFiles();
    m_poll.stop();
    // SIGINT before the launcher's handler is in place (no rank started yet) ends it by the
    // signal: a stop like any other.
    // A stopped run's launcher exits 130 (the shell's status for Ctrl-C).
    const bool stoppedEarly =
        (status == QProcess::CrashExit || (status == QProcess::NormalExit && exitCode == 130)) &&
        m_stops == 1;
    if ((status == QProcess::NormalExit && exitCode == 0) || stoppedEarly) {
        const TrainSummary s = summary();
        m_events->add([&](JobEventBatch& b) { b.finished = s; });
        return;
    }
    QString message = status == QProcess::CrashExit
                          ? tr("the launcher was killed (%1)").arg(m_process.errorString())
                          : m_failure.message(exitCode);
    if (m_stops >= 2)
        message = tr("Forced stop (no checkpoint): %1").arg(message);
    const std::string text = message.toStdString();
    m_events->add([&](JobEventBatch& b) { b.failed = text; });
}

}  // namespace tb
