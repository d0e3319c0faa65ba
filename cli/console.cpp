// ConsoleEvents: a training run's events as console lines, through core's one formatter per record.
#include "cli/console.h"

namespace tb {

ConsoleEvents::ConsoleEvents(std::ostream& out, std::ostream& err, int64_t logEvery)
    : m_out(out), m_err(err), m_logEvery(logEvery)
{
}

void ConsoleEvents::onStep(const StepMetrics& m)
{
    if (m_logEvery <= 0 || (m.step % m_logEvery != 0 && m.step != m.totalSteps))
        return;
    m_out << formatStepLine(m) << std::endl;
}

void ConsoleEvents::onEval(const EvalMetrics& e)
{
    m_out << formatEvalLine(e) << std::endl;
}

void ConsoleEvents::onGenerationEval(const GenerationEvalMetrics& g)
{
    m_out << formatGenerationEvalLine(g) << std::endl;
}

void ConsoleEvents::onStarted(const RunPlan& p)
{
    if (!p.precisionPath.empty())
        m_out << "precision: " << p.precisionPath << std::endl;
}

void ConsoleEvents::onCheckpoint(int64_t, const std::string& dir)
{
    m_out << "saved " << dir << std::endl;
}

void ConsoleEvents::onMemoryReport(const MemoryReport& r)
{
    m_out << formatMemoryReport(r) << std::endl;
}

void ConsoleEvents::onWarning(const std::string& message)
{
    m_err << "tunebench: warning: " << message << std::endl;
}

void ConsoleEvents::onDiverged(const Diagnosis& d)
{
    m_err << "tunebench: " << formatDiagnosis(d) << std::endl;
    diverged = true;
    if (job)
        job->stop();
}

}  // namespace tb
