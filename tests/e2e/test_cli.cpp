// Placeholder while the suite is written.
#include <QtTest>
class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
