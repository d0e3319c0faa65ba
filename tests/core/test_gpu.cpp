// Placeholder while the suite is written.
#include <QtTest>
class TestGpu : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestGpu)
#include "test_gpu.moc"
