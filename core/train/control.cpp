// JobControl: the pause flag under a mutex with a condition variable, stop as an atomic.
#include "train/control.h"

namespace tb {

void JobControl::pause()
{
    std::lock_guard lock(m_mutex);
    m_pause = true;
}

void JobControl::resume()
{
    {
        std::lock_guard lock(m_mutex);
        m_pause = false;
    }
    m_changed.notify_all();
}

void JobControl::stop()
{
    JobState s = m_state.load();
    if (s == JobState::Running || s == JobState::Paused)
        m_state.compare_exchange_strong(s, JobState::Stopping);
    {
        std::lock_guard lock(m_mutex);  // a waiter between its check and its wait sees the flag
        m_stop = true;
    }
    m_changed.notify_all();
}

bool JobControl::waitWhilePaused()
{
    std::unique_lock lock(m_mutex);
    if (m_pause && !m_stop) {
        m_state = JobState::Paused;
        m_changed.wait(lock, [this] { return !m_pause || m_stop.load(); });
    }
    if (m_stop)
        return false;
    m_state = JobState::Running;
    return true;
}

}  // namespace tb
