// DataJobs: runs one dataset-store task at a time (dedup, scan, statistics, undo, snapshot...) on a worker
// thread with its own DataStore connection (SQLite connections stay on their thread), reports progress,
// cancels through the progress callback, and finishes on the GUI thread.
#pragma once

#include "data/curate.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <functional>
#include <memory>

class QTimer;

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
    ~DataJobs() override;

    void setStorePath(const QString& path) { m_storePath = path; }
    const QString& storePath() const { return m_storePath; }

    // False (and nothing runs) while another job runs or when no store is open.
    bool run(const QString& what, Work work);
    void cancel();
    // A read-only query on a worker that does not make the runner busy (WAL: reads never wait for a writer);
    // finish runs on the GUI thread unless `receiver` is gone by then. Failures go to readFailed.
    void read(QObject* receiver, Work work);
    bool busy() const { return m_busy; }
    const QString& current() const { return m_what; }

Q_SIGNALS:
    void started(const QString& what);
    void progress(const QString& phase, double fraction);  // fraction in [0, 1]
    void finished(const QString& what, const QString& error);  // error empty on success
    void readFailed(const QString& error);

private:
    struct Shared;
    struct Result {
        Finish finish;
        QString error;
    };
    QFutureWatcher<Result> m_watcher;
    std::shared_ptr<Shared> m_shared;
    QTimer* m_poll = nullptr;
    QString m_storePath;
    QString m_what;
    bool m_busy = false;
};

} // namespace tb
