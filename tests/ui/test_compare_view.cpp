// Blind comparison view (label gui, offscreen): keys 1/2/3 and the buttons record verdicts that a
// second store connection reads, with the chosen answer the one shown on the side picked, the note
// saved, digits typed into the note left alone, no source label shown while judging, the progress
// label, the summary once every item is judged, and a re-judgement through Back.
#include "compare_view.h"

#include "data/curate/comparison.h"
#include "data/store/comparisons.h"
#include "data/store/store.h"

#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

namespace {

// n prompts with answers of "base" (X) and "tuned" (Y); no text names a source.
tb::NewComparisonSet makeSet(int n)
{
    tb::NewComparisonSet set;
    set.name = "eval";
    set.sourceX = "base";
    set.sourceY = "tuned";
    set.seed = 17;
    for (int i = 0; i < n; ++i) {
        const std::string k = std::to_string(i);
        set.prompts.push_back(std::string("Question ").append(k));
        set.answersX.push_back(std::string("First answer to ").append(k));
        set.answersY.push_back(std::string("Second answer to ").append(k));
    }
    return set;
}

// Every text the judging tab shows: labels, box titles, buttons, the text views.
QStringList shownTexts(QWidget* root)
{
    QStringList texts;
    for (auto* l : root->findChildren<QLabel*>())
        texts << l->text();
    for (auto* b : root->findChildren<QGroupBox*>())
        texts << b->title();
    for (auto* b : root->findChildren<QPushButton*>())
        texts << b->text();
    for (auto* e : root->findChildren<QPlainTextEdit*>())
        texts << e->toPlainText();
    return texts;
}

}  // namespace

class TestCompareView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keysRecordBlindVerdicts()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("cmp.tbstore")).toStdString();
        auto store = tb::DataStore::open(path);
        tb::addComparisonSet(*store, makeSet(4), "test");
        // The store as another process sees it: a connection of its own.
        auto check = tb::DataStore::open(path, false);

        tb::CompareView view;
        view.setStore(store.get());
        QCOMPARE(view.set(), QStringLiteral("eval"));
        QCOMPARE(view.currentItemId(), qint64(0));  // no annotator yet
        view.setAnnotator(QStringLiteral("ana"));
        view.show();
        view.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&view));
        view.setFocus();
        QCOMPARE(view.progressLabel()->text(), QStringLiteral("0 of 4 judged"));
        QVERIFY(!view.tabs()->isTabEnabled(1));
        QCOMPARE(view.currentItemId(), tb::blindItems(*check, "eval")[0].id);

        // 1 picks A. Digits typed into the note stay there; Enter goes back to the keys.
        const qint64 first = view.currentItemId();
        const QString a0 = view.answerAView()->toPlainText();
        const QString b0 = view.answerBView()->toPlainText();
        for (const QString& text : shownTexts(view.tabs()->widget(0)))
            QVERIFY2(!text.contains(QStringLiteral("base")) &&
                         !text.contains(QStringLiteral("tuned")),
                     qPrintable(text));
        QTest::keyClicks(view.noteEdit(), QStringLiteral("1 step clearer"));
        QVERIFY(tb::comparisonVerdicts(*check, "eval").empty());
        QTest::keyClick(view.noteEdit(), Qt::Key_Return);
        QTRY_VERIFY(view.hasFocus());
        QTest::keyClick(&view, Qt::Key_1);
        auto pairs = tb::preferencePairs(*check, "eval");
        QCOMPARE(pairs.size(), size_t(1));
        QCOMPARE(pairs[0].itemId, first);
        QCOMPARE(QString::fromStdString(pairs[0].chosen), a0);
        QCOMPARE(QString::fromStdString(pairs[0].rejected), b0);
        QCOMPARE(pairs[0].annotator, std::string("ana"));
        QCOMPARE(pairs[0].sourceChosen,
                 std::string(a0.startsWith(QStringLiteral("First")) ? "base" : "tuned"));
        QCOMPARE(tb::verdictOf(*check, first, "ana")->note, std::string("1 step clearer"));
        QCOMPARE(tb::verdictOf(*check, first, "ana")->choice, std::string("a"));
        QCOMPARE(view.progressLabel()->text(), QStringLiteral("1 of 4 judged"));
        QVERIFY(view.currentItemId() != first);
        QVERIFY(view.noteEdit()->text().isEmpty());

        // 2 picks B, with the focus on an answer view.
        const qint64 second = view.currentItemId();
        const QString b1 = view.answerBView()->toPlainText();
        view.answerAView()->setFocus();
        QTest::keyClick(view.answerAView(), Qt::Key_2);
        pairs = tb::preferencePairs(*check, "eval");
        QCOMPARE(pairs.size(), size_t(2));
        QCOMPARE(pairs[1].itemId, second);
        QCOMPARE(QString::fromStdString(pairs[1].chosen), b1);
        QCOMPARE(view.progressLabel()->text(), QStringLiteral("2 of 4 judged"));

        // 3 is a tie: a verdict, no pair.
        const qint64 third = view.currentItemId();
        QTest::keyClick(view.answerAView(), Qt::Key_3);
        QCOMPARE(tb::verdictOf(*check, third, "ana")->winner, std::string("tie"));
        QCOMPARE(tb::preferencePairs(*check, "eval").size(), size_t(2));
        QCOMPARE(view.progressLabel()->text(), QStringLiteral("3 of 4 judged"));

        // The last one with the button; then the summary opens.
        const qint64 fourth = view.currentItemId();
        const QString a3 = view.answerAView()->toPlainText();
        auto* pickA = view.findChild<QPushButton*>(QStringLiteral("comparePickA"));
        QVERIFY(pickA);
        QTest::mouseClick(pickA, Qt::LeftButton);
        pairs = tb::preferencePairs(*check, "eval");
        QCOMPARE(pairs.size(), size_t(3));
        QCOMPARE(pairs[2].itemId, fourth);
        QCOMPARE(QString::fromStdString(pairs[2].chosen), a3);
        QCOMPARE(view.progressLabel()->text(), QStringLiteral("4 of 4 judged"));
        QCOMPARE(view.currentItemId(), qint64(0));
        QVERIFY(view.tabs()->isTabEnabled(1));
        QCOMPARE(view.tabs()->currentIndex(), 1);
        const tb::WinRate w = tb::summarizeComparison(*check, "eval").winRates.at(0);
        const QString summary = view.summaryLabel()->text();
        QVERIFY2(summary.contains(QStringLiteral("<b>tuned</b> over <b>base</b>")) &&
                     summary.contains(QString::number(100 * w.rate, 'f', 1) + QLatin1Char('%')) &&
                     summary.contains(QString::number(100 * w.interval.lo, 'f', 1)) &&
                     summary.contains(QStringLiteral("4 verdicts")),
                 qPrintable(summary));
        QCOMPARE(view.verdictTable()->rowCount(), 4);
        QCOMPARE(view.verdictTable()->item(2, 1)->text(), QStringLiteral("ana: tie"));

        // Back shows the last item judged with its verdict; 2 replaces that verdict.
        QVERIFY(view.back());
        QCOMPARE(view.tabs()->currentIndex(), 0);
        QCOMPARE(view.currentItemId(), fourth);
        view.setFocus();
        QTest::keyClick(&view, Qt::Key_2);
        QCOMPARE(tb::verdictOf(*check, fourth, "ana")->choice, std::string("b"));
        pairs = tb::preferencePairs(*check, "eval");
        QCOMPARE(pairs.size(), size_t(3));
        QCOMPARE(pairs[2].itemId, fourth);
        QVERIFY(QString::fromStdString(pairs[2].chosen) != a3);
        QCOMPARE(tb::comparisonVerdicts(*check, "eval").size(), size_t(4));

        // A second annotator starts from the first item, blind again.
        view.setAnnotator(QStringLiteral("ben"));
        QCOMPARE(view.progressLabel()->text(), QStringLiteral("0 of 4 judged"));
        QCOMPARE(view.currentItemId(), first);
        QVERIFY(!view.tabs()->isTabEnabled(1));
    }
};

QTEST_MAIN(TestCompareView)
#include "test_compare_view.moc"
