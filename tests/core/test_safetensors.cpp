// Placeholder while the suite is written.
#include <QtTest>
class TestSafetensors : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
