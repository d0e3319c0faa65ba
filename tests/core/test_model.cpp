// Placeholder while the suite is written.
#include <QtTest>
class TestModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestModel)
#include "test_model.moc"
