// `tunebench data import` at 1,000,000 rows (label slow), as real processes: a malformed row deep
// in the file is reported with its line and reason while every valid row is kept, and an import
// killed with SIGKILL midway leaves the store exactly as it was (one transaction), checked through
// a fresh connection and SQLite's integrity check.
#include "cli_run.h"
#include "test_util.h"

#include "data/store/store.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include <csignal>
#include <fstream>

namespace {

constexpr int kRows = 1000000;
constexpr int kBadLine = 987654;

// kRows alpaca lines; line kBadLine lacks its output.
void writeRows(const std::string& path)
{
    std::ofstream out(path, std::ios::binary);
    for (int line = 1; line <= kRows; ++line) {
        if (line == kBadLine) {
            out << "{\"instruction\": \"a row without an answer\"}\n";
            continue;
        }
        out << "{\"instruction\": \"Question " << line << " about topic " << line * 7919 % 1000
            << "\", \"input\": \"\", \"output\": \"Answer " << line << " with some words\"}\n";
    }
}

// SQLite's own verdict on the file: "ok" when every page and index is consistent.
std::string integrity(const QString& path)
{
    sqlite3* db = nullptr;
    std::string verdict = "cannot open";
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr) ==
        SQLITE_OK) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            verdict = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return verdict;
}

}  // namespace

class TestDataScaleCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_rows = m_dir.filePath(QStringLiteral("rows.jsonl")).toStdString();
        writeRows(m_rows);
    }

    void killedImportLeavesTheStoreAsItWas()
    {
        const QString store = m_dir.filePath(QStringLiteral("killed.tbstore"));
        auto r = tbtest::runTunebench({"data", "import", "--store", store,
                                       QStringLiteral(TB_SOURCE_DIR "/datasets/tiny/train.jsonl")});
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        size_t operationsBefore = 0;
        {
            auto s = tb::DataStore::open(store.toStdString(), false);
            QCOMPARE(s->count(), int64_t(500));
            operationsBefore = s->operations().size();
        }

        QProcess import;
        import.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"),
                     {"data", "import", "--store", store, QString::fromStdString(m_rows)});
        QVERIFY(import.waitForStarted());
        // Kill it once its transaction has written several MB (into the WAL), well before the end.
        QElapsedTimer clock;
        clock.start();
        const QString wal = store + "-wal";
        while (QFileInfo(wal).size() < 8 * 1024 * 1024 && clock.elapsed() < 120000 &&
               import.state() == QProcess::Running)
            QTest::qWait(20);
        QVERIFY2(import.state() == QProcess::Running, "the import ended before it was killed");
        qInfo("killed after %lld ms, WAL %lld bytes", clock.elapsed(), QFileInfo(wal).size());
        ::kill(pid_t(import.processId()), SIGKILL);
        QVERIFY(import.waitForFinished(30000));
        QCOMPARE(import.exitStatus(), QProcess::CrashExit);

        auto s = tb::DataStore::open(store.toStdString(), false);
        QCOMPARE(s->count(), int64_t(500));
        QCOMPARE(s->operations().size(), operationsBefore);
        QCOMPARE(s->sources().size(), size_t(1));  // no source row of the killed import either
        QCOMPARE(integrity(store), std::string("ok"));
        r = tbtest::runTunebench({"data", "list", "--store", store, "--limit", "3"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(tbtest::contains(r.out, "Mia"));  // the first tiny record, still there
    }

    void malformedRowDeepInTheFile()
    {
        const QString store = m_dir.filePath(QStringLiteral("full.tbstore"));
        const auto r = tbtest::runTunebench(
            {"data", "import", "--store", store, QString::fromStdString(m_rows), "--json"}, 900000);
        QVERIFY2(r.exitCode == 0, r.err.c_str());
        const auto j = nlohmann::json::parse(r.out);
        QCOMPARE(j["imported"].get<int64_t>(), int64_t(kRows - 1));
        QCOMPARE(j["rejected"].size(), size_t(1));
        QCOMPARE(j["rejected"][0]["line"].get<int64_t>(), int64_t(kBadLine));
        QVERIFY(tbtest::contains(j["rejected"][0]["reason"].get<std::string>(), "output"));
        QCOMPARE(tb::DataStore::open(store.toStdString(), false)->count(), int64_t(kRows - 1));
    }

private:
    QTemporaryDir m_dir;
    std::string m_rows;
};

QTEST_GUILESS_MAIN(TestDataScaleCli)
#include "test_data_scale_cli.moc"
