// JobControl: pause, resume and stop of a running job, shared by the job (which the studio and the
// CLI drive) and its recipe (which checks it between optimizer steps). Pausing blocks the recipe's
// thread on a condition variable; stop wakes it. Torch-free.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace tb {

enum class JobState { Idle, Running, Paused, Stopping, Finished, Failed };

class JobControl {
public:
    void pause();  // takes effect between optimizer steps
    void resume();
    void stop();  // wakes a paused recipe; the loop ends after the current step
    bool stopRequested() const { return m_stop.load(); }
    // The flag stop() sets: a LoadStopGuard over it stops the run's model loads too.
    const std::atomic<bool>* stopFlag() const { return &m_stop; }

    // Called by the recipe between steps: returns at once when running, blocks while paused, and
    // returns false once a stop was requested.
    bool waitWhilePaused();

    JobState state() const { return m_state.load(); }
    void setState(JobState state) { m_state = state; }

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    bool m_pause = false;  // guarded by m_mutex
    std::atomic<bool> m_stop{false};
    std::atomic<JobState> m_state{JobState::Idle};
};

}  // namespace tb
