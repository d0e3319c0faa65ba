// Data page (label gui, offscreen): the record table model under QAbstractItemModelTester over
// 10,000 records (sort, filter, the last page), the annotator's shortcuts writing to the store
// (read back through a second connection), an import of 20,000 generated rows on the dialog's
// worker while the event loop stays responsive, dedup apply and undo, and the token histogram with
// its max-length cutoff.
#include "data_jobs.h"
#include "data_page.h"
#include "data_page_util.h"
#include "data_panels.h"
#include "import_dialog.h"
#include "record_editor.h"
#include "record_table_model.h"
#include "studio_state.h"
#include "synth_dialog.h"
#include "test_util.h"

#include "data/store/snapshot.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"
#include "util/paths.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QElapsedTimer>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QStandardItemModel>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

namespace {

using tbtest::makeStore;
using tbtest::openPage;
using tbtest::waitIds;
using tbtest::waitJob;

// A Data job that holds the store until `release` is set.
bool holdStore(tb::DataJobs* jobs, const std::atomic<bool>& release)
{
    return jobs->run(QStringLiteral("Hold"), [&release](tb::DataStore&, const tb::CurateProgress&) {
        while (!release)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return tb::DataJobs::Finish{};
    });
}

// Store queries by one field (designated initializers would leave the others to -Wextra's warning).
tb::RecordQuery withStatus(tb::ReviewStatus status)
{
    tb::RecordQuery q;
    q.status = status;
    return q;
}
tb::RecordQuery inSplit(const std::string& split)
{
    tb::RecordQuery q;
    q.split = split;
    return q;
}

}  // namespace

class TestDataPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QVERIFY(m_dir.isValid());
        m_big = m_dir.filePath(QStringLiteral("big.tbstore"));
        makeStore(m_big.toStdString(), 10000);
    }

    void tableModelOver10kRecords()
    {
        auto store = tb::DataStore::open(m_big.toStdString(), false);
        tb::RecordTableModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setStore(store.get());
        QCOMPARE(model.rowCount(), 10000);
        QCOMPARE(model.columnCount(), int(tb::RecordTableModel::ColumnCount));
        // Only the pages that are looked at are read.
        QCOMPARE(model.data(model.index(0, tb::RecordTableModel::ColId)).toLongLong(), 1);
        QCOMPARE(model.data(model.index(9999, tb::RecordTableModel::ColId)).toLongLong(), 10000);
        QVERIFY(model.pageFetches() <= 4);

        model.sort(tb::RecordTableModel::ColTokens, Qt::AscendingOrder);
        qint64 previous = -1;
        for (int row = 0; row < 600; ++row) {
            const qint64 tokens =
                model.data(model.index(row, tb::RecordTableModel::ColTokens)).toLongLong();
            QVERIFY(tokens >= previous);
            previous = tokens;
        }
        QCOMPARE(model.data(model.index(0, tb::RecordTableModel::ColTokens)).toLongLong(), 0);
        model.sort(tb::RecordTableModel::ColTokens, Qt::DescendingOrder);
        QCOMPARE(model.data(model.index(0, tb::RecordTableModel::ColTokens)).toLongLong(), 499);
        QCOMPARE(model.data(model.index(9999, tb::RecordTableModel::ColTokens)).toLongLong(), 0);

        tb::RecordQuery accepted;
        accepted.status = tb::ReviewStatus::Accepted;
        model.setFilter(accepted);
        QCOMPARE(model.rowCount(), int(store->count(accepted)));
        QCOMPARE(model.rowCount(), (10000 + 6) / 7);
        for (int row : {0, 1, model.rowCount() / 2, model.rowCount() - 1})
            QCOMPARE(model.data(model.index(row, tb::RecordTableModel::ColStatus)).toString(),
                     QStringLiteral("accepted"));
        QCOMPARE(model.data(model.index(0, tb::RecordTableModel::ColStatus), Qt::ForegroundRole)
                     .value<QColor>(),
                 tb::RecordTableModel::statusColor(tb::ReviewStatus::Accepted));
        tb::RecordQuery search;
        search.contains = "question number 4321 ";
        model.setFilter(search);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.idAt(0), 4322);
        // Scrolling through the whole table keeps at most kMaxPages pages.
        model.setFilter({});
        for (int row = 0; row < model.rowCount(); row += 97)
            QVERIFY(model.data(model.index(row, tb::RecordTableModel::ColPreview))
                        .toString()
                        .startsWith(QStringLiteral("Question")));
    }

    // With an id loader the answers come later and in any order: only the latest request's ids
    // apply, a sort requested while a filter is on its way applies as a reset (the rows differ),
    // and a plain re-sort keeps the selected record selected at its new row.
    // The Text column reads only the start of a long record (a repaint converts 120 characters,
    // not a 300 KB field), cut inside no UTF-8 character, with an ellipsis when cut.
    void previewTextReadsOnlyTheStart()
    {
        tb::StoredRecord r;
        r.kind = "text";
        std::string long_;
        for (int i = 0; i < 100000; ++i)
            long_ += "é ";  // 3 bytes a pair: cuts land inside characters
        r.fields = {{"text", long_}};
        const QString s = tb::RecordTableModel::previewText(r, 120);
        QCOMPARE(s.size(), qsizetype(120));
        QVERIFY(s.endsWith(QChar(0x2026)));
        QVERIFY(!s.contains(QChar(0xFFFD)));
        QVERIFY(s.startsWith(QStringLiteral("é é é")));
        // Whitespace that simplifies away still marks the cut.
        r.fields = {{"text", "short " + std::string(2000, ' ') + "tail"}};
        const QString spaced = tb::RecordTableModel::previewText(r, 120);
        QVERIFY2(spaced.endsWith(QChar(0x2026)) && !spaced.contains(QStringLiteral("tail")),
                 qPrintable(spaced));
        r.kind = "chat";
        r.fields = {{"messages",
                     {{{"role", "system"}, {"content", "sys"}},
                      {{"role", "user"}, {"content", long_}},
                      {{"role", "assistant"}, {"content", "answer"}}}}};
        const QString chat = tb::RecordTableModel::previewText(r, 120);
        QCOMPARE(chat.size(), qsizetype(120));
        QVERIFY(!chat.contains(QStringLiteral("sys")) && !chat.contains(QStringLiteral("answer")));
        r.fields = {
            {"messages",
             {{{"role", "user"}, {"content", "q"}}, {{"role", "assistant"}, {"content", "a"}}}}};
        QCOMPARE(tb::RecordTableModel::previewText(r, 120), QStringLiteral("q → a"));
    }

    void tableModelLoadsIdsAsynchronously()
    {
        auto store = tb::DataStore::open(m_big.toStdString(), false);
        tb::RecordTableModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        struct Request {
            tb::RecordQuery query;
            std::function<void(std::vector<int64_t>)> deliver;
        };
        std::vector<Request> requests;
        model.setIdLoader(
            [&](const tb::RecordQuery& q, std::function<void(std::vector<int64_t>)> deliver) {
                requests.push_back({q, std::move(deliver)});
            });
        auto answer = [&](size_t i) { requests[i].deliver(store->recordIds(requests[i].query)); };
        QSignalSpy loaded(&model, &tb::RecordTableModel::idsLoaded);

        model.setStore(store.get());
        QVERIFY(model.loading());
        QCOMPARE(model.rowCount(), 0);  // nothing until the ids arrive
        answer(0);
        QVERIFY(!model.loading());
        QCOMPARE(model.rowCount(), 10000);
        QCOMPARE(loaded.count(), 1);

        tb::RecordQuery accepted;
        accepted.status = tb::ReviewStatus::Accepted;
        model.setFilter(accepted);  // request 1
        model.sort(tb::RecordTableModel::ColTokens,
                   Qt::DescendingOrder);  // request 2: carries the filter
        QCOMPARE(requests.size(), size_t(3));
        QVERIFY(requests[2].query.status == tb::ReviewStatus::Accepted);
        QCOMPARE(model.rowCount(), 10000);  // still the previous rows
        answer(1);                          // superseded: dropped
        QVERIFY(model.loading());
        QCOMPARE(model.rowCount(), 10000);
        QCOMPARE(loaded.count(), 1);
        answer(2);
        QVERIFY(!model.loading());
        QCOMPARE(model.rowCount(), (10000 + 6) / 7);
        QCOMPARE(model.data(model.index(0, tb::RecordTableModel::ColStatus)).toString(),
                 QStringLiteral("accepted"));
        QVERIFY(model.data(model.index(0, tb::RecordTableModel::ColTokens)).toLongLong() >=
                model.data(model.index(model.rowCount() - 1, tb::RecordTableModel::ColTokens))
                    .toLongLong());

        const QPersistentModelIndex held = model.index(5, tb::RecordTableModel::ColPreview);
        const qint64 heldId = model.idAt(5);
        model.sort(tb::RecordTableModel::ColId, Qt::AscendingOrder);  // request 3: a plain re-sort
        QCOMPARE(model.idAt(5), heldId);                              // unchanged until the answer
        answer(3);
        QVERIFY(held.isValid());
        QCOMPARE(model.idAt(held.row()), heldId);
        QCOMPARE(held.column(), int(tb::RecordTableModel::ColPreview));
        QVERIFY(model.idAt(0) < model.idAt(1));
        QCOMPARE(loaded.count(), 3);

        model.setFilter({});  // request 4, answered only after the store is gone: changes nothing
        model.setStore(nullptr);
        QCOMPARE(model.rowCount(), 0);
        answer(4);
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(!model.loading());
    }

    void everyModelOfThePageUnderTester()
    {
        auto page = openPage(m_big);
        QVERIFY(page);
        page->show();
        std::vector<std::unique_ptr<QAbstractItemModelTester>> testers;
        QSet<QAbstractItemModel*> seen;
        for (QAbstractItemView* view : page->findChildren<QAbstractItemView*>())
            if (view->model() && !seen.contains(view->model())) {
                seen << view->model();
                testers.push_back(std::make_unique<QAbstractItemModelTester>(
                    view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest));
            }
        for (QComboBox* box : page->findChildren<QComboBox*>())
            if (box->model() && !seen.contains(box->model())) {
                seen << box->model();
                testers.push_back(std::make_unique<QAbstractItemModelTester>(
                    box->model(), QAbstractItemModelTester::FailureReportingMode::QtTest));
            }
        QVERIFY(testers.size() >= 5);
        // Drive the table through the view: sort by the Tokens header (the selected record keeps
        // its selection at its new row), filter, scroll to the end.
        page->selectRow(1234);
        const qint64 selected = page->currentRecordId();
        page->table()->sortByColumn(tb::RecordTableModel::ColTokens, Qt::DescendingOrder);
        QVERIFY(page->model()->loading());  // the sort query runs on a worker, not on this thread
        QCOMPARE(page->currentRecordId(), selected);
        QVERIFY(waitIds(*page));
        QCOMPARE(page->currentRecordId(), selected);
        QVERIFY(page->table()->currentIndex().row() != 1234);
        QCOMPARE(page->model()
                     ->data(page->model()->index(0, tb::RecordTableModel::ColTokens))
                     .toLongLong(),
                 499);
        page->setStatusFilter(tb::ReviewStatus::Rejected);
        QVERIFY(waitIds(*page));
        QCOMPARE(page->model()->rowCount(),
                 int(tb::DataStore::open(m_big.toStdString(), false)
                         ->count(withStatus(tb::ReviewStatus::Rejected))));
        page->setStatusFilter(std::nullopt);
        QVERIFY(waitIds(*page));
        page->table()->scrollToBottom();
        page->selectRow(page->model()->rowCount() - 1);
        QTRY_VERIFY(page->editor()->recordId().has_value());
        page->reviewPanel()->refresh();
        QSignalSpy refreshed(page->reviewPanel(), &tb::ReviewPanel::refreshed);
        QVERIFY(refreshed.wait(10000));
    }

    void reviewShortcutsWriteTheStore()
    {
        const QString path = m_dir.filePath(QStringLiteral("review.tbstore"));
        makeStore(path.toStdString(), 40);
        auto page = openPage(path);
        QVERIFY(page);
        page->setAdvanceAfterDecision(true);
        page->show();
        page->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(page.get()));
        page->setStatusFilter(tb::ReviewStatus::Pending);
        QVERIFY(waitIds(*page));
        page->table()->setFocus();
        QVERIFY(page->model()->rowCount() > 10);
        const qint64 first = page->model()->idAt(0), second = page->model()->idAt(1),
                     third = page->model()->idAt(2);
        QCOMPARE(page->currentRecordId(), first);
        // The store as another process would see it: a connection of its own.
        auto check = tb::DataStore::open(path.toStdString(), false);

        QTest::keyClick(page->table(), Qt::Key_A);
        QCOMPARE(check->record(first).status, tb::ReviewStatus::Accepted);
        QCOMPARE(page->currentRecordId(), second);  // next after A/R
        QTest::keyClick(page->table(), Qt::Key_R);
        QCOMPARE(check->record(second).status, tb::ReviewStatus::Rejected);
        QCOMPARE(page->currentRecordId(), third);
        QTest::keyClick(page->table(), Qt::Key_4);
        QCOMPARE(check->record(third).rating, std::optional<int>(4));
        QCOMPARE(check->record(third).status,
                 tb::ReviewStatus::Pending);  // a rating alone decides nothing
        QCOMPARE(page->currentRecordId(), third);
        QTest::keyClick(page->table(), Qt::Key_K);
        QCOMPARE(page->currentRecordId(), second);
        QTest::keyClick(page->table(), Qt::Key_J);
        QTest::keyClick(page->table(), Qt::Key_J);
        QCOMPARE(page->currentRecordId(), page->model()->idAt(3));
        for (int r = 1; r <= 5; ++r) {
            QTest::keyClick(page->table(), Qt::Key(Qt::Key_0 + r));
            QCOMPARE(check->record(page->model()->idAt(3)).rating, std::optional<int>(r));
        }
        const auto labels = check->labels(first);
        QCOMPARE(labels.size(), size_t(1));
        QCOMPARE(labels[0].annotator, std::string("ana"));
        QCOMPARE(labels[0].decision, std::string("accept"));

        // E edits: the first field gets the focus, typing goes into it (not to the shortcuts), Save
        // writes it.
        page->selectRow(0);
        QTest::keyClick(page->table(), Qt::Key_E);
        QPlainTextEdit* instruction = page->editor()->fieldEditor(QStringLiteral("instruction"));
        QVERIFY(instruction);
        QTRY_VERIFY(instruction->hasFocus());
        instruction->moveCursor(QTextCursor::End);
        QTest::keyClicks(instruction, QStringLiteral(" (ARJ)"));
        QCOMPARE(check->record(first).status,
                 tb::ReviewStatus::Accepted);  // the letters did not review
        QVERIFY(page->saveEdits());
        QVERIFY(check->record(first).fields["instruction"].get<std::string>().ends_with(" (ARJ)"));
        const auto history = check->history(first);
        QCOMPARE(history.back().field, std::string("fields.instruction"));
        QCOMPARE(history.back().who, std::string("ana"));

        // A second annotator disagrees on the first record: the adjudication queue and agreement
        // show it.
        page->setAnnotator(QStringLiteral("ben"));
        page->selectRow(0);
        page->table()->setFocus();
        QTest::keyClick(page->table(), Qt::Key_R);
        QCOMPARE(check->record(first).status, tb::ReviewStatus::NeedsAdjudication);
        page->selectRow(1);
        QTest::keyClick(page->table(), Qt::Key_R);
        QCOMPARE(check->record(second).status, tb::ReviewStatus::Rejected);
        QSignalSpy refreshed(page->reviewPanel(), &tb::ReviewPanel::refreshed);
        page->reviewPanel()->refresh();
        QVERIFY(refreshed.wait(10000));
        QCOMPARE(page->reviewPanel()->agreementTable()->rowCount(), 1);
        QCOMPARE(page->reviewPanel()->agreementTable()->item(0, 0)->text(),
                 QStringLiteral("ana – ben"));
        QCOMPARE(page->reviewPanel()->agreementTable()->item(0, 1)->text(), QStringLiteral("2"));
        QCOMPARE(page->reviewPanel()->agreementTable()->item(0, 2)->text(), QStringLiteral("1"));
        QCOMPARE(page->reviewPanel()->queue()->count(), 1);
        page->reviewPanel()->queue()->setCurrentRow(0);
        QCOMPARE(page->editor()->recordId(), std::optional<int64_t>(first));
        QVERIFY(page->reviewPanel()->adjudicateSelected(QStringLiteral("reject")));
        QCOMPARE(check->record(first).status, tb::ReviewStatus::Rejected);
    }

    // What an annotator typed survives the table's refresh after a job, and a move while a job
    // holds the store: nothing typed is lost, and it is saved once it can be.
    void unsavedEditsSurviveRefreshAndBusyMoves()
    {
        const QString path = m_dir.filePath(QStringLiteral("edits.tbstore"));
        makeStore(path.toStdString(), 30);
        auto page = openPage(path);
        QVERIFY(page);
        auto check = tb::DataStore::open(path.toStdString(), false);
        page->selectRow(0);
        const qint64 first = page->currentRecordId();
        QCOMPARE(page->editor()->recordId(), std::optional<int64_t>(first));
        QPlainTextEdit* instruction = page->editor()->fieldEditor(QStringLiteral("instruction"));
        QVERIFY(instruction);
        instruction->moveCursor(QTextCursor::End);
        instruction->insertPlainText(QStringLiteral(" (typed)"));
        QVERIFY(page->editor()->modified());
        const QString typed = instruction->toPlainText();

        // A job ends and the table reads its ids again: the typing stays.
        QVERIFY(page->curationPanel()->findDuplicates());
        QString error;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(waitIds(*page));
        QVERIFY(page->editor()->modified());
        QCOMPARE(page->editor()->fieldEditor(QStringLiteral("instruction"))->toPlainText(), typed);

        // A move while a job holds the store: saving must wait, so the editor keeps the record and
        // the table comes back to it.
        std::atomic<bool> release{false};
        QVERIFY(holdStore(page->jobs(), release));
        QVERIFY(page->moveCurrent(1));
        QTRY_COMPARE(page->currentRecordId(), first);
        QCOMPARE(page->editor()->recordId(), std::optional<int64_t>(first));
        QCOMPARE(page->editor()->fieldEditor(QStringLiteral("instruction"))->toPlainText(), typed);
        QVERIFY(page->message().contains(QStringLiteral("Wait for")));
        release = true;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(waitIds(*page));
        QCOMPARE(page->editor()->fieldEditor(QStringLiteral("instruction"))->toPlainText(), typed);

        // Now the move saves first.
        QVERIFY(page->moveCurrent(1));
        QVERIFY(page->currentRecordId() != first);
        QCOMPARE(
            QString::fromStdString(check->record(first).fields["instruction"].get<std::string>()),
            typed);
        QVERIFY(!page->editor()->modified());
    }

    // A cancelled job says so in the status line, not as a failure; a job that fails says why.
    void cancelledJobIsNotAFailure()
    {
        const QString path = m_dir.filePath(QStringLiteral("cancelled-job.tbstore"));
        makeStore(path.toStdString(), 3);
        auto page = openPage(path);
        QVERIFY(page);
        const auto spin = [](tb::DataStore&, const tb::CurateProgress& progress) {
            while (progress("spinning", 0.5))
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            throw tb::Error("spin: cancelled");  // as the store's own jobs end on a cancel
            return tb::DataJobs::Finish{};
        };
        QVERIFY(page->jobs()->run(QStringLiteral("Spin"), spin));
        page->jobs()->cancel();
        QString error;
        QVERIFY(!waitJob(*page, &error));
        QCOMPARE(error, QStringLiteral("spin: cancelled"));  // the signal still carries it
        QCOMPARE(page->message(), QStringLiteral("Spin: cancelled"));
        QVERIFY(page->jobs()->run(QStringLiteral("Fail"),
                                  [](tb::DataStore&, const tb::CurateProgress&) {
                                      throw tb::Error("no good");
                                      return tb::DataJobs::Finish{};
                                  }));
        QVERIFY(!waitJob(*page, &error));
        QCOMPARE(page->message(), QStringLiteral("Fail failed: no good"));
    }

    // One Save of several fields is one operation (written together, one Undo reverses it), and
    // opening another store saves the edits typed into this one first, or when they cannot be
    // saved (a job holds the store) keeps this store and the typing.
    void saveIsOneOperationAndSwitchingStoresKeepsEdits()
    {
        const QString path = m_dir.filePath(QStringLiteral("save-one-op.tbstore"));
        const QString other = m_dir.filePath(QStringLiteral("save-one-op-other.tbstore"));
        makeStore(path.toStdString(), 5);
        makeStore(other.toStdString(), 3);
        auto page = openPage(path);
        QVERIFY(page);
        page->setAnnotator(QStringLiteral("ann"));
        auto check = tb::DataStore::open(path.toStdString(), false);
        page->selectRow(0);
        const qint64 id = page->currentRecordId();
        const auto before = check->record(id).fields;
        page->editor()
            ->fieldEditor(QStringLiteral("instruction"))
            ->setPlainText(QStringLiteral("new question"));
        page->editor()
            ->fieldEditor(QStringLiteral("output"))
            ->setPlainText(QStringLiteral("new answer"));
        const size_t opsBefore = check->operations().size();
        QVERIFY(page->saveEdits());
        const std::vector<tb::OperationInfo> ops = check->operations();
        QCOMPARE(ops.size(), opsBefore + 1);
        QCOMPARE(ops.back().kind, std::string("edit"));
        QCOMPARE(ops.back().changes, int64_t(2));
        QCOMPARE(check->record(id).fields["output"].get<std::string>(), std::string("new answer"));
        QVERIFY(page->undoLastOperation());
        QString error;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QCOMPARE(check->record(id).fields, before);  // both fields back

        page->selectRow(0);
        QPlainTextEdit* instruction = page->editor()->fieldEditor(QStringLiteral("instruction"));
        instruction->setPlainText(QStringLiteral("typed, then another store"));
        QVERIFY(page->hasUnsavedEdits());
        std::atomic<bool> release{false};
        QVERIFY(holdStore(page->jobs(), release));
        QSignalSpy failed(page.get(), &tb::DataPage::storeFailed);
        QVERIFY(page->openStore(other));
        QVERIFY(failed.wait(30000));
        QCOMPARE(QString::fromStdString(page->store()->path()), path);
        QVERIFY(page->hasUnsavedEdits());
        QCOMPARE(page->editor()->fieldEditor(QStringLiteral("instruction"))->toPlainText(),
                 QStringLiteral("typed, then another store"));
        QVERIFY(page->message().contains(QStringLiteral("not opened")));
        release = true;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));

        QSignalSpy opened(page.get(), &tb::DataPage::storeOpened);
        QVERIFY(page->openStore(other));
        QVERIFY(opened.wait(30000));
        QCOMPARE(QString::fromStdString(page->store()->path()), other);
        QVERIFY(!page->hasUnsavedEdits());
        QCOMPARE(check->record(id).fields["instruction"].get<std::string>(),
                 std::string("typed, then another store"));
    }

    void importStaysResponsive()
    {
        // 20,000 alpaca rows with three bad ones at known lines.
        const QString file = m_dir.filePath(QStringLiteral("big.jsonl"));
        const int rows = 20000;
        {
            std::ofstream out(file.toStdString());
            for (int line = 1; line <= rows; ++line) {
                if (line == 5)
                    out << "{\"instruction\": \"broken\", \"output\": \n";
                else if (line == 1234)
                    out << "{\"instruction\": \"no output here\"}\n";
                else if (line == 19999)
                    out << "[1, 2, 3]\n";
                else
                    out << "{\"instruction\": \"Row " << line
                        << " asks something fairly long so that the file has "
                        << "some weight to it\", \"input\": \"\", \"output\": \"Row " << line
                        << " answers.\"}\n";
            }
        }
        const QString store = m_dir.filePath(QStringLiteral("import.tbstore"));
        tb::DataStore::open(store.toStdString(), true);
        tb::ImportDialog dialog(store, QStringLiteral("ana"),
                                QString::fromStdString(tb::bundledModelDir()));
        dialog.show();
        QSignalSpy previewed(&dialog, &tb::ImportDialog::previewReady);
        dialog.setFile(file);
        QVERIFY(previewed.wait(10000));
        QCOMPARE(dialog.preview().format, QStringLiteral("alpaca"));
        QVERIFY(dialog.previewTable()->rowCount() >= 40);
        QCOMPARE(dialog.rejectionTable()->rowCount(), 1);  // line 5, in the preview's first lines
        QCOMPARE(dialog.rejectionTable()->item(0, 0)->text(), QStringLiteral("5"));

        // The event loop's longest gap while the worker imports.
        QElapsedTimer clock;
        qint64 last = 0, worst = 0;
        QTimer tick;
        tick.setInterval(5);
        QObject::connect(&tick, &QTimer::timeout, &tick, [&] {
            const qint64 now = clock.elapsed();
            worst = std::max(worst, now - last);
            last = now;
        });
        QSignalSpy done(&dialog, &tb::ImportDialog::imported);
        clock.start();
        tick.start();
        QVERIFY(dialog.startImport());
        QVERIFY(done.wait(120000));
        tick.stop();
        const qint64 took = clock.elapsed();
        qInfo("import of %d rows took %lld ms; longest event-loop gap %lld ms", rows, took, worst);
        QVERIFY2(dialog.outcome().error.isEmpty(), qPrintable(dialog.outcome().error));
        QCOMPARE(dialog.outcome().imported, qint64(rows - 3));
        QCOMPARE(dialog.rejectionTable()->rowCount(), 3);
        QCOMPARE(dialog.rejectionTable()->item(0, 0)->text(), QStringLiteral("5"));
        QCOMPARE(dialog.rejectionTable()->item(1, 0)->text(), QStringLiteral("1234"));
        QVERIFY(dialog.rejectionTable()->item(1, 1)->text().contains(
            QStringLiteral("missing field \"output\"")));
        QCOMPARE(dialog.rejectionTable()->item(2, 0)->text(), QStringLiteral("19999"));
        QVERIFY(worst < 300);  // generous: the machine is shared
        QCOMPARE(tb::DataStore::open(store.toStdString(), false)->count(), qint64(rows - 3));
        // Progress and the outcome came through the dialog's EventBuffer, in batches.
        QVERIFY(dialog.eventDrains() >= 1);
        QCOMPARE(dialog.progressBar()->value(), 1000);
    }

    // Closing the dialog while its import runs cancels it and waits for the worker: nothing is
    // written, nothing crashes (the worker reports into the dialog's buffer).
    void importDialogClosedMidImport()
    {
        const QString store = m_dir.filePath(QStringLiteral("closed.tbstore"));
        tb::DataStore::open(store.toStdString(), true);
        const QString file = m_dir.filePath(QStringLiteral("closed.jsonl"));
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            for (int i = 0; i < 50000; ++i)
                f.write(QStringLiteral("{\"instruction\": \"q%1\", \"output\": \"a%1\"}\n")
                            .arg(i)
                            .toUtf8());
        }
        int outcomes = 0;
        QString error;
        {
            tb::ImportDialog dialog(store, QStringLiteral("tester"), QString());
            QSignalSpy previewed(&dialog, &tb::ImportDialog::previewReady);
            connect(&dialog, &tb::ImportDialog::imported, this, [&](const tb::ImportOutcome& o) {
                ++outcomes;
                error = o.error;
            });
            dialog.setFile(file);
            QVERIFY(previewed.wait(10000));
            QVERIFY(dialog.startImport());
            QVERIFY(dialog.running());
        }  // destroyed at once, mid-import
        QCOMPARE(tb::DataStore::open(store.toStdString(), false)->count(), qint64(0));
        // The page still hears how it ended (here: rolled back), and refreshes on it.
        QCOMPARE(outcomes, 1);
        QVERIFY2(error.contains(QStringLiteral("cancel")), qPrintable(error));
    }

    // Scan, chunking and snapshots through the page, each checked in the store.
    void scanChunkAndSnapshot()
    {
        const QString path = m_dir.filePath(QStringLiteral("curate.tbstore"));
        {
            auto store = tb::DataStore::open(path.toStdString(), true);
            std::vector<tb::NewRecord> records;
            tb::NewRecord leak;
            leak.kind = "alpaca";
            leak.fields = {{"instruction", "Who to ask?"},
                           {"output", "Mail jane.doe@example.com or call +44 20 7946 0958."}};
            records.push_back(leak);
            tb::NewRecord longText;
            longText.kind = "text";
            std::string text;
            for (int i = 0; i < 120; ++i)
                text +=
                    "Sentence number " + std::to_string(i) + " tells a little more of the story. ";
            longText.fields = {{"text", text}};
            records.push_back(longText);
            const auto ids = store->addRecords(records, 0, "test");
            store->review(ids[0], "ana", "accept");
        }
        auto page = openPage(path);
        QVERIFY(page);
        tb::CurationPanel* curation = page->curationPanel();
        QString error;

        QVERIFY(curation->scan());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(curation->scanReport());
        QCOMPARE(curation->scanReport()->flagged, int64_t(1));
        QVERIFY(curation->scanTable()->rowCount() >= 2);  // the email and the phone number
        for (int row = 0; row < curation->scanTable()->rowCount(); ++row)
            for (int col = 0; col < curation->scanTable()->columnCount(); ++col)
                if (auto* item = curation->scanTable()->item(row, col))
                    QVERIFY2(!item->text().contains(QStringLiteral("jane.doe@")),
                             qPrintable(item->text()));
        QCOMPARE(tb::DataStore::open(path.toStdString(), false)->scanFlags().size(),
                 curation->scanReport()->flags.size());

        curation->setChunkOptions(64, 8);
        QVERIFY(curation->previewChunks());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY2(curation->chunkSummary().contains(QStringLiteral("1 text records over 64 tokens")),
                 qPrintable(curation->chunkSummary()));
        QCOMPARE(page->model()->rowCount(), 2);
        QVERIFY(curation->applyChunks());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        const int64_t afterChunks = tb::DataStore::open(path.toStdString(), false)->count();
        QVERIFY(afterChunks > 4);
        QCOMPARE(page->model()->rowCount(), int(afterChunks));
        QVERIFY(curation->undoChunks());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QCOMPARE(tb::DataStore::open(path.toStdString(), false)->count(), int64_t(2));
        QCOMPARE(page->model()->rowCount(), 2);

        QVERIFY(page->snapshot(QStringLiteral("train"), true));
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY2(page->message().contains(QStringLiteral("train-v1")), qPrintable(page->message()));
        auto store = tb::DataStore::open(path.toStdString(), false);
        const auto snapshots = tb::listSnapshots(*store);
        QCOMPARE(snapshots.size(), size_t(1));
        QCOMPARE(snapshots[0].records, int64_t(1));  // only the accepted record
    }

    // Synthetic examples through the page: greedy generation from the accepted seeds, stored
    // synthetic and pending, each naming its seed (core's test compares the text with the model's
    // own continuation).
    void generatesSyntheticExamples()
    {
        const QString path = m_dir.filePath(QStringLiteral("synth.tbstore"));
        std::vector<int64_t> seeds;
        {
            auto store = tb::DataStore::open(path.toStdString(), true);
            std::vector<tb::NewRecord> records;
            for (const char* q :
                 {"Tell me about Tom and the dog.", "Where did Lily play?", "What did Sam find?"}) {
                tb::NewRecord r;
                r.kind = "alpaca";
                r.fields = {{"instruction", q}, {"output", "seed answer"}};
                records.push_back(r);
            }
            seeds = store->addRecords(records, 0, "test");
            store->review(seeds[0], "ana", "accept");
            store->review(seeds[1], "ana", "accept");
        }
        auto page = openPage(path);
        QVERIFY(page);
        // The dialog's defaults: accepted seeds, the run's template ("auto" resolves to the
        // model's, plain here).
        const tb::SynthRequest defaults =
            tb::SynthDialog(QStringLiteral("auto"), seeds[2])
                .request(QString::fromStdString(tb::bundledModelDir()));
        QCOMPARE(defaults.seeds, QStringLiteral("accepted"));
        QCOMPARE(defaults.options.chatTemplate, std::string("plain"));
        QCOMPARE(defaults.selectedId, qint64(seeds[2]));
        tb::SynthRequest request;
        request.modelDir = QString::fromStdString(tb::bundledModelDir());
        request.seeds = QStringLiteral("accepted");
        request.options.perSeed = 2;
        request.options.chatTemplate = "alpaca";
        request.options.generate.greedy = true;
        request.options.generate.maxNewTokens = 8;
        QVERIFY(page->generateSynthetic(request));
        QString error;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY2(
            page->message().contains(QStringLiteral("Generated 4 synthetic records from 2 seeds")),
            qPrintable(page->message()));
        QCOMPARE(page->model()->rowCount(), 7);
        auto store = tb::DataStore::open(path.toStdString(), false);
        tb::RecordQuery synthetic;
        synthetic.synthetic = true;
        const auto made = store->records(synthetic);
        QCOMPARE(made.size(), size_t(4));
        for (const auto& r : made) {
            QCOMPARE(r.status, tb::ReviewStatus::Pending);
            QVERIFY(r.fields["seed_id"] == nlohmann::json(seeds[0]) ||
                    r.fields["seed_id"] == nlohmann::json(seeds[1]));
            QVERIFY(!r.fields["output"].get<std::string>().empty());
        }
    }

    // CSV with a column mapping through the import dialog: the preview shows the header, the mapped
    // columns become the record's fields, the others stay as extra fields.
    void importCsvWithColumnMapping()
    {
        const QString file = m_dir.filePath(QStringLiteral("qa.csv"));
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("question,answer,topic\n"
                    "\"What is 2+2?\",Four,math\n"
                    "\"Name a colour, any colour\",\"Blue, \"\"sky\"\" blue\",art\n"
                    "Broken row,only two\n");
        }
        const QString store = m_dir.filePath(QStringLiteral("csv.tbstore"));
        tb::DataStore::open(store.toStdString(), true);
        tb::ImportDialog dialog(store, QStringLiteral("ana"),
                                QString::fromStdString(tb::bundledModelDir()));
        dialog.setFile(file);
        QTRY_VERIFY_WITH_TIMEOUT(
            dialog.preview().columns.size() == 3 || !dialog.preview().error.isEmpty(), 10000);
        QCOMPARE(dialog.preview().columns,
                 (QStringList{QStringLiteral("question"), QStringLiteral("answer"),
                              QStringLiteral("topic")}));
        dialog.setColumn(QStringLiteral("instruction"), QStringLiteral("question"));
        dialog.setColumn(QStringLiteral("output"), QStringLiteral("answer"));
        QSignalSpy done(&dialog, &tb::ImportDialog::imported);
        QVERIFY(dialog.startImport());
        QVERIFY(done.wait(30000));
        QVERIFY2(dialog.outcome().error.isEmpty(), qPrintable(dialog.outcome().error));
        QCOMPARE(dialog.outcome().imported, qint64(2));
        QCOMPARE(dialog.outcome().rejected.size(), size_t(1));
        QCOMPARE(dialog.outcome().rejected[0].line, int64_t(4));
        QCOMPARE(dialog.rejectionTable()->rowCount(), 1);
        const auto records = tb::DataStore::open(store.toStdString(), false)->records();
        QCOMPARE(records.size(), size_t(2));
        QCOMPARE(records[1].kind, std::string("alpaca"));
        QCOMPARE(records[1].fields["instruction"], nlohmann::json("Name a colour, any colour"));
        QCOMPARE(records[1].fields["output"], nlohmann::json("Blue, \"sky\" blue"));
        QCOMPARE(records[1].fields["topic"], nlohmann::json("art"));
    }

    void importCancelWritesNothing()
    {
        const QString file =
            m_dir.filePath(QStringLiteral("big.jsonl"));  // from importStaysResponsive
        const QString store = m_dir.filePath(QStringLiteral("cancel.tbstore"));
        tb::DataStore::open(store.toStdString(), true);
        tb::ImportDialog dialog(store, QStringLiteral("ana"),
                                QString::fromStdString(tb::bundledModelDir()));
        QSignalSpy done(&dialog, &tb::ImportDialog::imported);
        dialog.setFile(file);
        QVERIFY(dialog.startImport());
        dialog.cancelImport();
        QVERIFY(done.wait(60000));
        QVERIFY(dialog.outcome().error.contains(QStringLiteral("cancelled")));
        QCOMPARE(tb::DataStore::open(store.toStdString(), false)->count(), qint64(0));
    }

    // One cluster can hold most of a store (a templated dataset): the panel reads and shows its
    // first 50 records and a line for the rest.
    void dedupShowsTheFirstRecordsOfALargeCluster()
    {
        const QString path = m_dir.filePath(QStringLiteral("one-cluster.tbstore"));
        makeStore(path.toStdString(), 2, 0);
        {
            auto store = tb::DataStore::open(path.toStdString(), false);
            const auto first = store->record(store->recordIds().front());
            std::vector<tb::NewRecord> copies(59);
            for (tb::NewRecord& r : copies) {
                r.kind = first.kind;
                r.fields = first.fields;
            }
            store->addRecords(copies, 0, "test");
        }
        auto page = openPage(path);
        QVERIFY(page);
        tb::CurationPanel* curation = page->curationPanel();
        curation->setNearThreshold(0);
        QVERIFY(curation->findDuplicates());
        QString error;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QCOMPARE(curation->dedupReport()->exactDuplicates, int64_t(59));
        QCOMPARE(curation->clusterModel()->rowCount(), 1);
        QStandardItem* cluster = curation->clusterModel()->item(0);
        QCOMPARE(cluster->rowCount(), 51);
        QVERIFY2(cluster->child(50)->text().contains(QStringLiteral("10 more")),
                 qPrintable(cluster->child(50)->text()));
    }

    void dedupApplyAndUndo()
    {
        const QString path = m_dir.filePath(QStringLiteral("dedup.tbstore"));
        makeStore(path.toStdString(), 50, 10);
        auto page = openPage(path);
        QVERIFY(page);
        QCOMPARE(page->model()->rowCount(), 60);
        tb::CurationPanel* curation = page->curationPanel();
        curation->setNearThreshold(0);
        QVERIFY(curation->findDuplicates());
        QString error;
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(curation->dedupReport());
        QCOMPARE(curation->dedupReport()->exactDuplicates, int64_t(10));
        QCOMPARE(curation->clusterModel()->rowCount(), 10);
        QCOMPARE(page->model()->rowCount(), 60);  // finding removes nothing
        QVERIFY(curation->applyDedup());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QCOMPARE(page->model()->rowCount(), 50);
        QCOMPARE(tb::DataStore::open(path.toStdString(), false)->count(), int64_t(50));
        QVERIFY(curation->dedupOperation() > 0);
        QVERIFY(curation->undoDedup());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QCOMPARE(page->model()->rowCount(), 60);
        QCOMPARE(tb::DataStore::open(path.toStdString(), false)->count(), int64_t(60));
        // The History tab lists the dedup and its undo; "Undo last" walks back past both, to the
        // review.
        page->sideTabs()->setCurrentWidget(page->historyPanel());
        QSignalSpy refreshed(page->historyPanel(), &tb::HistoryPanel::refreshed);
        QVERIFY(refreshed.wait(10000) || refreshed.count() > 0);
        QCOMPARE(page->historyPanel()->table()->item(0, 1)->text(), QStringLiteral("undo"));
        QCOMPARE(page->historyPanel()->table()->item(1, 1)->text(), QStringLiteral("dedup"));
        QVERIFY(page->undoLastOperation());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(page->message().contains(QStringLiteral("review")));
        QCOMPARE(page->model()->rowCount(), 60);
        QCOMPARE(tb::DataStore::open(path.toStdString(), false)
                     ->count(withStatus(tb::ReviewStatus::Accepted)),
                 int64_t(0));

        // Removed again, then another store opened: the panel's result and its undoable operation
        // were this store's, so they go; Undo cannot reverse operation N of the other store.
        QVERIFY(curation->applyDedup());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(curation->dedupOperation() > 0);
        QVERIFY(curation->dedupReport());
        page->statsPanel()->setMaxLength(40);
        QVERIFY(page->statsPanel()->compute());
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(page->statsPanel()->report());
        const QString other = m_dir.filePath(QStringLiteral("dedup-other.tbstore"));
        makeStore(other.toStdString(), 30, 5);
        const int64_t otherOperations = [&] {
            auto s = tb::DataStore::open(other.toStdString(), false);
            return int64_t(s->operations().size());
        }();
        QVERIFY(tbtest::openStoreAndWait(*page, other));
        QCOMPARE(curation->dedupOperation(), qint64(0));
        QVERIFY(!curation->dedupReport());
        QCOMPARE(curation->clusterModel()->rowCount(), 0);
        QVERIFY(!curation->undoDedup());
        QVERIFY(!page->statsPanel()->report());
        QVERIFY(!page->statsPanel()->cutoffLineAt());
        auto otherStore = tb::DataStore::open(other.toStdString(), false);
        QCOMPARE(otherStore->count(), int64_t(35));
        QCOMPARE(int64_t(otherStore->operations().size()), otherOperations);

        // A job that runs on the first store while the second opens finishes without showing its
        // result on the second.
        QVERIFY(tbtest::openStoreAndWait(*page, path));
        QVERIFY(curation->findDuplicates());
        QVERIFY(page->openStore(other));
        QVERIFY2(waitJob(*page, &error), qPrintable(error));
        QVERIFY(waitIds(*page));
        QTRY_VERIFY_WITH_TIMEOUT(!page->opening(), 30000);
        QVERIFY(!curation->dedupReport());
    }

    // Opening runs the schema's migrations on a worker: an older store whose migration waits for
    // another writer leaves the GUI thread free, and opens migrated once the writer is done.
    void openingMigratesOnAWorker()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("old.tbstore"));
        QCOMPARE(tb::DataStore::openAtVersion(path.toStdString(), 3)->schemaVersion(), 3);
        auto writer = std::make_unique<tb::sql::Database>(path.toStdString(), false);
        writer->exec("BEGIN IMMEDIATE");  // another process importing into the store
        tb::DataPage page;
        QSignalSpy opened(&page, &tb::DataPage::storeOpened);
        QSignalSpy failed(&page, &tb::DataPage::storeFailed);
        QVERIFY(page.openStore(path));
        QVERIFY(page.opening());
        int ticks = 0;
        QTimer tick;
        connect(&tick, &QTimer::timeout, [&ticks] { ++ticks; });
        tick.start(10);
        QTRY_VERIFY_WITH_TIMEOUT(ticks >= 5, 5000);  // the event loop runs while the open waits
        QVERIFY(page.opening());
        QVERIFY(opened.isEmpty() && failed.isEmpty());
        QVERIFY(!page.store());
        writer->exec("COMMIT");
        writer.reset();
        QVERIFY(opened.wait(30000));
        QVERIFY(failed.isEmpty());
        QVERIFY(!page.opening());
        QCOMPARE(page.store()->schemaVersion(), tb::DataStore::kSchemaVersion);
    }
    // Two opens in a row: the later one is the store shown, the earlier is dropped; a store that
    // is not one is reported by name and leaves the open store in place.
    void laterOpenSupersedesAndFailureKeepsStore()
    {
        QTemporaryDir dir;
        const QString a = dir.filePath(QStringLiteral("a.tbstore"));
        const QString b = dir.filePath(QStringLiteral("b.tbstore"));
        makeStore(a.toStdString(), 5);
        makeStore(b.toStdString(), 7);
        tb::DataPage page;
        QSignalSpy opened(&page, &tb::DataPage::storeOpened);
        QVERIFY(page.openStore(a));
        QVERIFY(page.openStore(b));
        QVERIFY(opened.wait(30000));
        QTest::qWait(200);  // time for a late result of the first open to (wrongly) show up
        QCOMPARE(opened.count(), 1);
        QCOMPARE(opened.first().at(0).toString(), b);
        QCOMPARE(QString::fromStdString(page.store()->path()), b);
        QVERIFY(waitIds(page));
        QCOMPARE(page.model()->rowCount(), 7);

        const QString bad = dir.filePath(QStringLiteral("bad.tbstore"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("SQLite format 3 but not really");
        }
        QSignalSpy failed(&page, &tb::DataPage::storeFailed);
        QString error;
        QVERIFY(page.openStore(bad, false, &error));
        QVERIFY(failed.wait(30000));
        QVERIFY2(failed.first().at(0).toString().contains(bad),
                 qPrintable(failed.first().at(0).toString()));
        QVERIFY(page.message().contains(bad));
        QCOMPARE(QString::fromStdString(page.store()->path()), b);  // still the open store
        QVERIFY(!page.openStore(dir.filePath(QStringLiteral("absent.tbstore")), false, &error));
        QVERIFY2(error.contains(QStringLiteral("absent.tbstore")), qPrintable(error));
    }

    void bundledStoreAndHistogram()
    {
        const QString path = m_dir.filePath(QStringLiteral("tiny.tbstore"));
        tb::DataPage page;
        QSignalSpy opened(&page, &tb::DataPage::storeOpened);
        page.openBundledStore(path);
        QVERIFY(opened.wait(30000));
        auto check = tb::DataStore::open(path.toStdString(), false);
        QCOMPARE(check->count(inSplit("train")), int64_t(500));
        QCOMPARE(check->count(inSplit("validation")), int64_t(80));
        QVERIFY(waitIds(page));
        QCOMPARE(page.model()->rowCount(), 580);

        page.statsPanel()->setMaxLength(40);
        QVERIFY(page.statsPanel()->compute());
        QString error;
        QVERIFY2(waitJob(page, &error), qPrintable(error));
        const auto& report = page.statsPanel()->report();
        QVERIFY(report);
        QCOMPARE(report->records, int64_t(580));
        QCOMPARE(page.statsPanel()->cutoffLineAt(), std::optional<double>(40));
        QVERIFY(page.statsPanel()->histogramBins() > 1);
        // The truncated count is what the stored counts say.
        int64_t over = 0;
        check->forEach({}, [&](const tb::StoredRecord& r) {
            over += r.tokenCount > 40;
            return true;
        });
        QCOMPARE(report->truncated, over);
        QVERIFY(page.statsPanel()->truncatedText().contains(QString::number(over)));
        // Another max length (the Memory page's slider, the run config) recounts the truncated
        // records from the report on the spot: no job reads the whole store again.
        QSignalSpy started(page.jobs(), &tb::DataJobs::started);
        page.statsPanel()->setMaxLength(25);
        QTRY_COMPARE(report->maxLength, int64_t(25));
        int64_t over25 = 0;
        check->forEach({}, [&](const tb::StoredRecord& r) {
            over25 += r.tokenCount > 25;
            return true;
        });
        QVERIFY(over25 > over);
        QCOMPARE(report->truncated, over25);
        QCOMPARE(page.statsPanel()->cutoffLineAt(), std::optional<double>(25));
        QCOMPARE(started.size(), 0);
        QVERIFY(!page.jobs()->busy());
        QVERIFY(!page.statsPanel()->stale());
        // Records changed since the count (ten removed by a job): the next max length counts the
        // store again, instead of recounting lengths that include the removed ones.
        QVERIFY(page.jobs()->run(
            QStringLiteral("Remove ten"),
            [](tb::DataStore& store, const tb::CurateProgress&) -> tb::DataJobs::Finish {
                std::vector<tb::DataStore::Change> changes;
                for (int64_t id = 1; id <= 10; ++id)
                    changes.push_back({id, "removed", true});
                store.applyOperation("remove", "test", nlohmann::json::object(),
                                     nlohmann::json::object(), changes);
                return {};
            }));
        QVERIFY2(waitJob(page, &error), qPrintable(error));
        QVERIFY(page.statsPanel()->stale());
        page.statsPanel()->setMaxLength(30);
        QTRY_COMPARE_WITH_TIMEOUT(started.size(), 2, 10000);  // the removal, then the count
        QVERIFY2(waitJob(page, &error), qPrintable(error));
        QCOMPARE(page.statsPanel()->report()->records, int64_t(570));
        QCOMPARE(page.statsPanel()->report()->maxLength, int64_t(30));
        QVERIFY(!page.statsPanel()->stale());
        // The table shows the counts now.
        QVERIFY(page.model()
                    ->data(page.model()->index(0, tb::RecordTableModel::ColTokens))
                    .toLongLong() > 0);
    }

    // In the studio the statistics render records with the run's chat template, so the truncated
    // count is the one training will see.
    void statsUseTheRunsTemplate()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.tbstore"));
        tb::StudioState state;
        state.updateConfig(
            [](tb::TrainConfig& c) { c.data.chatTemplate = tb::ChatTemplateFamily::Alpaca; });
        tb::DataPage page(&state);
        QSignalSpy opened(&page, &tb::DataPage::storeOpened);
        page.openBundledStore(path);
        QVERIFY(opened.wait(30000));
        page.statsPanel()->setMaxLength(40);
        QVERIFY(page.statsPanel()->compute());
        QString error;
        QVERIFY2(waitJob(page, &error), qPrintable(error));
        QCOMPARE(page.statsPanel()->report()->chatTemplate, std::string("alpaca"));
    }

    // DataJobs reports through the buffered pattern: thousands of progress calls arrive as a few
    // batched signals (the latest fraction each), the result finishes on the GUI thread, and cancel
    // still stops a job.
    void dataJobsReportInBatches()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("jobs.tbstore"));
        makeStore(path.toStdString(), 20);
        tb::DataJobs jobs;
        jobs.setStorePath(path);
        QSignalSpy progress(&jobs, &tb::DataJobs::progress);
        QSignalSpy finished(&jobs, &tb::DataJobs::finished);
        std::atomic<int> calls{0};
        int64_t counted = -1;
        QThread* gui = QThread::currentThread();
        QThread* finishedOn = nullptr;
        const int drainsBefore = jobs.drains();
        QVERIFY(jobs.run(
            QStringLiteral("Count"),
            [&](tb::DataStore& store, const tb::CurateProgress& report) -> tb::DataJobs::Finish {
                for (int i = 1; i <= 2000; ++i) {
                    ++calls;
                    report("counting", i / 2000.0);
                    std::this_thread::sleep_for(
                        std::chrono::microseconds(200));  // a worker's unit of work
                }
                const int64_t n = store.count(tb::RecordQuery{});
                return [&counted, &finishedOn, n] {
                    counted = n;
                    finishedOn = QThread::currentThread();
                };
            }));
        QVERIFY(jobs.busy());
        QVERIFY(finished.wait(30000));
        QCOMPARE(finished.first().at(1).toString(), QString());
        QVERIFY(!jobs.busy());
        QCOMPARE(calls.load(), 2000);
        QCOMPARE(counted, int64_t(20));
        QCOMPARE(finishedOn, gui);
        QVERIFY(progress.size() >= 1);
        const int drains = jobs.drains() - drainsBefore;
        qInfo("data job: %d progress calls, %lld signals, %d drains", calls.load(),
              qlonglong(progress.size()), drains);
        QVERIFY2(progress.size() <= drains && drains * 10 < 2000,
                 qPrintable(QString::number(drains)));
        double last = 0;
        for (const auto& args : progress) {
            QCOMPARE(args.at(0).toString(), QStringLiteral("counting"));
            QVERIFY(args.at(1).toDouble() >= last && args.at(1).toDouble() <= 1.0);
            last = args.at(1).toDouble();
        }

        // Cancel: the job's progress callback answers false; the job returns and finishes.
        finished.clear();
        progress.clear();
        bool finishRan = false;
        QVERIFY(jobs.run(
            QStringLiteral("Wait"),
            [&finishRan](tb::DataStore&, const tb::CurateProgress& report) -> tb::DataJobs::Finish {
                while (report("waiting", 0.5))
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                return [&finishRan] { finishRan = true; };
            }));
        QVERIFY(progress.wait(10000));
        QVERIFY(jobs.busy());
        jobs.cancel();
        QVERIFY(finished.wait(10000));
        QVERIFY(finishRan);
        QVERIFY(!jobs.busy());
    }

private:
    QTemporaryDir m_dir;
    QString m_big;
};

QTEST_MAIN(TestDataPage)
#include "test_data_page.moc"
