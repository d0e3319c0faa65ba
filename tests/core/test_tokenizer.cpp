// Placeholder while the suite is written.
#include <QtTest>
class TestTokenizer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
