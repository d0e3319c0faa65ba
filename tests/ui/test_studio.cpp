// Placeholder while the suite is written.
#include <QtTest>
class TestStudio : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestStudio)
#include "test_studio.moc"
