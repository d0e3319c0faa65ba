// The few-rows kernels of a decoding step (model/few_rows_kernel.h) against LibTorch's linear:
// every instruction set this CPU runs, fp32 and bf16 weights, with and without bias, shapes whose
// sizes are and are not multiples of the vector width and of the kernels' blocks.
#include "model/few_rows_check.h"

#include <QtTest>

#include <cmath>
#include <vector>

namespace {

std::vector<tb::FewRowsIsa> supportedIsas()
{
    std::vector<tb::FewRowsIsa> out;
    for (auto isa : {tb::FewRowsIsa::avx512, tb::FewRowsIsa::avx2, tb::FewRowsIsa::portable})
        if (tb::fewRowsIsaSupported(isa))
            out.push_back(isa);
    return out;
}

}  // namespace

class TestFewRowsKernel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void bestIsaIsSupported()
    {
        QVERIFY(tb::fewRowsIsaSupported(tb::fewRowsBestIsa()));
        QVERIFY(tb::fewRowsIsaSupported(tb::FewRowsIsa::portable));
        qInfo("best instruction set here: %s", tb::fewRowsIsaName(tb::fewRowsBestIsa()));
    }

    void matchesLibTorch_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("in");
        QTest::addColumn<int>("out");
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<bool>("bias");
        // in: a multiple of 16, of 8 only, neither; out: a multiple of 16, of 4 only, neither;
        // rows: every count of the 4-row blocks' tails, fewer and more groups of four than a
        // block has rows of W (how the fetch of W ahead is shared out), and one beyond the
        // kernels' range; one row (W's rows one by one, summed kLanes at a time) with in below,
        // between and above the two-vector steps and out off the sums' groups.
        const std::vector<std::vector<int>> shapes{
            {1, 384, 384},  {1, 67, 173},   {1, 24, 4100},   {1, 1000, 96}, {1, 7, 17},
            {2, 384, 1030}, {3, 67, 173},   {4, 1000, 384},  {5, 384, 173}, {7, 24, 4100},
            {8, 1024, 64},  {13, 67, 1030}, {16, 384, 1024}, {17, 64, 64},  {32, 384, 1030},
            {45, 67, 173},  {64, 1000, 96}, {65, 64, 64}};
        for (const auto& s : shapes)
            for (bool bf16 : {false, true})
                for (bool bias : {false, true}) {
                    const QByteArray name = QByteArray::number(s[0]) + " x " +
                                            QByteArray::number(s[1]) + " -> " +
                                            QByteArray::number(s[2]) + (bf16 ? " bf16" : " fp32") +
                                            (bias ? " bias" : "");
                    QTest::newRow(name.constData()) << s[0] << s[1] << s[2] << bf16 << bias;
                }
    }

    void matchesLibTorch()
    {
        QFETCH(int, rows);
        QFETCH(int, in);
        QFETCH(int, out);
        QFETCH(bool, bf16);
        QFETCH(bool, bias);
        for (auto isa : supportedIsas()) {
            const auto c = tb::checkFewRowsKernel(rows, in, out, bf16, bias, isa,
                                                  static_cast<uint64_t>(rows * 1000 + in));
            // fp32 sums of `in` products in a different order than float64: within 8 float32
            // epsilons of the sum of the products' magnitudes.
            const double kernelBound = 8 * 1.19e-7 * c.scale;
            if (!(c.kernelMaxAbsDiff <= kernelBound))
                QFAIL(qPrintable(QStringLiteral("%1: kernel differs from float64 by %2 (bound %3)")
                                     .arg(QString::fromLatin1(tb::fewRowsIsaName(isa)))
                                     .arg(c.kernelMaxAbsDiff)
                                     .arg(kernelBound)));
            // linearForward against LibTorch in the weight's dtype: both round fp32 sums, bf16
            // outputs to 8 significant bits (one bf16 step of the largest output, 2^-8 of it,
            // allowed).
            const double linearBound =
                bf16 ? std::ldexp(c.maxAbsOutput, -7) : 8 * 1.19e-7 * c.scale;
            QVERIFY2(
                c.linearMaxAbsDiff <= linearBound,
                qPrintable(QStringLiteral("linearForward differs from at::linear by %1 (bound %2)")
                               .arg(c.linearMaxAbsDiff)
                               .arg(linearBound)));
            QCOMPARE(c.tookKernel, rows <= static_cast<int>(tb::kFewRowsMax));
        }
    }

    // An instruction set the CPU lacks is refused with a message, not run.
    void refusesAnUnsupportedSet()
    {
        if (tb::fewRowsIsaSupported(tb::FewRowsIsa::avx512))
            QSKIP("this CPU runs every set");
        QVERIFY_THROWS_EXCEPTION(std::exception, tb::checkFewRowsKernel(1, 16, 16, false, false,
                                                                        tb::FewRowsIsa::avx512, 1));
    }
};

QTEST_APPLESS_MAIN(TestFewRowsKernel)
#include "test_few_rows_kernel.moc"
