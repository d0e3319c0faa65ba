// DataJobs: runs one dataset-store task at a time (dedup, scan, statistics, undo, snapshot...) on a
// worker thread with its own DataStore connection (SQLite connections stay on their thread),
// reports progress, cancels through the progress callback, and finishes on the GUI thread. Progress
// and results come back through an EventBuffer (ui/'s one worker pattern), drained in ~40 ms
// batches.
#pragma once

#include "data/curate/curate.h"
#include "event_buffer.h"

#include <QFuture>
#include <QObject>
#include <QPointer>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace tb {

class DataStore;

class DataJobs : public QObject {
    Q_OBJECT
public:
    // Runs on the GUI thread after the work succeeded (shows the result); may be empty.
    using Finish = std::function<void()>;
    // Runs on a worker with a connection of its own; must not touch widgets. Throw to fail.
    using Work = std::function<Finish(DataStore& store, const CurateProgress& progress)>;

    explicit DataJobs(QObject* parent = nullptr);
    ~DataJobs() override;  // cancels the job and waits for its worker and the reads in flight

    // The store the next jobs and reads work on. A job or read still running on the previous store
    // finishes without its Finish: what it found belongs to a store no longer shown.
    void setStorePath(const QString& path) { m_storePath = path; }
    const QString& storePath() const { return m_storePath; }

    // False (and nothing runs) while another job runs or when no store is open.
    bool run(const QString& what, Work work);
    void cancel();
    // A read-only query on a worker that does not make the runner busy (WAL: reads never wait for a
    // writer); finish runs on the GUI thread unless `receiver` is gone by then. Failures go to
    // readFailed.
    void read(QObject* receiver, Work work);
    bool busy() const { return m_busy; }
    const QString& current() const { return m_what; }
    // Whether the job that finished last was cancelled (its error then says only that it
    // stopped); read in a `finished` handler.
    bool lastCancelled() const { return m_lastCancelled; }
    int drains() const { return m_events.drains(); }

Q_SIGNALS:
    void started(const QString& what);
    void progress(const QString& phase, double fraction);      // fraction in [0, 1]
    void finished(const QString& what, const QString& error);  // error empty on success
    void readFailed(const QString& error);

private:
    struct Result {
        Finish finish;
        QString error;
    };
    struct ReadResult {
        QPointer<QObject> receiver;
        QString storePath;
        Result result;
    };
    // What the workers reported since the last drain.
    struct Batch {
        std::optional<std::pair<QString, double>> progress;  // the job's latest (phase, fraction)
        std::optional<Result> done;                          // the job returned
        std::vector<ReadResult> reads;                       // reads that returned, in order
    };
    void drain(Batch&& batch);
    void finishJob(const Result& r);
    // Runs r.finish on the GUI thread; the worker's error, or the one finish threw, or empty.
    static QString finishOf(const Result& r);
    static Result runWork(const std::string& path, const Work& work,
                          const CurateProgress& progress);

    EventBuffer<Batch> m_events;
    QFuture<void> m_job;
    std::vector<QFuture<void>> m_reads;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    QString m_storePath;
    QString m_jobPath;  // the store the running job works on
    QString m_what;
    bool m_busy = false;
    bool m_lastCancelled = false;
};

}  // namespace tb
