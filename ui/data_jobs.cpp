// DataJobs: QtConcurrent workers with their own store connection; progress, results and reads come
// back through one EventBuffer and finish on the GUI thread.
#include "data_jobs.h"
#include "job_pool.h"

#include "data/store/store.h"
#include "model/model.h"

#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>

namespace tb {

DataJobs::DataJobs(QObject* parent)
    : QObject(parent), m_events(this, [this](Batch&& b) { drain(std::move(b)); })
{
}

DataJobs::~DataJobs()
{
    // Workers add to m_events until they return: let the job stop early, then wait for all of them.
    cancel();
    m_job.waitForFinished();
    for (QFuture<void>& f : m_reads)
        f.waitForFinished();
}

DataJobs::Result DataJobs::runWork(const std::string& path, const Work& work,
                                   const CurateProgress& progress)
{
    Result r;
    try {
        const std::unique_ptr<DataStore> store = DataStore::open(path, false);
        r.finish = work(*store, progress);
    } catch (const std::exception& e) {
        r.error = QString::fromUtf8(e.what());
    }
    return r;
}

bool DataJobs::run(const QString& what, Work work)
{
    if (m_busy || m_storePath.isEmpty())
        return false;
    m_job.waitForFinished();  // the last job reported; its worker is returning
    m_busy = true;
    m_what = what;
    m_jobPath = m_storePath;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    const std::string path = m_storePath.toStdString();
    Q_EMIT started(what);
    m_job = QtConcurrent::run(
        longJobPool(), [cancel = m_cancel, path, work = std::move(work), events = &m_events] {
            const CurateProgress progress = [cancel, events](const std::string& phase,
                                                             double fraction) {
                const QString p = QString::fromStdString(phase);
                events->add([&](Batch& b) { b.progress = std::pair{p, fraction}; });
                return !cancel->load();
            };
            const LoadStopGuard stopLoads(cancel.get());  // synth, rank: a model load hears Cancel
            Result r = runWork(path, work, progress);
            events->add([&](Batch& b) { b.done = std::move(r); });
        });
    return true;
}

void DataJobs::read(QObject* receiver, Work work)
{
    if (m_storePath.isEmpty())
        return;
    std::erase_if(m_reads, [](const QFuture<void>& f) { return f.isFinished(); });
    const std::string path = m_storePath.toStdString();
    // The receiver and the store are checked at the drain: when either is gone, so is the
    // notification.
    m_reads.push_back(
        QtConcurrent::run([receiver = QPointer<QObject>(receiver), storePath = m_storePath, path,
                           work = std::move(work), events = &m_events] {
            Result r = runWork(path, work, [](const std::string&, double) { return true; });
            events->add([&](Batch& b) { b.reads.push_back({receiver, storePath, std::move(r)}); });
        }));
}

void DataJobs::cancel()
{
    if (m_cancel)
        *m_cancel = true;
}

void DataJobs::drain(Batch&& batch)
{
    for (ReadResult& read : batch.reads) {
        if (!read.receiver || read.storePath != m_storePath)
            continue;
        const QString error = finishOf(read.result);
        if (!error.isEmpty())
            Q_EMIT readFailed(error);
    }
    if (batch.progress && !batch.done)
        Q_EMIT progress(batch.progress->first, batch.progress->second);
    if (batch.done)
        finishJob(*batch.done);
}

void DataJobs::finishJob(const Result& r)
{
    const QString what = m_what;
    m_busy = false;
    m_lastCancelled = m_cancel && m_cancel->load();
    m_cancel.reset();
    // A job on a store that is no longer shown: its changes are in that store, its display is not.
    const QString error = m_jobPath == m_storePath ? finishOf(r) : r.error;
    m_what.clear();
    Q_EMIT finished(what, error);
}

QString DataJobs::finishOf(const Result& r)
{
    if (!r.error.isEmpty() || !r.finish)
        return r.error;
    try {
        r.finish();
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace tb
