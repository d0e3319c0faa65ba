// Training's fused RMSNorm and rotary embedding (model/train_ops.h) against LibTorch's operators
// and their autograd: outputs, input and weight gradients, the output's layout, fp32 and bf16,
// shared and per-row rotary tables; with grad mode off too, so a frozen reference computes the
// numbers of the policy. SwiGLU's one op, packed and not, bf16 attention's width, and the stacked
// products of layers that read one input (model/stacked_linears.h) against each layer's own.
#include "model/few_rows_kernel.h"
#include "model/train_ops_check.h"

#include <QtTest>

#include <cmath>

class TestTrainOps : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rmsNormMatchesLibTorch_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("dim");
        QTest::addColumn<bool>("inputTrains");
        QTest::addColumn<bool>("weightTrains");
        QTest::newRow("LoRA layer: 512 x 384, input only") << 512 << 384 << true << false;
        QTest::newRow("full: 512 x 384, input and weight") << 512 << 384 << true << true;
        QTest::newRow("first layer: weight only, 300 x 67") << 300 << 67 << false << true;
        QTest::newRow("frozen: 17 x 64, neither") << 17 << 64 << false << false;
        QTest::newRow("one row of 4096") << 1 << 4096 << true << true;
        // Without grad mode 16 rows take decode_ops.h's loop: the same numbers.
        QTest::newRow("a decoding step's 16 x 384") << 16 << 384 << true << false;
    }

    void rmsNormMatchesLibTorch()
    {
        QFETCH(int, rows);
        QFETCH(int, dim);
        QFETCH(bool, inputTrains);
        QFETCH(bool, weightTrains);
        const tb::TrainOpsCheck c = tb::checkTrainRmsNorm(rows, dim, inputTrains, weightTrains, 5);
        QVERIFY(c.tookTrainOp);
        QVERIFY(c.tookItWithoutGrad);
        QCOMPARE(c.noGradDiff, 0.0);
        QVERIFY(c.sameStrides);
        QVERIFY(c.outputMax > 1.0);
        qInfo("max diff: output %.3g of %.3g, input grad %.3g of %.3g, weight grad %.3g of %.3g",
              c.outputDiff, c.outputMax, c.inputGradDiff, c.inputGradMax, c.weightGradDiff,
              c.weightGradMax);
        // The sum of squares adds in another order: a few ulps of the output (2^-21 of its
        // largest value). The gradients come from another (equal) formula, each in fp32: within
        // 1e-5 of their largest value.
        QVERIFY(c.outputDiff <= c.outputMax * std::ldexp(1.0, -21));
        if (inputTrains) {
            QVERIFY(c.inputGradMax > 0.1);
            QVERIFY(c.inputGradDiff <= c.inputGradMax * 1e-5);
        }
        if (weightTrains) {
            QVERIFY(c.weightGradMax > 0.1);
            QVERIFY(c.weightGradDiff <= c.weightGradMax * 1e-5);
        }
    }

    void ropeMatchesLibTorch_data()
    {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("seq");
        QTest::addColumn<int>("dim");
        QTest::addColumn<bool>("perRow");
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<bool>("fp32Tables");
        QTest::newRow("fp32, 4 x 6 heads x 128 x 64")
            << 4 << 6 << 128 << 64 << false << false << true;
        QTest::newRow("fp32, per-row tables, odd sizes")
            << 3 << 5 << 17 << 22 << true << false << true;
        QTest::newRow("bf16 input, fp32 tables (autocast)")
            << 2 << 4 << 33 << 64 << false << true << true;
        QTest::newRow("bf16 input and tables, per row")
            << 2 << 3 << 9 << 16 << true << true << false;
    }

    void ropeMatchesLibTorch()
    {
        QFETCH(int, batch);
        QFETCH(int, heads);
        QFETCH(int, seq);
        QFETCH(int, dim);
        QFETCH(bool, perRow);
        QFETCH(bool, bf16);
        QFETCH(bool, fp32Tables);
        const tb::TrainOpsCheck c =
            tb::checkTrainRope(batch, heads, seq, dim, perRow, bf16, fp32Tables, 7);
        QVERIFY(c.tookTrainOp);
        QVERIFY(c.tookItWithoutGrad);
        QCOMPARE(c.noGradDiff, 0.0);
        QVERIFY(c.sameStrides);
        QVERIFY(c.outputMax > 1.0);
        qInfo("max diff: output %.3g of %.3g, input grad %.3g of %.3g", c.outputDiff, c.outputMax,
              c.inputGradDiff, c.inputGradMax);
        // The forward rounds each product and the sum as LibTorch's mul, mul and add: bit for
        // bit. The backward adds its two products in fp32 and rounds once, where LibTorch rounds
        // each to the input's dtype first: fp32 within an ulp or two (2^-22 of the largest), bf16
        // within one bf16 step (2^-7 of the largest).
        QCOMPARE(c.outputDiff, 0.0);
        QVERIFY(c.inputGradMax > 0.1);
        QVERIFY(c.inputGradDiff <= c.inputGradMax * std::ldexp(1.0, bf16 ? -7 : -22));
    }

    void swigluMatchesLibTorch_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("dim");
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<int>("isa");
        const std::pair<const char*, tb::FewRowsIsa> sets[] = {
            {"avx512", tb::FewRowsIsa::avx512},
            {"avx2", tb::FewRowsIsa::avx2},
            {"portable", tb::FewRowsIsa::portable}};
        for (const auto& [name, set] : sets) {
            if (!tb::fewRowsIsaSupported(set))
                continue;
            QTest::addRow("26.5M Llama's 512 x 1024, fp32, %s", name)
                << 512 << 1024 << false << int(set);
            QTest::addRow("512 x 1024, bf16, %s", name) << 512 << 1024 << true << int(set);
            // An element count that no vector width divides: the tail's lanes.
            QTest::addRow("67 x 37, bf16, %s", name) << 67 << 37 << true << int(set);
            QTest::addRow("67 x 37, fp32, %s", name) << 67 << 37 << false << int(set);
        }
        QTest::newRow("a decoding step's 64 rows keep LibTorch's")
            << 64 << 1024 << true << int(tb::FewRowsIsa::portable);
    }

    void swigluMatchesLibTorch()
    {
        QFETCH(int, rows);
        QFETCH(int, dim);
        QFETCH(bool, bf16);
        QFETCH(int, isa);
        const tb::TrainOpsCheck c = tb::checkTrainSwiglu(rows, dim, bf16, isa, 9);
        qInfo("max diff: output %.3g of %.3g, gate grad %.3g of %.3g, up grad %.3g of %.3g; this "
              "set against the best %.3g",
              c.outputDiff, c.outputMax, c.inputGradDiff, c.inputGradMax, c.weightGradDiff,
              c.weightGradMax, c.noGradDiff);
        // bf16 only; fp32 keeps LibTorch's operators (model/train_ops.h), as do 64 rows or fewer.
        const bool took = bf16 && rows > 64;
        QCOMPARE(c.tookTrainOp, took);
        QCOMPARE(c.tookItWithoutGrad, took);
        QVERIFY(c.sameStrides);
        QVERIFY(c.outputMax > 10 && c.inputGradMax > 1 && c.weightGradMax > 1);
        // fp32: the sigmoid's e^x within 2 ulps and the products in another order, a few ulps of
        // the largest value (2^-20). bf16: ours rounds once where LibTorch rounds silu's output
        // and each factor of the gradients to bf16 first: within two bf16 steps (2^-6) of the
        // largest value.
        const double rel = std::ldexp(1.0, bf16 ? -6 : -20);
        QVERIFY(c.outputDiff <= c.outputMax * rel);
        QVERIFY(c.inputGradDiff <= c.inputGradMax * rel);
        QVERIFY(c.weightGradDiff <= c.weightGradMax * rel);
        if (!took) {  // LibTorch's own operators
            QCOMPARE(c.outputDiff, 0.0);
            QCOMPARE(c.inputGradDiff, 0.0);
        }
        if (rows > 64) {
            if (took)
                QVERIFY(c.outputDiff > 0);  // ours, not LibTorch's (which would be 0)
            // Each instruction set: the same arithmetic, contracted alike; within an ulp or two.
            QVERIFY(c.noGradDiff <=
                    std::max(c.outputMax, c.inputGradMax) * std::ldexp(1.0, bf16 ? -7 : -21));
        }
    }

    void packedSwigluMatchesLibTorch()
    {
        // gate and up side by side (the stacked product's layout): the same kernels as the op on
        // separate gate and up, bit for bit, and within bf16's rounding of LibTorch's.
        const tb::TrainOpsCheck c = tb::checkTrainSwigluPacked(130, 96, 13);
        qInfo("against LibTorch: output %.3g of %.3g, gate grad %.3g of %.3g, up grad %.3g of "
              "%.3g; against the unpacked op %.3g",
              c.outputDiff, c.outputMax, c.inputGradDiff, c.inputGradMax, c.weightGradDiff,
              c.weightGradMax, c.noGradDiff);
        QVERIFY(c.tookTrainOp);
        QVERIFY(c.sameStrides);
        QCOMPARE(c.noGradDiff, 0.0);
        QVERIFY(c.outputMax > 10 && c.inputGradMax > 1 && c.weightGradMax > 1);
        const double rel = std::ldexp(1.0, -6);
        QVERIFY(c.outputDiff <= c.outputMax * rel);
        QVERIFY(c.inputGradDiff <= c.inputGradMax * rel);
        QVERIFY(c.weightGradDiff <= c.weightGradMax * rel);
    }

    void stackedLinearsMatchEachLayer_data()
    {
        QTest::addColumn<int>("rows");
        QTest::addColumn<bool>("weightsTrain");
        QTest::addColumn<bool>("stacked");
        QTest::newRow("LoRA: frozen weights held in one bf16 buffer") << 512 << false << true;
        QTest::newRow("full fine-tuning: fp32 weights cast and stacked") << 200 << true << true;
        QTest::newRow("a decoding step's 64 rows: each layer's own") << 64 << false << false;
    }

    void stackedLinearsMatchEachLayer()
    {
        // q, k, v (with LoRA on q and v) as one product over one bf16 cast of their input, against
        // each layer's own forward under autocast: the same products, so the outputs agree to
        // bf16's rounding; x's gradient is one product where autocast adds three in fp32, and
        // LoRA's A sees the one cast, so gradients agree within a few bf16 steps.
        QFETCH(int, rows);
        QFETCH(bool, weightsTrain);
        QFETCH(bool, stacked);
        const tb::StackedLinearsCheck c = tb::checkStackedLinears(rows, 128, weightsTrain, 17);
        qInfo("relative: outputs %.3g, x's gradient %.3g, weights' gradients %.3g (%d tensors, "
              "smallest max %.3g)",
              c.outputRel, c.inputGradRel, c.weightGradRel, c.tensors, c.smallestMax);
        QCOMPARE(c.stacked, stacked);
        QCOMPARE(c.together, !weightsTrain);
        QCOMPARE(c.heldBytes, !weightsTrain);
        QCOMPARE(c.tensors, weightsTrain ? 11 : 8);
        QVERIFY(c.smallestMax > 0.01);
        QVERIFY(c.outputRel <= std::ldexp(1.0, -7));
        QVERIFY(c.inputGradRel <= std::ldexp(1.0, -6));
        QVERIFY(c.weightGradRel <= std::ldexp(1.0, -6));
        if (stacked)  // its own sums, not the layers' (which would give 0)
            QVERIFY(c.inputGradRel > 0);
    }

    void bf16AttentionTrainsInFp32BelowItsThreshold_data()
    {
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("seq");
        QTest::addColumn<bool>("widened");
        QTest::newRow("26.5M Llama's 4 x 128, 6 heads") << 4 << 6 << 128 << true;
        QTest::newRow("191 queries") << 1 << 2 << 191 << true;
        QTest::newRow("192 queries") << 1 << 2 << 192 << false;
        QTest::newRow("2 x 256, 3 heads") << 2 << 3 << 256 << false;
    }

    void bf16AttentionTrainsInFp32BelowItsThreshold()
    {
        // Below 192 queries LibTorch's CPU flash attention is faster in fp32 than in bf16
        // (docs/benchmarks.md), so under bf16 autocast training's attention runs the fp32 kernel
        // on the bf16 values: the same output and gradients as that kernel, bit for bit once
        // rounded to bf16, and within bf16's rounding of the bf16 kernel's. From 192 queries it is
        // the bf16 kernel itself.
        QFETCH(int, batch);
        QFETCH(int, heads);
        QFETCH(int, seq);
        QFETCH(bool, widened);
        const tb::AttentionWidthCheck c = tb::checkTrainAttentionWidth(batch, heads, seq, 64, 11);
        qInfo("widened %d: against fp32 %.3g, against bf16 %.3g (output max %.3g, gradient max "
              "%.3g)",
              c.widened, c.fp32Diff, c.bf16Diff, c.outputMax, c.gradMax);
        QCOMPARE(c.widened, widened);
        QVERIFY(c.outputMax > 0.5 && c.gradMax > 0.5);
        QCOMPARE(widened ? c.fp32Diff : c.bf16Diff, 0.0);
        // The two kernels differ by their rounding: some bf16 steps (2^-7 relative) apart.
        QVERIFY(0.0 < (widened ? c.bf16Diff : c.fp32Diff));
        QVERIFY((widened ? c.bf16Diff : c.fp32Diff) <= std::max(c.outputMax, c.gradMax) / 16);
    }
};

QTEST_APPLESS_MAIN(TestTrainOps)
#include "test_train_ops.moc"
