// Console output of a training run: the JobEvents that `tunebench train` prints (progress lines on
// out, warnings and the divergence diagnosis on err). On a diagnosis it stops the job: a terminal
// cannot answer the pause.
#pragma once

#include "train/job.h"

#include <cstdint>
#include <ostream>

namespace tb {

class ConsoleEvents : public JobEvents {
public:
    ConsoleEvents(std::ostream& out, std::ostream& err, int64_t logEvery);
    void onStarted(const RunPlan& p) override;
    void onStep(const StepMetrics& m) override;
    void onEval(const EvalMetrics& e) override;
    void onGenerationEval(const GenerationEvalMetrics& g) override;
    void onCheckpoint(int64_t step, const std::string& dir) override;
    void onMemoryReport(const MemoryReport& r) override;
    void onWarning(const std::string& message) override;
    void onDiverged(const Diagnosis& d) override;

    TrainingJob* job = nullptr;  // stopped on a divergence diagnosis
    bool diverged = false;

private:
    std::ostream& m_out;
    std::ostream& m_err;
    int64_t m_logEvery;
};
}  // namespace tb
