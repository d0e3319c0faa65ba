// The Data page over a 1,000,000-record store (labels gui, slow; offscreen): opening the store,
// scrolling to its end, filtering, sorting and searching keep the event loop's gaps short (the
// ordered ids are read on a worker, the rows page by page), and the token statistics and duplicate
// search run on the page's worker with progress, each cancelled midway leaving the store as it
// was. The longest gap of each phase is printed; the bound is generous (the machine is shared).
#include "data_page_util.h"
#include "data_panels.h"
#include "test_util.h"

#include "data/store/store.h"

#include <QScrollBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <algorithm>
#include <functional>

namespace {

constexpr int kRecords = 1000000;
constexpr qint64 kMaxGapMs = 500;

// The longest pause of the event loop while it is alive: a 5 ms timer notes the gaps between its
// ticks.
class GapMeter {
public:
    GapMeter()
    {
        m_tick.setInterval(5);
        QObject::connect(&m_tick, &QTimer::timeout, &m_tick, [this] {
            const qint64 now = m_clock.elapsed();
            m_worst = std::max(m_worst, now - m_last);
            m_last = now;
        });
    }
    void start()
    {
        m_worst = m_last = 0;
        m_clock.start();
        m_tick.start();
    }
    // The worst gap since start(), printed with the phase's name and time.
    qint64 stop(const char* phase)
    {
        m_tick.stop();
        qInfo("%s: %lld ms, longest event-loop gap %lld ms", phase, m_clock.elapsed(), m_worst);
        return m_worst;
    }

private:
    QElapsedTimer m_clock;
    QTimer m_tick;
    qint64 m_last = 0, m_worst = 0;
};

}  // namespace

class TestDataPageScale : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("million.tbstore"));
        QElapsedTimer clock;
        clock.start();
        tbtest::makeStore(m_path.toStdString(), kRecords);
        qInfo("generated %d records in %lld ms", kRecords, clock.elapsed());
    }

    void tableStaysResponsive()
    {
        GapMeter gaps;
        gaps.start();
        auto page = tbtest::openPage(m_path);
        QVERIFY(page);
        QVERIFY(gaps.stop("open") < kMaxGapMs);
        QCOMPARE(page->model()->rowCount(), kRecords);
        page->show();

        gaps.start();
        QScrollBar* bar = page->table()->verticalScrollBar();
        for (int step = 1; step <= 20; ++step) {  // drag the scroll bar down in 20 jumps
            bar->setValue(bar->maximum() * step / 20);
            QTest::qWait(10);
        }
        page->table()->scrollToBottom();
        QTest::qWait(20);
        QVERIFY(gaps.stop("scroll to the end") < kMaxGapMs);
        const int last = page->table()->rowAt(page->table()->viewport()->height() - 2);
        QVERIFY2(last > kRecords - 100, qPrintable(QString::number(last)));
        QCOMPARE(page->model()->idAt(kRecords - 1), qint64(kRecords));

        gaps.start();
        page->setStatusFilter(tb::ReviewStatus::Accepted);
        QVERIFY(tbtest::waitIds(*page, 120000));
        QVERIFY(gaps.stop("filter: accepted") < kMaxGapMs);
        QCOMPARE(page->model()->rowCount(), (kRecords + 6) / 7);

        gaps.start();
        page->model()->sort(tb::RecordTableModel::ColTokens, Qt::DescendingOrder);
        QVERIFY(tbtest::waitIds(*page, 120000));
        QVERIFY(gaps.stop("sort by tokens") < kMaxGapMs);
        QCOMPARE(page->model()
                     ->data(page->model()->index(0, tb::RecordTableModel::ColTokens))
                     .toLongLong(),
                 499);

        gaps.start();
        page->setStatusFilter(std::nullopt);
        page->setSearchText(QStringLiteral("question number 876543 "));
        QVERIFY(tbtest::waitIds(*page, 120000));
        QVERIFY(gaps.stop("search") < kMaxGapMs);
        QCOMPARE(page->model()->rowCount(), 1);
        QCOMPARE(page->model()->idAt(0), qint64(876544));
    }

    void statisticsAndDedupOnTheWorker()
    {
        auto page = tbtest::openPage(m_path);
        QVERIFY(page);
        const size_t operations =
            tb::DataStore::open(m_path.toStdString(), false)->operations().size();

        // Each job reports progress, and a cancel ends it with no result and nothing written.
        GapMeter gaps;
        QSignalSpy progress(page->jobs(), &tb::DataJobs::progress);
        QSignalSpy finished(page->jobs(), &tb::DataJobs::finished);
        const auto cancelMidway = [&](const char* phase, const std::function<bool()>& start) {
            progress.clear();
            finished.clear();
            gaps.start();
            QVERIFY(start());
            QVERIFY(progress.wait(120000));
            page->jobs()->cancel();
            QVERIFY(finished.wait(120000));
            QVERIFY(gaps.stop(phase) < kMaxGapMs);
            QVERIFY2(!finished.first().at(1).toString().isEmpty(), "a cancelled job says so");
        };
        cancelMidway("token statistics until cancelled",
                     [&] { return page->statsPanel()->compute(); });
        QVERIFY(!page->statsPanel()->report());
        cancelMidway("dedup until cancelled",
                     [&] { return page->curationPanel()->findDuplicates(); });
        QVERIFY(!page->curationPanel()->dedupReport());
        auto after = tb::DataStore::open(m_path.toStdString(), false);
        QCOMPARE(after->count(), int64_t(kRecords));
        QCOMPARE(after->operations().size(), operations);
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
};

QTEST_MAIN(TestDataPageScale)
#include "test_data_page_scale.moc"
