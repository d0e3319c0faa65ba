// The SIGINT handler of `tunebench train`: stop() on the active job, nothing else (atomics only).
#include "cli/interrupt.h"

#include "train/job.h"

#include <atomic>
#include <csignal>

namespace tb {
namespace {

std::atomic<TrainingJob*> g_activeJob{nullptr};
std::atomic<bool> g_received{false};

void onInterrupt(int)
{
    g_received = true;
    if (TrainingJob* job = g_activeJob.load())
        job->stop();  // the loop ends after the current step and saves a checkpoint
}

}  // namespace

InterruptGuard::InterruptGuard(TrainingJob& job)
{
    g_activeJob = &job;
    m_previous = std::signal(SIGINT, onInterrupt);
}

bool InterruptGuard::received()
{
    return g_received.load();
}

InterruptGuard::~InterruptGuard()
{
    std::signal(SIGINT, m_previous);
    g_activeJob = nullptr;
}

}  // namespace tb
