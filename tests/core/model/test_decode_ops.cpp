// Decoding's fused RMSNorm, rotary embedding and cached attention (model/decode_ops.h) against the
// LibTorch operators they replace: fp32 and bf16, sizes on and off the vector width, shared and
// per-row rotary tables, grouped-query heads and key padding masks, and the guards (an input that
// needs a gradient, too many rows or queries) that keep the fused path to decoding; the one-pass
// decoding step of a Llama block (model/decode_block.h) against the modules' path.
#include "model/decode_ops_check.h"

#include <QtTest>

#include <cmath>

class TestDecodeOps : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rmsNormMatchesLibTorch_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("dim");
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<bool>("fused");
        for (bool bf16 : {false, true}) {
            const char* p = bf16 ? "bf16" : "fp32";
            QTest::newRow(QByteArray(p).append(" 1 x 384").constData()) << 1 << 384 << bf16 << true;
            QTest::newRow(QByteArray(p).append(" 3 x 67").constData()) << 3 << 67 << bf16 << true;
            QTest::newRow(QByteArray(p).append(" 16 x 4096").constData())
                << 16 << 4096 << bf16 << true;
            QTest::newRow(QByteArray(p).append(" 16 x 16").constData()) << 16 << 16 << bf16 << true;
            QTest::newRow(QByteArray(p).append(" 64 x 384").constData())
                << 64 << 384 << bf16 << true;
            QTest::newRow(QByteArray(p).append(" 65 x 64 (LibTorch's)").constData())
                << 65 << 64 << bf16 << false;
        }
    }

    void rmsNormMatchesLibTorch()
    {
        QFETCH(int, rows);
        QFETCH(int, dim);
        QFETCH(bool, bf16);
        QFETCH(bool, fused);
        const tb::DecodeOpsCheck c = tb::checkFusedRmsNorm(rows, dim, bf16, 11);
        QCOMPARE(c.tookFused, fused);
        QVERIFY(!c.fusedWithGradient);
        QVERIFY(c.maxAbsOutput > 1.0);
        // Only the sum of squares adds in another order: fp32 within a few ulps of the output
        // (2^-21 of its largest value); in bf16 that can move a rounding of the normalised value
        // or of the product by one bf16 step (2^-8 relative each): within 2^-7 of the largest.
        const double bound = c.maxAbsOutput * (bf16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -21));
        qInfo("max |fused - LibTorch| %.3g (bound %.3g, max |y| %.3g)", c.maxAbsDiff, bound,
              c.maxAbsOutput);
        QVERIFY2(c.maxAbsDiff <= bound, qPrintable(QString::number(c.maxAbsDiff)));
    }

    void ropeMatchesLibTorchBitForBit_data()
    {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("seq");
        QTest::addColumn<int>("dim");
        QTest::addColumn<bool>("perRow");
        QTest::addColumn<bool>("fused");
        QTest::newRow("one token, 6 heads of 64") << 1 << 6 << 1 << 64 << false << true;
        QTest::newRow("4 rows, per-row tables") << 4 << 8 << 1 << 16 << true << true;
        QTest::newRow("2 rows x 3 positions, head_dim 10") << 2 << 2 << 3 << 10 << false << true;
        QTest::newRow("16 rows, per-row tables") << 16 << 4 << 1 << 128 << true << true;
        QTest::newRow("32 rows, per-row tables") << 32 << 6 << 1 << 64 << true << true;
        QTest::newRow("prefill of 65 positions (LibTorch's)")
            << 1 << 4 << 65 << 32 << false << false;
    }

    void ropeMatchesLibTorchBitForBit()
    {
        QFETCH(int, batch);
        QFETCH(int, heads);
        QFETCH(int, seq);
        QFETCH(int, dim);
        QFETCH(bool, perRow);
        QFETCH(bool, fused);
        for (bool bf16 : {false, true}) {
            const tb::DecodeOpsCheck c =
                tb::checkFusedRope(batch, heads, seq, dim, perRow, bf16, 5);
            QCOMPARE(c.tookFused, fused);
            QVERIFY(!c.fusedWithGradient);
            QVERIFY(c.maxAbsOutput > 0.5);
            // The same three roundings per element as LibTorch's two products and sum.
            QCOMPARE(c.maxAbsDiff, 0.0);
        }
    }

    void attentionMatchesLibTorch_data()
    {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("kvHeads");
        QTest::addColumn<int>("seq");
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("dim");
        QTest::addColumn<bool>("padded");
        QTest::addColumn<bool>("fused");
        QTest::newRow("one row, 6 heads of 64, 160 keys")
            << 1 << 6 << 6 << 1 << 160 << 64 << false << true;
        QTest::newRow("32 padded rows, 6 heads of 64")
            << 32 << 6 << 6 << 1 << 97 << 64 << true << true;
        QTest::newRow("GQA 8 over 2, padded, 33 keys")
            << 5 << 8 << 2 << 1 << 33 << 128 << true << true;
        QTest::newRow("3 queries (a chunk), head_dim 40")
            << 4 << 4 << 4 << 3 << 21 << 40 << false << true;
        QTest::newRow("3 queries, padded, GQA 6 over 3, head_dim 67")
            << 3 << 6 << 3 << 3 << 19 << 67 << true << true;
        QTest::newRow("stories260k: 8 heads of 8 over 4")
            << 2 << 8 << 4 << 1 << 150 << 8 << true << true;
        QTest::newRow("head_dim 4") << 2 << 2 << 2 << 1 << 30 << 4 << false << true;
        QTest::newRow("a query that sees only itself")
            << 2 << 2 << 1 << 1 << 4 << 16 << true << true;
        QTest::newRow("17 queries (LibTorch's)") << 2 << 4 << 2 << 17 << 40 << 32 << true << false;
    }

    void attentionMatchesLibTorch()
    {
        QFETCH(int, batch);
        QFETCH(int, heads);
        QFETCH(int, kvHeads);
        QFETCH(int, seq);
        QFETCH(int, keys);
        QFETCH(int, dim);
        QFETCH(bool, padded);
        QFETCH(bool, fused);
        for (bool bf16 : {false, true}) {
            const tb::DecodeOpsCheck c =
                tb::checkDecodeAttention(batch, heads, kvHeads, seq, keys, dim, padded, bf16, 3);
            QCOMPARE(c.tookFused, fused);
            QVERIFY(!c.fusedWithGradient);
            QVERIFY(c.maxAbsOutput > 0.5);
            // fp32: the same sums in another order, and another exp (within 2 ulps): within 2^-18
            // of the largest output (values ~N(0, 1)), some 30 ulps. bf16: LibTorch rounds the
            // softmax weights to bf16 before multiplying by V, the loop keeps them in fp32; both
            // round the output once: within four bf16 steps (2^-6) of the largest output.
            const double bound = c.maxAbsOutput * std::ldexp(1.0, bf16 ? -6 : -18);
            qInfo("%s: max |fused - LibTorch| %.3g (bound %.3g, max |y| %.3g)",
                  bf16 ? "bf16" : "fp32", c.maxAbsDiff, bound, c.maxAbsOutput);
            QVERIFY2(c.maxAbsDiff <= bound, qPrintable(QString::number(c.maxAbsDiff)));
        }
    }

    void decodeBlockMatchesModules_data()
    {
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("kvHeads");
        QTest::addColumn<bool>("bias");
        QTest::addColumn<int>("lora");
        QTest::addColumn<bool>("onePass");
        for (bool bf16 : {false, true}) {
            const QByteArray p = bf16 ? "bf16 " : "fp32 ";
            QTest::newRow(p + "llama") << 8 << 8 << false << 0 << true;
            QTest::newRow(p + "grouped-query heads") << 8 << 2 << false << 0 << true;
            QTest::newRow(p + "q/k/v biases (qwen2)") << 4 << 4 << true << 0 << true;
            QTest::newRow(p + "LoRA merged") << 8 << 8 << false << 2 << true;
            QTest::newRow(p + "LoRA active (the modules)") << 8 << 8 << false << 1 << false;
        }
    }

    void decodeBlockMatchesModules()
    {
        QFETCH(int, heads);
        QFETCH(int, kvHeads);
        QFETCH(bool, bias);
        QFETCH(int, lora);
        QFETCH(bool, onePass);
        const bool bf16 = QByteArray(QTest::currentDataTag()).startsWith("bf16");
        const int steps = 12;
        const tb::DecodeBlockCheck c =
            tb::checkDecodeBlock(heads, kvHeads, bias, lora, bf16, steps, 23);
        // Two layers, one step each per token.
        QCOMPARE(c.onePassSteps, onePass ? 2 * steps : 0);
        QVERIFY(c.maxAbsLogit > 1.0);
        // The same kernels on the same values; only SiLU's exponential is the C library's rather
        // than LibTorch's vectorised one (within an ulp or two). In fp32 that stays within a few
        // ulps of the logits; in bf16 it can move a rounding by one bf16 step (2^-8 relative),
        // which the layers after carry on: within 2^-7 of the largest logit (none seen). Off the
        // one pass, the runs are identical.
        const double bound =
            !onePass ? 0.0 : c.maxAbsLogit * (bf16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -18));
        qInfo("max |one pass - modules| %.3g (bound %.3g, max |logit| %.3g), greedy tokens %s",
              c.maxAbsDiff, bound, c.maxAbsLogit, c.sameTokens ? "equal" : "differ");
        QVERIFY2(c.maxAbsDiff <= bound, qPrintable(QString::number(c.maxAbsDiff)));
        if (!bf16)
            QVERIFY(c.sameTokens);
    }
};

QTEST_APPLESS_MAIN(TestDecodeOps)
#include "test_decode_ops.moc"
