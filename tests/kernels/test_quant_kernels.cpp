// CUDA dequantisation kernels (label gpu): kernels/dequant_4bit.cu against the LibTorch path
// (dequantizeWeightTorch on the same device, and dequantizeWeight of the same bytes on the CPU) for
// NF4 and FP4 with and without double quantisation and for int8, into fp32, bf16 and fp16, on odd
// sizes and partial last blocks. Skipped without a CUDA device or without kernels in the build.
#include "quant/quant_check.h"
#include "test_util.h"

#include <QtTest>

namespace {

// [rows, cols]: one element; odd counts inside a single partial block; one full block and one
// element; an odd count ending in a partial block, int8 groups of 8 crossing rows; 4,100 blocks,
// so double quantisation's last group of 256 absmax values is partial too.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1},    {3, 7},   {5, 13},
                                                          {17, 129}, {33, 65}, {64, 4100}};

}  // namespace

class TestQuantKernels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesLibTorch_data();
    void matchesLibTorch();
    void withoutKernels();
    void withoutDevice();
};

void TestQuantKernels::matchesLibTorch_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("doubleQuant");
    QTest::addColumn<QString>("dtype");
    struct Format {
        const char* kind;
        bool doubleQuant;
    };
    for (const char* dtype : {"fp32", "bf16", "fp16"})
        for (const Format& f : {Format{"nf4", false}, Format{"nf4", true}, Format{"fp4", false},
                                Format{"fp4", true}, Format{"int8", false}}) {
            const std::string name =
                std::string(f.kind) + (f.doubleQuant ? " double " : " ") + dtype;
            QTest::newRow(name.c_str()) << QString(f.kind) << f.doubleQuant << QString(dtype);
        }
}

void TestQuantKernels::matchesLibTorch()
{
    if (!tb::quantCudaAvailable())
        QSKIP("no CUDA device");
    if (!tb::quantKernelsBuilt())
        QSKIP("this build has no CUDA kernels (configure with -DTB_CUDA_KERNELS=ON)");
    QFETCH(QString, kind);
    QFETCH(bool, doubleQuant);
    QFETCH(QString, dtype);
    const tb::QuantOptions options{*tb::parseQuantKind(kind.toStdString()), doubleQuant, false};
    // fp32: the kernel forms the LibTorch path's fp32 products, so every bit agrees; bf16 and fp16
    // round those products to nearest even, and at most one unit in the last place may differ.
    const int64_t tolerance = dtype == "fp32" ? 0 : 1;
    uint64_t seed = 11;
    for (const auto& [rows, cols] : kShapes) {
        const tb::KernelCheck r =
            tb::checkDequantKernel(options, rows, cols, dtype.toStdString(), seed++);
        const QByteArray where = QStringLiteral("%1 x %2: max %3 ulp (CPU %4), max |diff| %5")
                                     .arg(rows)
                                     .arg(cols)
                                     .arg(r.maxUlp)
                                     .arg(r.cpuMaxUlp)
                                     .arg(r.maxAbsDiff)
                                     .toUtf8();
        QVERIFY2(r.kernelRan, where.constData());
        QCOMPARE(r.elements, rows * cols);
        QVERIFY2(r.maxUlp <= tolerance, where.constData());
        QVERIFY2(r.cpuMaxUlp <= tolerance, where.constData());
        if (tolerance == 0)
            QVERIFY2(r.maxAbsDiff == 0.0, where.constData());
        // The double-quantised absmax: two fp32 roundings on both sides, bit-identical.
        QCOMPARE(r.absmaxMaxUlp, doubleQuant ? int64_t(0) : int64_t(-1));
    }
}

void TestQuantKernels::withoutKernels()
{
    // A build without kernels on a GPU machine: nothing runs, and the caller takes the LibTorch
    // path.
    if (!tb::quantCudaAvailable() || tb::quantKernelsBuilt())
        QSKIP("needs a CUDA device and a build without kernels");
    const tb::KernelCheck r =
        tb::checkDequantKernel({tb::QuantKind::Nf4, false, false}, 3, 7, "bf16", 1);
    QVERIFY(!r.kernelRan);
    QCOMPARE(r.elements, int64_t(21));
}

void TestQuantKernels::withoutDevice()
{
    if (tb::quantCudaAvailable())
        QSKIP("a CUDA device is present");
    const std::string error = tbtest::errorOf([] {
        tb::checkDequantKernel({tb::QuantKind::Nf4, true, false}, 3, 7, "bf16", 1);
    });
    QVERIFY2(tbtest::contains(error, "no CUDA device"), error.c_str());
    QVERIFY(tbtest::contains(
        tbtest::errorOf([] {
            tb::checkDequantKernel({tb::QuantKind::Nf4, false, false}, 3, 7, "fp64", 1);
        }),
        "unknown dtype 'fp64'"));
}

QTEST_GUILESS_MAIN(TestQuantKernels)
#include "test_quant_kernels.moc"
