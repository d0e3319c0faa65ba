// Placeholder while the suite is written.
#include <QtTest>
class TestDataset : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void placeholder() { QSKIP("not written yet"); }
};
QTEST_GUILESS_MAIN(TestDataset)
#include "test_dataset.moc"
