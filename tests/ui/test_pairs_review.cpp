// Data page, Pairs tab (label gui, offscreen): the pair table model under
// QAbstractItemModelTester; the review keys A / B / T / S / W, an in-place answer edit and Ctrl+Z
// writing to the store (read back through a second connection), the next unjudged pair selected;
// the agreement shown equal to pairChoiceAgreement and to hand-computed figures, adjudication of
// a disputed pair; and a pair import on the page's worker listing its rejected rows by line.
#include "data_jobs.h"
#include "data_page.h"
#include "data_page_util.h"
#include "pair_table_model.h"
#include "pairs_view.h"
#include "test_util.h"

#include "data/curate/pair_curate.h"
#include "data/store/pairs_store.h"
#include "data/store/sqlite.h"
#include "data/store/store.h"

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <thread>

namespace {

// n plain-text pairs in TRL's standard layout: "prompt i", "good answer i", "bad answer i".
std::string writePairs(const QTemporaryDir& dir, const QString& name, int n)
{
    const std::string path = dir.filePath(name).toStdString();
    std::ofstream out(path);
    for (int i = 1; i <= n; ++i)
        out << nlohmann::json{{"prompt", "prompt " + std::to_string(i)},
                              {"chosen", "good answer " + std::to_string(i)},
                              {"rejected", "bad answer " + std::to_string(i)}}
                   .dump()
            << "\n";
    return path;
}

QString makeStore(const QTemporaryDir& dir, const QString& name, int pairs)
{
    const QString path = dir.filePath(name);
    auto store = tb::DataStore::open(path.toStdString(), true);
    tb::importPairs(*store, writePairs(dir, name + QStringLiteral(".jsonl"), pairs),
                    tb::PairLayout::Auto, "test");
    return path;
}

bool waitPairs(tb::DataPage& page, int ms = 30000)
{
    QElapsedTimer timer;
    timer.start();
    while (page.pairsView()->model()->loading() && timer.elapsed() < ms)
        QTest::qWait(2);
    return !page.pairsView()->model()->loading();
}

std::unique_ptr<tb::DataPage> openPage(const QString& store)
{
    auto page = std::make_unique<tb::DataPage>();
    page->resize(1300, 850);
    page->setAnnotator(QStringLiteral("ana"));
    if (!tbtest::openStoreAndWait(*page, store) || !waitPairs(*page))
        return nullptr;
    page->views()->setCurrentWidget(page->pairsView());
    page->show();
    page->activateWindow();
    if (!QTest::qWaitForWindowActive(page.get()))
        return nullptr;
    page->pairsView()->table()->setFocus();
    return page;
}

const tb::PairChoice* choiceOf(const tb::StoredPair& p, const std::string& who)
{
    for (const tb::PairChoice& c : p.choices)
        if (c.annotator == who)
            return &c;
    return nullptr;
}

}  // namespace

class TestPairsReview : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        tbtest::isolateUserFolders();
        QCoreApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QVERIFY(m_dir.isValid());
    }

    void modelUnderTester()
    {
        const QString path = makeStore(m_dir, QStringLiteral("model.tbstore"), 300);
        auto store = tb::DataStore::open(path.toStdString(), false);
        const std::vector<tb::StoredPair> pairs = tb::storedPairs(*store);
        QCOMPARE(int(pairs.size()), 300);
        tb::PairTableModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setStore(store.get());
        model.setAnnotator(QStringLiteral("ana"));
        QCOMPARE(model.rowCount(), 300);
        QCOMPARE(model.columnCount(), int(tb::PairTableModel::ColumnCount));
        const int last = 299;  // in the third page
        QCOMPARE(model.idAt(last), qint64(pairs[size_t(last)].id));
        QCOMPARE(model.data(model.index(last, tb::PairTableModel::ColPrompt)).toString(),
                 QStringLiteral("prompt 300"));
        QCOMPARE(model.data(model.index(0, tb::PairTableModel::ColStatus)).toString(),
                 QStringLiteral("unjudged"));
        const int64_t id0 = pairs[0].id, id1 = pairs[1].id;
        tb::recordPairChoice(*store, id0, "ana", "b");
        tb::swapPair(*store, id1, "ana");
        tb::recordPairChoice(*store, id1, "bob", "a");  // A is the stored rejected answer now
        model.refreshPair(id0);
        model.refreshPair(id1);
        QCOMPARE(model.data(model.index(0, tb::PairTableModel::ColStatus)).toString(),
                 QStringLiteral("B"));
        QCOMPARE(model.data(model.index(1, tb::PairTableModel::ColAnnotators)).toString(),
                 QStringLiteral("bob: A"));
        QCOMPARE(tb::PairTableModel::answerText(*model.pairAt(1), 0),
                 QStringLiteral("bad answer 2"));
        QCOMPARE(model.nextUnjudged(-1), 1);  // row 0 is ana's, row 1 only bob's
        model.setAnnotator(QStringLiteral("bob"));
        QCOMPARE(model.nextUnjudged(0), 2);
        QCOMPARE(model.nextUnjudged(299), 0);  // wraps round
        tb::scanPairs(*store, "test");         // nothing to find: the flags column stays empty
        model.refresh();
        QCOMPARE(model.rowCount(), 300);
        QCOMPARE(model.data(model.index(5, tb::PairTableModel::ColFlags)).toString(), QString());
        QVERIFY(model.pageFetches() >= 3);
    }

    void keysRecordChoicesSwapEditUndo()
    {
        const QString path = makeStore(m_dir, QStringLiteral("keys.tbstore"), 8);
        auto check = tb::DataStore::open(path.toStdString(), false);
        const std::vector<tb::StoredPair> pairs = tb::storedPairs(*check);
        std::vector<int64_t> id;
        for (const tb::StoredPair& p : pairs)
            id.push_back(p.id);
        tb::recordPairChoice(*check, id[2], "ana", "tie");  // judged before: the keys skip it
        auto page = openPage(path);
        QVERIFY(page);
        tb::PairsView* view = page->pairsView();
        QTableView* table = view->table();
        QCOMPARE(view->currentPairId(), qint64(id[0]));
        QCOMPARE(view->promptView()->toPlainText(), QStringLiteral("prompt 1"));
        QCOMPARE(view->answerView(0)->toPlainText(), QStringLiteral("good answer 1"));
        QCOMPARE(view->answerView(1)->toPlainText(), QStringLiteral("bad answer 1"));

        QTest::keyClick(table, Qt::Key_A);
        const tb::PairChoice* c = choiceOf(tb::storedPair(*check, id[0]), "ana");
        QVERIFY(c);
        QCOMPARE(c->choice, std::string("a"));
        QCOMPARE(c->verdict, std::string("chosen"));
        QCOMPARE(view->currentPairId(), qint64(id[1]));
        QTest::keyClick(table, Qt::Key_B);
        QCOMPARE(tb::storedPair(*check, id[1]).verdict, std::string("rejected"));
        QCOMPARE(view->currentPairId(), qint64(id[3]));  // id[2] was judged already

        // W: the stored rejected answer is shown as A; A then picks it.
        QTest::keyClick(table, Qt::Key_W);
        QVERIFY(tb::storedPair(*check, id[3]).swapped);
        QCOMPARE(view->currentPairId(), qint64(id[3]));
        QCOMPARE(view->answerView(0)->toPlainText(), QStringLiteral("bad answer 4"));
        QCOMPARE(view->answerView(1)->toPlainText(), QStringLiteral("good answer 4"));
        QCOMPARE(view->model()->data(view->model()->index(3, 0), Qt::DisplayRole).toLongLong(),
                 qint64(id[3]));
        QTest::keyClick(table, Qt::Key_A);
        c = choiceOf(tb::storedPair(*check, id[3]), "ana");
        QVERIFY(c);
        QCOMPARE(c->choice, std::string("a"));
        QCOMPARE(c->verdict, std::string("rejected"));
        QCOMPARE(view->currentPairId(), qint64(id[4]));
        QTest::keyClick(table, Qt::Key_T);
        QCOMPARE(tb::storedPair(*check, id[4]).verdict, std::string("tie"));
        QTest::keyClick(table, Qt::Key_S);
        QCOMPARE(choiceOf(tb::storedPair(*check, id[5]), "ana")->verdict, std::string("skip"));
        QCOMPARE(view->currentPairId(), qint64(id[6]));
        QCOMPARE(
            view->model()->data(view->model()->index(5, tb::PairTableModel::ColStatus)).toString(),
            QStringLiteral("skip"));

        // A double-click on B edits it in place; Ctrl+Return saves it with editPairAnswer.
        QTest::mouseDClick(view->answerView(1)->viewport(), Qt::LeftButton);
        QCOMPARE(view->editingSide(), 1);
        QVERIFY(!view->answerView(1)->isReadOnly());
        QTRY_VERIFY(view->answerView(1)->hasFocus());
        view->answerView(1)->selectAll();
        QTest::keyClicks(view->answerView(1), QStringLiteral("Ab improved"));  // letters type
        // The table read again (a job ended) keeps the edit; a click on another pair comes back
        // to the typed text instead of dropping it.
        view->refresh();
        QVERIFY(waitPairs(*page));
        QCOMPARE(view->editingSide(), 1);
        QCOMPARE(view->answerView(1)->toPlainText(), QStringLiteral("Ab improved"));
        QVERIFY(view->selectPair(id[0]));
        QTRY_COMPARE(view->currentPairId(), id[6]);
        QCOMPARE(view->editingSide(), 1);
        QCOMPARE(view->answerView(1)->toPlainText(), QStringLiteral("Ab improved"));
        QVERIFY(page->message().contains(QStringLiteral("unsaved edit")));
        QTest::keyClick(view->answerView(1), Qt::Key_Return, Qt::ControlModifier);
        QCOMPARE(view->editingSide(), -1);
        QCOMPARE(tb::storedPair(*check, id[6]).pair.rejectedText, std::string("Ab improved"));
        QCOMPARE(tb::storedPair(*check, id[6]).pair.chosenText, std::string("good answer 7"));
        QVERIFY(choiceOf(tb::storedPair(*check, id[6]), "ana") == nullptr);  // no key leaked
        QCOMPARE(view->answerView(1)->toPlainText(), QStringLiteral("Ab improved"));

        // While a Data job holds the store, Ctrl+Z waits its turn (it says so) instead of
        // blocking the window on the job's write lock.
        std::atomic<bool> release{false};
        QVERIFY(page->jobs()->run(QStringLiteral("Hold"),
                                  [&release](tb::DataStore& s, const tb::CurateProgress&) {
                                      s.database().exec("BEGIN IMMEDIATE");
                                      while (!release)
                                          std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                      s.database().exec("COMMIT");
                                      return tb::DataJobs::Finish{};
                                  }));
        QVERIFY(table->hasFocus());
        QTest::keyClick(table, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(tb::storedPair(*check, id[6]).pair.rejectedText, std::string("Ab improved"));
        QVERIFY2(page->message().contains(QStringLiteral("Wait for")), qPrintable(page->message()));
        release = true;
        QString jobError;
        QVERIFY2(tbtest::waitJob(*page, &jobError), qPrintable(jobError));
        // Ctrl+Z undoes through the store: the edit, then the skip, then the tie.
        QVERIFY(table->hasFocus());
        QTest::keyClick(table, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(tb::storedPair(*check, id[6]).pair.rejectedText, std::string("bad answer 7"));
        QVERIFY(waitPairs(*page));
        QCOMPARE(view->answerView(1)->toPlainText(), QStringLiteral("bad answer 7"));
        QTest::keyClick(table, Qt::Key_Z, Qt::ControlModifier);
        QVERIFY(choiceOf(tb::storedPair(*check, id[5]), "ana") == nullptr);
        QVERIFY(waitPairs(*page));
        QTest::keyClick(table, Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(tb::storedPair(*check, id[4]).verdict, std::string("chosen"));  // as stored
        QVERIFY(waitPairs(*page));
        QCOMPARE(
            view->model()->data(view->model()->index(5, tb::PairTableModel::ColStatus)).toString(),
            QStringLiteral("unjudged"));
        // The undone choices are undone in the store's log too.
        int undos = 0;
        for (const tb::OperationInfo& op : check->operations())
            undos += op.kind == "undo";
        QCOMPARE(undos, 3);
        // The Records tab keeps its own keys: A there does not judge a pair.
        const size_t choices = tb::pairChoices(*check).size();
        page->views()->setCurrentIndex(0);
        page->table()->setFocus();
        QTRY_VERIFY(page->table()->hasFocus());
        QTest::keyClick(page->table(), Qt::Key_A);
        QCOMPARE(tb::pairChoices(*check).size(), choices);
        QCOMPARE(choices, size_t(4));  // ana's on pairs 1, 2, 4 (keys) and 3 (before); 5, 6 undone
    }

    void agreementAndAdjudication()
    {
        const QString path = makeStore(m_dir, QStringLiteral("agree.tbstore"), 6);
        auto check = tb::DataStore::open(path.toStdString(), false);
        std::vector<int64_t> id;
        for (const tb::StoredPair& p : tb::storedPairs(*check))
            id.push_back(p.id);
        // ana: chosen, rejected, chosen, tie, skip; bob: chosen, chosen, chosen, tie, chosen.
        // Pair 3 is swapped before ana's choice, so her "b" there still picks the chosen answer.
        tb::recordPairChoice(*check, id[0], "ana", "a");
        tb::recordPairChoice(*check, id[1], "ana", "b");
        tb::swapPair(*check, id[2], "ana");
        tb::recordPairChoice(*check, id[2], "ana", "b");
        tb::recordPairChoice(*check, id[3], "ana", "tie");
        tb::recordPairChoice(*check, id[4], "ana", "skip");
        tb::recordPairChoice(*check, id[0], "bob", "a");
        tb::recordPairChoice(*check, id[1], "bob", "a");
        tb::recordPairChoice(*check, id[2], "bob", "b");
        tb::recordPairChoice(*check, id[3], "bob", "tie");
        tb::recordPairChoice(*check, id[4], "bob", "a");
        auto page = openPage(path);
        QVERIFY(page);
        tb::PairsView* view = page->pairsView();
        if (view->agreementTable()->rowCount() == 0) {
            QSignalSpy refreshed(view, &tb::PairsView::agreementRefreshed);
            QVERIFY(refreshed.wait(10000));
        }
        // By hand, over the 4 pairs both judged (the skip left out): 3 agree, po = 0.75;
        // ana chosen 2/4, rejected 1/4, tie 1/4; bob chosen 3/4, tie 1/4;
        // pe = 0.5 * 0.75 + 0.25 * 0.25 = 0.4375; kappa = (0.75 - 0.4375) / 0.5625 = 0.5556.
        const std::vector<tb::PairAgreement> api = tb::pairChoiceAgreement(*check);
        QCOMPARE(int(api.size()), 1);
        QCOMPARE(api[0].items, int64_t(4));
        QVERIFY(std::abs(api[0].kappa - 0.3125 / 0.5625) < 1e-9);
        QTableWidget* t = view->agreementTable();
        QCOMPARE(t->rowCount(), 1);
        QCOMPARE(t->item(0, 0)->text(), QStringLiteral("ana – bob"));
        QCOMPARE(t->item(0, 1)->text(), QStringLiteral("4"));
        QCOMPARE(t->item(0, 2)->text(), QStringLiteral("3"));
        QCOMPARE(t->item(0, 3)->text(), QString::number(api[0].percent, 'f', 1));
        QCOMPARE(t->item(0, 3)->text(), QStringLiteral("75.0"));
        QCOMPARE(t->item(0, 4)->text(), QString::number(api[0].kappa, 'f', 3));
        QCOMPARE(t->item(0, 4)->text(), QStringLiteral("0.556"));

        // Disputed: pair 2 (rejected vs chosen) and pair 5 (skip vs chosen).
        const std::vector<int64_t> disputed = tb::disputedPairs(*check);
        QCOMPARE(int(disputed.size()), 2);
        QCOMPARE(view->disputedList()->count(), 2);
        QCOMPARE(view->disputedList()->item(0)->data(Qt::UserRole).toLongLong(), qint64(id[1]));
        view->disputedList()->setCurrentRow(0);
        QCOMPARE(view->currentPairId(), qint64(id[1]));
        QSignalSpy refreshed(view, &tb::PairsView::agreementRefreshed);
        QVERIFY(view->adjudicate(QStringLiteral("b")));
        const tb::StoredPair settled = tb::storedPair(*check, id[1]);
        QCOMPARE(settled.adjudication.value_or(""), std::string("rejected"));
        QCOMPARE(settled.verdict, std::string("rejected"));
        QVERIFY(refreshed.wait(10000));
        QCOMPARE(view->disputedList()->count(), 1);
        QCOMPARE(
            view->model()->data(view->model()->index(1, tb::PairTableModel::ColVerdict)).toString(),
            QStringLiteral("B (adjudicated)"));
    }

    void importOnTheWorkerListsRejectedRows()
    {
        const QString path = makeStore(m_dir, QStringLiteral("import.tbstore"), 2);
        const QString file = m_dir.filePath(QStringLiteral("mixed.jsonl"));
        {
            std::ofstream out(file.toStdString());
            out << R"({"prompt": "p1", "chosen": "c1", "rejected": "r1"})"
                   "\n"
                << R"({"prompt": "p2", "chosen": "c2"})"
                   "\n"
                << R"({"chosen": "\n\nHuman: hi\n\nAssistant: hello", "rejected": "\n\nHuman: hi\n\nAssistant: go away"})"
                   "\n"
                << R"({"prompt": "p4", "chosen": "same", "rejected": "same"})"
                   "\n"
                << R"({"chosen": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "good"}], "rejected": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "bad"}], "score_chosen": 8, "score_rejected": 3})"
                   "\n";
        }
        auto page = openPage(path);
        QVERIFY(page);
        tb::PairsView* view = page->pairsView();
        QCOMPARE(view->model()->rowCount(), 2);
        QSignalSpy finished(page->jobs(), &tb::DataJobs::finished);
        QVERIFY(view->importFile(file, tb::PairLayout::Auto));
        QVERIFY(page->jobs()->busy());  // on the worker
        QVERIFY(finished.wait(30000));
        QCOMPARE(finished.first().at(1).toString(), QString());
        QVERIFY(waitPairs(*page));
        QCOMPARE(view->model()->rowCount(), 5);
        QTableWidget* r = view->rejectionTable();
        QCOMPARE(r->rowCount(), 2);
        QVERIFY(r->item(0, 0)->text().endsWith(QStringLiteral("mixed.jsonl:2")));
        QVERIFY(r->item(1, 0)->text().endsWith(QStringLiteral("mixed.jsonl:4")));
        QVERIFY2(r->item(0, 1)->text().contains(QStringLiteral("rejected")),
                 qPrintable(r->item(0, 1)->text()));
        QVERIFY(!r->item(1, 1)->text().isEmpty());
        QVERIFY(view->importSummary()->text().contains(QStringLiteral("Imported 3 pairs, 2 rows")));
        auto check = tb::DataStore::open(path.toStdString(), false);
        const std::vector<tb::StoredPair> pairs = tb::storedPairs(*check);
        QCOMPARE(int(pairs.size()), 5);
        QCOMPARE(pairs.back().pair.scoreChosen.value_or(0), 8.0);
        QCOMPARE(pairs[3].pair.layout, tb::PairLayout::HhRlhf);

        // A file with no valid row: nothing stored, the reasons still listed.
        const QString bad = m_dir.filePath(QStringLiteral("bad.jsonl"));
        {
            std::ofstream out(bad.toStdString());
            out << R"({"prompt": "x"})"
                   "\n"
                << R"({"prompt": "y", "chosen": 3, "rejected": "n"})"
                   "\n";
        }
        finished.clear();
        QVERIFY(view->importFile(bad, tb::PairLayout::Standard));
        QVERIFY(finished.wait(30000));
        QVERIFY(!finished.first().at(1).toString().isEmpty());
        QCOMPARE(r->rowCount(), 2);
        QVERIFY(r->item(1, 0)->text().endsWith(QStringLiteral("bad.jsonl:2")));
        QCOMPARE(int(tb::storedPairs(*check).size()), 5);

        // A wrong layout for a big file rejects every row: the table lists the first 10,000 and
        // one line for the rest (the count is the file's), not 10,005 rows of widgets.
        const QString many = m_dir.filePath(QStringLiteral("many.jsonl"));
        {
            std::ofstream out(many.toStdString());
            for (int i = 0; i < 10005; ++i)
                out << R"({"prompt": "p", "chosen": "c"})" << '\n';
        }
        finished.clear();
        QSignalSpy imported(view, &tb::PairsView::imported);
        QVERIFY(view->importFile(many, tb::PairLayout::Standard));
        QVERIFY(finished.wait(60000));
        QCOMPARE(r->rowCount(), 10001);
        QVERIFY(r->item(9999, 0)->text().endsWith(QStringLiteral("many.jsonl:10000")));
        QVERIFY2(r->item(10000, 0)->text().contains(QStringLiteral("5 more rows rejected")),
                 qPrintable(r->item(10000, 0)->text()));
        QCOMPARE(imported.size(), 1);
        QCOMPARE(imported.first().at(1).toInt(), 10005);
    }

private:
    QTemporaryDir m_dir;
};

QTEST_MAIN(TestPairsReview)
#include "test_pairs_review.moc"
