// Placeholder while the suite is written.
#include <QtTest>
class TestConfig : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestConfig)
#include "test_config.moc"
