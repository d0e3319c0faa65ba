// Reading a launched run (`tunebench train --nproc N`) as it goes, without widgets: the launcher's
// output split into lines and tagged with their rank, the ranks' metrics files followed by their
// growth (a partial last line kept until its newline arrives), their records added to a
// JobEventBatch, and the message of a launch that failed.
#pragma once

#include "job_event_batch.h"
#include "train/train_config.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

namespace tb {

// Splits a byte stream into lines: feed() returns the lines that `bytes` completes (without the
// '\n', and without a '\r' before it); the rest waits for its newline.
class LineSplitter {
public:
    QList<QByteArray> feed(const QByteArray& bytes);
    QByteArray takeRest();  // the unterminated tail, when the stream has ended
    const QByteArray& pending() const { return m_pending; }
    void clear() { m_pending.clear(); }

private:
    QByteArray m_pending;
};

// One line of the launcher's output and the rank it speaks for. fromStderr: the channel it came
// on. "[rank R] ..." is rank R's (either channel); "[launch] ..." and any other stderr line (the
// launcher's own errors: "tunebench: ...") are the launcher's; any other stdout line is rank 0's
// (its progress and summary, written unprefixed).
LaunchLine parseLaunchLine(const QString& line, bool fromStderr);
// The line without its "[rank R] " or "[launch] " prefix.
QString launchLineBody(const LaunchLine& line);

// Follows a file another process appends lines to (metrics.jsonl, ranks/rank-R.jsonl): each poll
// reads only the bytes added since the last and returns the complete lines; a partial last line is
// kept until its newline arrives. A missing file is nothing yet. A file that shrank (a restarted
// run cut it) is read again from its start, counted by restarts().
class JsonlTail {
public:
    explicit JsonlTail(QString path = {});
    QList<QByteArray> poll(qint64 maxBytes = qint64(8) << 20);
    const QString& path() const { return m_path; }
    qint64 offset() const { return m_offset; }  // bytes read so far (complete lines + pending)
    int restarts() const { return m_restarts; }

private:
    QString m_path;
    qint64 m_offset = 0;
    int m_restarts = 0;
    LineSplitter m_lines;
};

// One line of a rank's metrics file into `batch`: a step record goes to rankSteps as `rank`'s (and
// rank 0's to steps as well), with totalSteps (run.json's planned_steps); rank 0's eval,
// generation_eval and diverged records to their lists. Other types (the memory report, the ranks'
// records of other kinds) are skipped. False for a line that does not parse or lacks a key.
bool addMetricsLine(const QByteArray& line, int rank, int64_t totalSteps, JobEventBatch& batch);

// run.json of a launched run as the plan of its steps: planned_steps, the schedule core plans for
// `optim`, and the device from "dist"'s backend (nccl: cuda). nullopt while the file is missing or
// incomplete (rank 0 writes it atomically, so an incomplete one does not parse).
std::optional<RunPlan> planFromRunInfo(const QByteArray& runJson, const OptimOptions& optim,
                                       const QString& runDir);

// What a failed launch says: the launcher's "[launch]" lines (which rank exited how) and the first
// error a rank or the launcher printed ("[rank 1] tunebench: ...").
class LaunchFailure {
public:
    void note(const LaunchLine& line);
    // exitCode: the launcher's status (the first failing rank's; 128 + signal).
    QString message(int exitCode) const;

private:
    QStringList m_launcher;
    QString m_firstError;
};

}  // namespace tb
