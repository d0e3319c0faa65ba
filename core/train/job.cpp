// TrainingJob: the thread around the supervised recipe (train/sft), with its control.
#include "train/job.h"

#include "dist/dist_env.h"
#include "model/model.h"

#include "train/preference.h"
#include "train/sft.h"
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
    m_control.setState(JobState::Running);
    m_thread = std::thread([this] { run(); });
}

void TrainingJob::pause()
{
    m_control.pause();
}

void TrainingJob::resume()
{
    m_control.resume();
}

void TrainingJob::stop()
{
    m_control.stop();
}

void TrainingJob::wait()
{
    if (m_thread.joinable())
        m_thread.join();
}

void TrainingJob::runHere()
{
    m_control.setState(JobState::Running);
    run();
}

void TrainingJob::run()
{
    // Grad mode and autocast are thread-local in LibTorch: this thread starts from the defaults.
    torch::AutoGradMode gradMode(true);
    // A Stop while the base (or a reference copy) loads ends the load at its next tensor.
    const LoadStopGuard stopLoads(m_control.stopFlag());
    try {
        // The objective picks the recipe: examples (sft) or preference pairs (the others).
        if (trainsOnPairs(m_config.objective)) {
            if (distEnvFromEnvironment())
                fail(m_config.sourcePath, ": objective ", objectiveName(m_config.objective),
                     " trains in one process; data parallelism (--nproc, torchrun) is offered "
                     "for sft runs");
            PreferenceRecipe recipe(m_config, m_resumeDir, m_control, m_events);
            m_summary = recipe.run();
        } else {
            SftRecipe recipe(m_config, m_resumeDir, m_control, m_events);
            m_summary = recipe.run();
        }
        m_control.setState(JobState::Finished);
        if (m_events)
            m_events->onFinished(m_summary);
    } catch (const std::exception& e) {
        std::string message = e.what();
        m_error = message.substr(0, message.find('\n'));  // LibTorch appends a backtrace
        if (m_control.stopRequested() && m_error.ends_with(": loading stopped"))
            m_error = "stopped while loading the model, before any step (" + m_error + ")";
        m_control.setState(JobState::Failed);
        if (m_events)
            m_events->onFailed(m_error);
    }
}

}  // namespace tb
