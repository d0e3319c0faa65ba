// What the Data page's tests share (test_data_page, test_data_page_scale): a generated store, and
// waiting for the page's workers.
#pragma once

#include "data_jobs.h"
#include "data_page.h"
#include "record_table_model.h"

#include "data/store/store.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace tbtest {

// n alpaca records; record i has token count (i * 37) % 500 and every 7th is accepted, every 11th
// rejected.
inline void makeStore(const std::string& path, int n, int duplicates = 0)
{
    auto store = tb::DataStore::open(path, true);
    const int64_t source = store->addSource(path + ".jsonl", "alpaca", "0");
    std::vector<tb::NewRecord> records;
    std::vector<int64_t> ids;
    for (int i = 0; i < n + duplicates; ++i) {
        const int k = i < n ? i : i - n;  // the duplicates repeat the first records exactly
        tb::NewRecord r;
        r.kind = "alpaca";
        r.fields = {{"instruction", "Question number " + std::to_string(k) + " about topic " +
                                        std::to_string(k * 7919 % 1000)},
                    {"output",
                     "Answer " + std::to_string(k) + ": " + std::string(size_t(k % 13 + 1), 'x')}};
        r.sourceLine = i + 1;
        records.push_back(std::move(r));
        if (records.size() == 100000 || i + 1 == n + duplicates) {  // bounded memory at 1M
            const std::vector<int64_t> added = store->addRecords(records, source, "test");
            ids.insert(ids.end(), added.begin(), added.end());
            records.clear();
        }
    }
    std::vector<tb::DataStore::TokenCount> counts;
    std::vector<tb::DataStore::Change> changes;
    for (size_t i = 0; i < ids.size(); ++i) {
        counts.push_back({ids[i], int64_t(i * 37 % 500), nlohmann::json::object()});
        if (i % 7 == 0)
            changes.push_back({ids[i], "status", "accepted", std::nullopt});
        else if (i % 11 == 0)
            changes.push_back({ids[i], "status", "rejected", std::nullopt});
    }
    store->setTokenCounts("test", counts);
    store->applyOperation("review", "test", nlohmann::json::object(), nlohmann::json::object(),
                          changes);
}

// The table reads its ordered ids on a worker: wait until the latest filter, sort or refresh has
// them.
inline bool waitIds(tb::DataPage& page, int ms = 30000)
{
    QElapsedTimer timer;
    timer.start();
    while (page.model()->loading() && timer.elapsed() < ms)
        QTest::qWait(2);
    return !page.model()->loading();
}

inline bool waitJob(tb::DataPage& page, QString* error = nullptr, int ms = 60000)
{
    QSignalSpy spy(page.jobs(), &tb::DataJobs::finished);
    if (!spy.wait(ms))
        return false;
    const QString e = spy.first().at(1).toString();
    if (error)
        *error = e;
    return e.isEmpty() && waitIds(page);
}

// Opens a store as the page does (on a worker) and waits for it: false with the reason when it
// cannot be opened.
inline bool openStoreAndWait(tb::DataPage& page, const QString& path, bool create = false,
                             QString* error = nullptr, int ms = 30000)
{
    QSignalSpy opened(&page, &tb::DataPage::storeOpened);
    QSignalSpy failed(&page, &tb::DataPage::storeFailed);
    if (!page.openStore(path, create, error))
        return false;
    QElapsedTimer timer;
    timer.start();
    while (opened.isEmpty() && failed.isEmpty() && timer.elapsed() < ms)
        QTest::qWait(2);
    if (!failed.isEmpty() && error)
        *error = failed.first().at(0).toString();
    return !opened.isEmpty() && opened.first().at(0).toString() == path;
}

inline std::unique_ptr<tb::DataPage> openPage(const QString& store)
{
    auto page = std::make_unique<tb::DataPage>();
    page->resize(1200, 800);
    QString error;
    if (!openStoreAndWait(*page, store, false, &error)) {
        qWarning("%s", qPrintable(error));
        return nullptr;
    }
    page->setAnnotator(QStringLiteral("ana"));
    if (!waitIds(*page))
        return nullptr;
    return page;
}

}  // namespace tbtest
