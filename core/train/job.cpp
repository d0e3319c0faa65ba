// TrainingJob: the thread around Trainer, with pause/resume/stop flags checked between optimizer steps.
#include "train/job.h"

#include "train/trainer.h"
#include "util/error.h"

#include <torch/torch.h>

namespace tb {

TrainingJob::TrainingJob(TrainConfig config, JobEvents* events, std::string resumeDir)
    : m_config(std::move(config)), m_events(events), m_resumeDir(std::move(resumeDir))
{
}

TrainingJob::~TrainingJob()
{
    stop();
    wait();
}

void TrainingJob::start()
{
    if (m_thread.joinable())
        fail("training job already started");
    m_state = JobState::Running;
    m_thread = std::thread([this] { run(); });
}

void TrainingJob::pause()
{
    m_pauseRequested = true;
}

void TrainingJob::resume()
{
    m_pauseRequested = false;
}

void TrainingJob::stop()
{
    if (m_state == JobState::Running || m_state == JobState::Paused)
        m_state = JobState::Stopping;
    m_stopRequested = true;
}

void TrainingJob::wait()
{
    if (m_thread.joinable())
        m_thread.join();
}

void TrainingJob::runHere()
{
    m_state = JobState::Running;
    run();
}

void TrainingJob::run()
{
    // Grad mode and autocast are thread-local in LibTorch: this thread starts from the defaults.
    torch::AutoGradMode gradMode(true);
    try {
        Trainer trainer(*this);
        trainer.run();
        m_state = JobState::Finished;
        if (m_events)
            m_events->onFinished(m_summary);
    } catch (const std::exception& e) {
        std::string message = e.what();
        m_error = message.substr(0, message.find('\n'));  // LibTorch appends a backtrace
        m_state = JobState::Failed;
        if (m_events)
            m_events->onFailed(m_error);
    }
}

} // namespace tb
