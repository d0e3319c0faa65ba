// EventBuffer: ui/'s one worker-to-GUI pattern: workers add to a mutex-guarded batch, the first
// addition after a drain posts one notification that arms a ~40 ms timer, and the timer drains
// everything in one batch.
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QTimer>

#include <functional>
#include <mutex>
#include <utility>

namespace tb {

// Batch: a plain struct, default-constructible and movable; what happened since the last drain.
// The buffer and its owner live on the GUI thread; the owner joins its workers before it is
// destroyed (a worker that adds after the buffer is gone would post to a dead timer).
template <class Batch> class EventBuffer {
public:
    using Drain = std::function<void(Batch&&)>;

    // `drain` runs on the owner's thread, with `owner` as the connection's context.
    EventBuffer(QObject* owner, Drain drain, int intervalMs = 40) : m_drain(std::move(drain))
    {
        m_timer.setSingleShot(true);
        m_timer.setInterval(intervalMs);
        QObject::connect(&m_timer, &QTimer::timeout, owner, [this] { drainNow(); });
    }
    EventBuffer(const EventBuffer&) = delete;
    EventBuffer& operator=(const EventBuffer&) = delete;

    // Any thread: `change(Batch&)` runs under the mutex; only the first change after a drain posts.
    template <class F> void add(F&& change)
    {
        bool first = false;
        {
            std::lock_guard lock(m_mutex);
            change(m_batch);
            first = !m_notified;
            m_notified = true;
        }
        if (first)
            QMetaObject::invokeMethod(
                &m_timer,
                [this] {
                    if (!m_timer.isActive())
                        m_timer.start();
                },
                Qt::QueuedConnection);
    }

    // GUI thread: drop whatever is pending (a new job starts from an empty batch).
    void discard() { take(); }

    // GUI thread: hand the pending batch to the drain now (the timer calls this).
    void drainNow()
    {
        m_timer.stop();
        Batch batch = take();
        ++m_drains;
        m_drain(std::move(batch));
    }

    int drains() const { return m_drains; }
    int intervalMs() const { return m_timer.interval(); }

private:
    Batch take()
    {
        std::lock_guard lock(m_mutex);
        Batch out = std::move(m_batch);
        m_batch = Batch{};
        m_notified = false;
        return out;
    }

    Drain m_drain;
    QTimer m_timer;
    std::mutex m_mutex;
    Batch m_batch;
    bool m_notified = false;
    int m_drains = 0;
};

}  // namespace tb
