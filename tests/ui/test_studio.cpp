// Studio shell (label gui, offscreen): the sidebar pages, and the Model page loading on a worker thread.
#include "main_window.h"
#include "model_page.h"

#include <QListWidget>
#include <QTreeWidget>
#include <QtTest>

class TestStudio : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void pages()
    {
        tb::MainWindow w;
        w.show();
        QCOMPARE(w.pageNames(), (QStringList{QStringLiteral("Model"), QStringLiteral("Data"), QStringLiteral("Method"),
                                            QStringLiteral("Memory"), QStringLiteral("Train"),
                                            QStringLiteral("Playground"), QStringLiteral("Export")}));
        w.showPage(QStringLiteral("Memory"));
        auto* list = w.findChild<QListWidget*>();
        QVERIFY(list);
        QCOMPARE(list->currentRow(), 3);
    }
    void opensBundledModelInBackground()
    {
        tb::MainWindow w;
        QSignalSpy spy(w.modelPage(), &tb::ModelPage::modelOpened);
        w.modelPage()->openModel(QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k"));
        QVERIFY(spy.wait(10000));
        const auto& s = w.modelPage()->summary();
        QVERIFY2(s.error.isEmpty(), qPrintable(s.error));
        QCOMPARE(s.architecture, QStringLiteral("llama"));
        QCOMPARE(s.parameters, qint64(260032));
        QCOMPARE(s.tokenizer, QStringLiteral("sentencepiece"));
        auto* tree = w.modelPage()->findChild<QTreeWidget*>();
        QVERIFY(tree && tree->topLevelItemCount() >= 8);
    }
    void reportsBadFolder()
    {
        tb::ModelPage page;
        QSignalSpy spy(&page, &tb::ModelPage::modelOpened);
        page.openModel(QStringLiteral("/nonexistent/model"));
        QVERIFY(spy.wait(10000));
        QVERIFY(page.summary().error.contains(QStringLiteral("/nonexistent/model")));
    }
};

QTEST_MAIN(TestStudio)
#include "test_studio.moc"
