// Interop: our NF4, FP4 and int8 quantisation against bitsandbytes' own (its CPU backend, through
// tests/interop/quant_oracle.py): the packed 4-bit bytes, the absmax values, the double-quant state
// (8-bit absmax codes, second absmax, dynamic map, offset) and the int8 values and row scales must
// be byte for byte the same, and the dequantised weights equal in fp32 and within bf16 rounding
// (2^-8 relative) in bf16. Shapes cover whole blocks, a partial last block, an odd element count
// (padding), fewer elements than a block, more than 256 blocks (several second absmax values), a
// zero row and bf16 input. Then the bundled model's own weights, quantised at load as training
// does, against bitsandbytes' round trip of the same tensors.
#include "export/model_folder.h"
#include "export/quant_export.h"
#include "model/safetensors.h"
#include "util/paths.h"

#include "interop/oracle_util.h"
#include "test_util.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>

using nlohmann::json;

namespace {

tb::TensorBlob randomBlob(const std::string& name, int64_t rows, int64_t cols, std::mt19937& gen,
                          bool bf16 = false, bool zeroRow = false)
{
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (auto& x : v)
        x = normal(gen);
    if (rows > 3)
        v[7] = 0.25f;  // an outlier, as real weights have
    if (zeroRow)
        std::fill(v.begin(), v.begin() + cols, 0.0f);
    tb::TensorBlob b{name, bf16 ? tb::DType::BF16 : tb::DType::F32, {rows, cols}, {}};
    if (!bf16) {
        b.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * 4);
        return b;
    }
    for (float x : v) {  // round to nearest even, as torch does
        uint32_t u;
        std::memcpy(&u, &x, 4);
        const uint16_t h = static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
        b.bytes.append(reinterpret_cast<const char*>(&h), 2);
    }
    return b;
}

json runOracle(const QStringList& args)
{
    QString error;
    const QByteArray out = tbtest::runOracleScript(QStringLiteral("quant_oracle.py"), args, &error);
    if (out.isEmpty())
        qFatal("%s", qPrintable(error));
    const QList<QByteArray> lines = out.trimmed().split('\n');
    return json::parse(lines.last().toStdString());
}

}  // namespace

class TestQuantInterop : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void bytesEqualBitsandbytes_data();
    void bytesEqualBitsandbytes();
    void modelWeightsEqualBitsandbytes_data();
    void modelWeightsEqualBitsandbytes();
};

void TestQuantInterop::bytesEqualBitsandbytes_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("doubleQuant");
    QTest::newRow("nf4") << "nf4" << false;
    QTest::newRow("nf4 double") << "nf4" << true;
    QTest::newRow("fp4") << "fp4" << false;
    QTest::newRow("fp4 double") << "fp4" << true;
    QTest::newRow("int8") << "int8" << false;
}

void TestQuantInterop::bytesEqualBitsandbytes()
{
    QFETCH(QString, kind);
    QFETCH(bool, doubleQuant);
    QTemporaryDir dir;
    std::mt19937 gen(11);
    const std::string in = dir.filePath(QStringLiteral("w.safetensors")).toStdString();
    const std::string out = dir.filePath(QStringLiteral("q.safetensors")).toStdString();
    tb::writeSafetensors(in, {randomBlob("whole", 64, 64, gen), randomBlob("partial", 33, 70, gen),
                              randomBlob("odd", 7, 9, gen),
                              randomBlob("many_blocks", 600, 64, gen, false, true),
                              randomBlob("bf16", 48, 128, gen, true)});
    tb::QuantOptions options;
    options.kind = *tb::parseQuantKind(kind.toStdString());
    options.doubleQuant = doubleQuant;
    QCOMPARE(tb::quantizeTensorFile(in, options, out), int64_t(5));
    const json report = runOracle({QStringLiteral("tensors"), QString::fromStdString(in),
                                   QString::fromStdString(out), kind,
                                   doubleQuant ? QStringLiteral("1") : QStringLiteral("0")});
    QCOMPARE(report.size(), size_t(5));
    for (const auto& [name, r] : report.items()) {
        for (const char* piece : {"data", "absmax", "absmax2", "code2", "offset"})
            if (r.contains(piece))
                QVERIFY2(r[piece].get<int64_t>() == 0,
                         qPrintable(QStringLiteral("%1 %2: %3 bytes differ from bitsandbytes")
                                        .arg(QString::fromStdString(name), QLatin1String(piece))
                                        .arg(r[piece].get<int64_t>())));
        // fp32 weights: fp32 and bf16 dequantised values exact (as numbers); the bf16
        // weight: bf16 values within one rounding of bitsandbytes' own bf16 arithmetic.
        const bool fp32 = name != "bf16";
        QCOMPARE(r.contains("dequant"), fp32);
        if (fp32) {
            QVERIFY2(r.at("dequant").get<double>() == 0.0,
                     qPrintable(QString::fromStdString(name + ": " + r.dump())));
            QVERIFY2(r.at("dequant_bf16").get<double>() == 0.0,
                     qPrintable(QString::fromStdString(name + ": " + r.dump())));
        } else {
            QVERIFY2(r.at("dequant_bf16_rel").get<double>() <= std::ldexp(1.0, -8),
                     qPrintable(QString::fromStdString(name + ": " + r.dump())));
        }
    }
    if (doubleQuant)
        QVERIFY(report["many_blocks"].contains("absmax2"));
}

void TestQuantInterop::modelWeightsEqualBitsandbytes_data()
{
    bytesEqualBitsandbytes_data();
}

void TestQuantInterop::modelWeightsEqualBitsandbytes()
{
    QFETCH(QString, kind);
    QFETCH(bool, doubleQuant);
    QTemporaryDir dir;
    tb::QuantOptions options;
    options.kind = *tb::parseQuantKind(kind.toStdString());
    options.doubleQuant = doubleQuant;
    const std::string model = tb::bundledModelDir();
    const double change = tb::writeDequantizedBase(model, options, dir.path().toStdString());
    QVERIFY(change > 0);
    const json report =
        runOracle({QStringLiteral("model"), QString::fromStdString(model), dir.path(), kind,
                   doubleQuant ? QStringLiteral("1") : QStringLiteral("0")});
    // stories260k: 5 blocks x 7 linear layers, the tied head not quantised.
    QCOMPARE(report.size(), size_t(5 * 7));
    for (const auto& [name, r] : report.items())
        QVERIFY2(r["dequant"].get<double>() == 0.0, qPrintable(QString::fromStdString(name)));
}

QTEST_GUILESS_MAIN(TestQuantInterop)
#include "test_quant_interop.moc"
