// DataJobs: QtConcurrent worker + QFutureWatcher; progress shared through a mutex and polled every 100 ms.
#include "data_jobs.h"

#include "data/store.h"

#include <QPointer>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <exception>
#include <mutex>

namespace tb {

struct DataJobs::Shared {
    std::atomic<bool> cancel{false};
    std::mutex mutex;
    QString phase;
    double fraction = 0;
};

DataJobs::DataJobs(QObject* parent) : QObject(parent)
{
    m_poll = new QTimer(this);
    m_poll->setInterval(100);
    connect(m_poll, &QTimer::timeout, this, [this] {
        if (!m_shared)
            return;
        QString phase;
        double fraction = 0;
        {
            std::lock_guard<std::mutex> lock(m_shared->mutex);
            phase = m_shared->phase;
            fraction = m_shared->fraction;
        }
        Q_EMIT progress(phase, fraction);
    });
    connect(&m_watcher, &QFutureWatcher<Result>::finished, this, [this] {
        m_poll->stop();
        const Result r = m_watcher.result();
        const QString what = m_what;
        m_busy = false;
        m_shared.reset();
        QString error = r.error;
        if (error.isEmpty() && r.finish) {
            try {
                r.finish();
            } catch (const std::exception& e) {
                error = QString::fromUtf8(e.what());
            }
        }
        m_what.clear();
        Q_EMIT finished(what, error);
    });
}

DataJobs::~DataJobs()
{
    // The worker keeps only its own connection and the shared progress block; let it stop early.
    if (m_shared)
        m_shared->cancel = true;
}

bool DataJobs::run(const QString& what, Work work)
{
    if (m_busy || m_storePath.isEmpty())
        return false;
    m_busy = true;
    m_what = what;
    m_shared = std::make_shared<Shared>();
    auto shared = m_shared;
    const std::string path = m_storePath.toStdString();
    Q_EMIT started(what);
    m_poll->start();
    m_watcher.setFuture(QtConcurrent::run([shared, path, work = std::move(work)]() -> Result {
        Result r;
        try {
            const std::unique_ptr<DataStore> store = DataStore::open(path, false);
            const CurateProgress progress = [shared](const std::string& phase, double fraction) {
                std::lock_guard<std::mutex> lock(shared->mutex);
                shared->phase = QString::fromStdString(phase);
                shared->fraction = fraction;
                return !shared->cancel.load();
            };
            r.finish = work(*store, progress);
        } catch (const std::exception& e) {
            r.error = QString::fromUtf8(e.what());
        }
        return r;
    }));
    return true;
}

void DataJobs::read(QObject* receiver, Work work)
{
    if (m_storePath.isEmpty())
        return;
    // The watcher belongs to the receiver: when the receiver goes, so does the notification.
    auto* watcher = new QFutureWatcher<Result>(receiver);
    QPointer<DataJobs> self(this);
    connect(watcher, &QFutureWatcher<Result>::finished, receiver, [self, watcher] {
        const Result r = watcher->result();
        watcher->deleteLater();
        QString error = r.error;
        if (error.isEmpty() && r.finish) {
            try {
                r.finish();
            } catch (const std::exception& e) {
                error = QString::fromUtf8(e.what());
            }
        }
        if (!error.isEmpty() && self)
            Q_EMIT self->readFailed(error);
    });
    const std::string path = m_storePath.toStdString();
    watcher->setFuture(QtConcurrent::run([path, work = std::move(work)]() -> Result {
        Result r;
        try {
            const std::unique_ptr<DataStore> store = DataStore::open(path, false);
            r.finish = work(*store, [](const std::string&, double) { return true; });
        } catch (const std::exception& e) {
            r.error = QString::fromUtf8(e.what());
        }
        return r;
    }));
}

void DataJobs::cancel()
{
    if (m_shared)
        m_shared->cancel = true;
}

} // namespace tb
