// Chunked and fused head cross-entropy: loss and gradients against torch's plain cross_entropy on
// full logits (and, for the fused loss under bf16 autocast, against autocast's own head and loss),
// the chunked loss's peak memory against the plain path's, counted by a tracking CPU allocator
// local to this test, and a tied head's bf16 copy in the fused loss of a model.
#include "memory/measure.h"
#include "model/causal_lm.h"
#include "model/registry.h"
#include "train/chunked_loss.h"
#include "train/loss_rows_kernel.h"
#include "train/losses.h"
#include "train/train_config.h"
#include "util/error.h"

#include <ATen/autocast_mode.h>
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <vector>

namespace {

// Counts the bytes LibTorch's CPU tensors hold now and at most since resetPeak(), delegating the
// allocation itself. Tests only: the project's own tracking allocator lives in core/memory/.
class PeakAllocator final : public c10::Allocator {
public:
    explicit PeakAllocator(c10::Allocator* inner) : m_inner(inner) {}

    c10::DataPtr allocate(size_t bytes) override
    {
        c10::DataPtr inner = m_inner->allocate(bytes);
        void* data = inner.get();
        auto* block = new Block{std::move(inner), static_cast<int64_t>(bytes), this};
        const int64_t now = m_current.fetch_add(block->bytes) + block->bytes;
        int64_t peak = m_peak.load();
        while (now > peak && !m_peak.compare_exchange_weak(peak, now)) {
        }
        return c10::DataPtr(data, block, &PeakAllocator::release, c10::Device(c10::kCPU));
    }

    void copy_data(void* dest, const void* src, std::size_t count) const override
    {
        default_copy_data(dest, src, count);
    }

    int64_t current() const { return m_current.load(); }  // bytes
    int64_t peak() const { return m_peak.load(); }        // bytes
    void resetPeak() { m_peak.store(m_current.load()); }

private:
    struct Block {
        c10::DataPtr inner;  // frees the memory through the wrapped allocator
        int64_t bytes;
        PeakAllocator* owner;
    };

    static void release(void* context)
    {
        auto* block = static_cast<Block*>(context);
        block->owner->m_current.fetch_sub(block->bytes);
        delete block;
    }

    c10::Allocator* m_inner;
    std::atomic<int64_t> m_current{0};
    std::atomic<int64_t> m_peak{0};
};

// Bytes above the starting point that run() held at its peak, with PeakAllocator installed as
// LibTorch's CPU allocator for the duration (the original is restored afterwards).
int64_t peakBytesOf(const std::function<void()>& run)
{
    // Never deleted: tensors it allocated may be freed after it is uninstalled.
    static PeakAllocator* tracker = new PeakAllocator(c10::GetCPUAllocator());
    c10::Allocator* original = c10::GetCPUAllocator();
    c10::SetCPUAllocator(tracker, 0);
    if (c10::GetCPUAllocator() != tracker)
        tb::fail("could not install the tracking CPU allocator (a higher-priority one is set)");
    const int64_t start = tracker->current();
    tracker->resetPeak();
    try {
        run();
    } catch (...) {
        c10::SetCPUAllocator(original, 0);
        throw;
    }
    c10::SetCPUAllocator(original, 0);
    return tracker->peak() - start;
}

// Labels in [0, vocab) with every `ignoreEvery`-th token (0: none) and tokens [ignoreFrom,
// ignoreTo) set to -100.
torch::Tensor makeLabels(int64_t tokens, int64_t vocab, int64_t ignoreEvery, int64_t ignoreFrom,
                         int64_t ignoreTo)
{
    torch::Tensor labels = torch::randint(vocab, {tokens}, torch::kLong);
    auto at = labels.accessor<int64_t, 1>();
    for (int64_t i = 0; i < tokens; ++i) {
        if ((ignoreEvery > 0 && i % ignoreEvery == 0) || (i >= ignoreFrom && i < ignoreTo))
            at[i] = tb::kIgnoreIndex;
    }
    return labels;
}

// The reference: full fp32 logits through torch's own cross_entropy (sum over labelled tokens).
torch::Tensor plainCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                const torch::Tensor& labels)
{
    const torch::Tensor logits = hidden.to(torch::kFloat).matmul(weight.to(torch::kFloat).t());
    return torch::nn::functional::cross_entropy(logits, labels,
                                                torch::nn::functional::CrossEntropyFuncOptions()
                                                    .ignore_index(tb::kIgnoreIndex)
                                                    .reduction(torch::kSum));
}

double maxAbs(const torch::Tensor& t)
{
    return t.numel() == 0 ? 0.0 : t.abs().max().item<double>();
}

// Gradients agree within 1e-5 of the reference's largest entry; a bf16 gradient may also differ by
// one bf16 rounding step (2^-7 relative) since both are fp32 results rounded to bf16.
void compareGrad(const torch::Tensor& got, const torch::Tensor& want, const char* name)
{
    QVERIFY2(got.defined() && want.defined(), name);
    QVERIFY2(got.scalar_type() == want.scalar_type(), name);
    QVERIFY2(got.sizes() == want.sizes(), name);
    const torch::Tensor g = got.to(torch::kDouble);
    const torch::Tensor w = want.to(torch::kDouble);
    const double scale = std::max(maxAbs(w), 1e-30);
    const double ulp = want.scalar_type() == torch::kFloat ? 0.0 : std::ldexp(1.0, -7);
    const torch::Tensor excess = (g - w).abs() - (w.abs() * ulp + 1e-5 * scale);
    const double worst = maxAbs(torch::relu(excess));
    QVERIFY2(worst == 0.0,
             qPrintable(QStringLiteral("%1: max |diff| %2 beyond tolerance (scale %3)")
                            .arg(QString::fromLatin1(name))
                            .arg(maxAbs(g - w))
                            .arg(scale)));
}

QString mib(int64_t bytes)
{
    return QString::number(static_cast<double>(bytes) / (1024.0 * 1024.0), 'f', 1) +
           QStringLiteral(" MiB");
}

struct PeakPair {
    int64_t plain = 0;    // bytes
    int64_t chunked = 0;  // bytes
};

// Peak bytes of forward + backward (gradients included) for both paths on the same inputs.
PeakPair measurePeaks(int64_t tokens, int64_t vocab, int64_t hiddenDim, int64_t chunk,
                      bool weightTrainable)
{
    torch::manual_seed(7);
    torch::Tensor hidden = torch::randn({tokens, hiddenDim}).requires_grad_(true);
    torch::Tensor weight =
        (torch::randn({vocab, hiddenDim}) * 0.05).requires_grad_(weightTrainable);
    const torch::Tensor labels = makeLabels(tokens, vocab, 0, 0, 0);
    PeakPair peaks;
    peaks.plain = peakBytesOf([&] {
        plainCrossEntropy(hidden, weight, labels).backward();
        hidden.mutable_grad().reset();
        weight.mutable_grad().reset();
    });
    peaks.chunked = peakBytesOf([&] {
        tb::chunkedCrossEntropy(hidden, weight, labels, chunk).backward();
        hidden.mutable_grad().reset();
        weight.mutable_grad().reset();
    });
    return peaks;
}

}  // namespace

// The loss and gradients of a chunked or fused path against the plain path's.
void checkAgainstPlain(const torch::Tensor& got, const torch::Tensor& want,
                       const torch::Tensor& gotHidden, const torch::Tensor& wantHidden,
                       const torch::Tensor& gotWeight, const torch::Tensor& wantWeight,
                       bool weightTrainable, bool everyLabelIgnored);

class TestChunkedLoss : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesPlainPath_data();
    void matchesPlainPath();
    void nonContiguousHidden();
    void onlyRequestedGradients();
    void fusedUnderAutocast();
    void fusedHalfKeepsSmallScales();
    void fusedWithoutGradients();
    void softmaxRowsEachIsa_data();
    void softmaxRowsEachIsa();
    void fusedLargeAndNonFiniteLogits();
    void badInputsFail();
    void peakMemoryBelowQuarter();
    void peakMemory150kVocab_data();
    void peakMemory150kVocab();
    // Last: it installs the project's tracking allocator (oneDNN's bf16 products need its raw
    // pointers), which outranks peakBytesOf's for the rest of the process.
    void tiedHeadCopyInFusedLoss();
};

void TestChunkedLoss::matchesPlainPath_data()
{
    QTest::addColumn<qint64>("tokens");
    QTest::addColumn<qint64>("vocab");
    QTest::addColumn<qint64>("hiddenDim");
    QTest::addColumn<qint64>("chunk");
    QTest::addColumn<qint64>("ignoreEvery");  // every n-th label is -100 (0: none)
    QTest::addColumn<qint64>("ignoreFrom");   // labels [ignoreFrom, ignoreTo) are -100
    QTest::addColumn<qint64>("ignoreTo");
    QTest::addColumn<bool>("weightTrainable");
    QTest::addColumn<bool>("hiddenBf16");
    QTest::addColumn<bool>("weightBf16");
    QTest::addColumn<double>("gradScale");  // d(objective)/d(loss), as a mean over tokens gives

    QTest::newRow("tokens not a multiple of chunk")
        << 37ll << 101ll << 16ll << 8ll << 4ll << 0ll << 0ll << true << false << false << 1.0;
    QTest::newRow("chunk larger than tokens")
        << 10ll << 50ll << 8ll << 64ll << 0ll << 0ll << 0ll << true << false << false << 1.0;
    QTest::newRow("chunk of one token")
        << 7ll << 33ll << 8ll << 1ll << 3ll << 0ll << 0ll << true << false << false << 1.0;
    QTest::newRow("all labels ignored in a chunk")
        << 40ll << 97ll << 16ll << 8ll << 0ll << 8ll << 24ll << true << false << false << 1.0;
    QTest::newRow("every label ignored")
        << 12ll << 40ll << 8ll << 4ll << 1ll << 0ll << 0ll << true << false << false << 1.0;
    QTest::newRow("frozen weight")
        << 45ll << 120ll << 16ll << 16ll << 5ll << 0ll << 0ll << false << false << false << 1.0;
    QTest::newRow("bf16 hidden, fp32 weight")
        << 33ll << 90ll << 32ll << 8ll << 4ll << 0ll << 0ll << true << true << false << 1.0;
    QTest::newRow("bf16 hidden and weight")
        << 33ll << 90ll << 32ll << 8ll << 4ll << 0ll << 0ll << true << true << true << 1.0;
    QTest::newRow("mean over tokens (scaled grad_output)")
        << 50ll << 70ll << 16ll << 16ll << 6ll << 0ll << 0ll << true << false << false << 1.0 / 50;
    QTest::newRow("larger vocab") << 300ll << 5000ll << 64ll << 128ll << 7ll << 100ll << 140ll
                                  << true << false << false << 1.0;
    // On the CPU fp32 logits are made in blocks of 512 columns (the last one partial here),
    // bf16 ones in one product.
    QTest::newRow("larger vocab, chunks of 512 tokens")
        << 600ll << 5000ll << 32ll << 512ll << 9ll << 0ll << 0ll << true << false << false << 1.0;
    QTest::newRow("larger vocab, bf16")
        << 300ll << 5000ll << 64ll << 128ll << 7ll << 0ll << 0ll << true << true << true << 1.0;
}

void TestChunkedLoss::matchesPlainPath()
{
    QFETCH(qint64, tokens);
    QFETCH(qint64, vocab);
    QFETCH(qint64, hiddenDim);
    QFETCH(qint64, chunk);
    QFETCH(qint64, ignoreEvery);
    QFETCH(qint64, ignoreFrom);
    QFETCH(qint64, ignoreTo);
    QFETCH(bool, weightTrainable);
    QFETCH(bool, hiddenBf16);
    QFETCH(bool, weightBf16);
    QFETCH(double, gradScale);

    torch::manual_seed(1234);
    const auto hiddenType = hiddenBf16 ? torch::kBFloat16 : torch::kFloat;
    const auto weightType = weightBf16 ? torch::kBFloat16 : torch::kFloat;
    const torch::Tensor hiddenInit = torch::randn({tokens, hiddenDim}).to(hiddenType);
    // Logits of a few units, as an LM head gives: softmax neither uniform nor one-hot.
    const torch::Tensor weightInit =
        (torch::randn({vocab, hiddenDim}) * (2.0 / std::sqrt(double(hiddenDim)))).to(weightType);
    const torch::Tensor labels = makeLabels(tokens, vocab, ignoreEvery, ignoreFrom, ignoreTo);

    // path 0: plain; 1: chunked; 2: fused, grad_output scaled; 3: fused with the scale inside.
    auto run = [&](int path, torch::Tensor& gradHidden, torch::Tensor& gradWeight) {
        torch::Tensor hidden = hiddenInit.clone().requires_grad_(true);
        torch::Tensor weight = weightInit.clone().requires_grad_(weightTrainable);
        torch::Tensor loss;
        if (path == 3) {
            loss = tb::fusedHeadCrossEntropy(hidden, weight, labels, gradScale, chunk);
            loss.backward();
            loss = loss / gradScale;
        } else {
            loss = path == 0   ? plainCrossEntropy(hidden, weight, labels)
                   : path == 1 ? tb::chunkedCrossEntropy(hidden, weight, labels, chunk)
                               : tb::fusedHeadCrossEntropy(hidden, weight, labels, 1.0, chunk);
            (loss * gradScale).backward();
        }
        gradHidden = hidden.grad();
        gradWeight = weight.grad();
        return loss.detach();
    };
    torch::Tensor wantHidden, wantWeight;
    const torch::Tensor want = run(0, wantHidden, wantWeight);
    for (int path = 1; path <= 3; ++path) {
        qInfo() << (path == 1 ? "chunked" : path == 2 ? "fused" : "fused, scale inside");
        torch::Tensor gotHidden, gotWeight;
        const torch::Tensor got = run(path, gotHidden, gotWeight);
        checkAgainstPlain(got, want, gotHidden, wantHidden, gotWeight, wantWeight, weightTrainable,
                          ignoreEvery == 1);
        if (QTest::currentTestFailed())
            return;
    }
}

void checkAgainstPlain(const torch::Tensor& got, const torch::Tensor& want,
                       const torch::Tensor& gotHidden, const torch::Tensor& wantHidden,
                       const torch::Tensor& gotWeight, const torch::Tensor& wantWeight,
                       bool weightTrainable, bool everyLabelIgnored)
{
    QVERIFY(got.scalar_type() == torch::kFloat);
    QCOMPARE(got.dim(), int64_t(0));
    const double lossWant = want.item<double>();
    const double lossGot = got.item<double>();
    QVERIFY2(std::abs(lossGot - lossWant) <= 1e-5 * std::abs(lossWant),
             qPrintable(QStringLiteral("loss %1 vs plain %2")
                            .arg(lossGot, 0, 'g', 10)
                            .arg(lossWant, 0, 'g', 10)));
    if (everyLabelIgnored)
        QCOMPARE(lossGot, 0.0);

    compareGrad(gotHidden, wantHidden, "grad hidden");
    if (weightTrainable)
        compareGrad(gotWeight, wantWeight, "grad weight");
    else
        QVERIFY(!gotWeight.defined());
}

void TestChunkedLoss::nonContiguousHidden()
{
    torch::manual_seed(5);
    // hidden: a transposed [hidden, tokens] buffer, as a view with strides (1, tokens).
    const torch::Tensor base = torch::randn({16, 29});
    const torch::Tensor weight = torch::randn({60, 16}) * 0.5;
    const torch::Tensor labels = makeLabels(29, 60, 3, 0, 0);
    torch::Tensor hidden = base.clone().requires_grad_(true);
    torch::Tensor hiddenRef = base.clone().requires_grad_(true);
    QVERIFY(!hidden.t().is_contiguous());
    const torch::Tensor got = tb::chunkedCrossEntropy(hidden.t(), weight, labels, 7);
    const torch::Tensor want = plainCrossEntropy(hiddenRef.t(), weight, labels);
    got.backward();
    want.backward();
    QVERIFY(std::abs(got.item<double>() - want.item<double>()) <= 1e-5 * want.item<double>());
    compareGrad(hidden.grad(), hiddenRef.grad(), "grad hidden (transposed view)");
}

void TestChunkedLoss::onlyRequestedGradients()
{
    // Trainable weight, frozen hidden (e.g. everything below the head frozen): only the weight's.
    torch::manual_seed(9);
    const torch::Tensor hidden = torch::randn({20, 8});
    torch::Tensor weight = torch::randn({30, 8}).requires_grad_(true);
    torch::Tensor weightRef = weight.detach().clone().requires_grad_(true);
    const torch::Tensor labels = makeLabels(20, 30, 0, 0, 0);
    tb::chunkedCrossEntropy(hidden, weight, labels, 6).backward();
    plainCrossEntropy(hidden, weightRef, labels).backward();
    compareGrad(weight.grad(), weightRef.grad(), "grad weight (frozen hidden)");

    // Nothing requires grad: a plain fp32 scalar without a graph.
    const torch::Tensor loss = tb::chunkedCrossEntropy(hidden, weight.detach(), labels, 6);
    QVERIFY(!loss.requires_grad());
    QVERIFY(std::abs(loss.item<double>() -
                     plainCrossEntropy(hidden, weightRef, labels).item<double>()) <=
            1e-5 * loss.item<double>());
}

void TestChunkedLoss::fusedHalfKeepsSmallScales()
{
    // fp16 autocast (CUDA's fp16 training; here on the CPU) with the scale of a step of 10^6
    // loss tokens: the gradients, times 10^6, equal fp32's to fp16's rounding of the logits. They
    // were formed in fp16 at 10^-6 of their size, among its subnormals: errors of several percent.
    torch::manual_seed(22);
    const torch::Tensor hiddenInit = torch::randn({70, 48});
    const torch::Tensor weightInit = torch::randn({300, 48}) * (2.0 / std::sqrt(48.0));
    const torch::Tensor labels = makeLabels(70, 300, 9, 0, 0);
    const double scale = 1e-6;
    auto run = [&](bool half, torch::Tensor& gh, torch::Tensor& gw) {
        torch::Tensor hidden = hiddenInit.clone().requires_grad_(true);
        torch::Tensor weight = weightInit.clone().requires_grad_(true);
        at::autocast::set_autocast_dtype(at::kCPU, at::kHalf);
        at::autocast::set_autocast_enabled(at::kCPU, half);
        const torch::Tensor loss = tb::fusedHeadCrossEntropy(hidden, weight, labels, scale);
        at::autocast::set_autocast_enabled(at::kCPU, false);
        at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
        at::autocast::clear_cache();
        loss.backward();
        gh = hidden.grad() / scale;
        gw = weight.grad() / scale;
    };
    torch::Tensor wantH, wantW, gotH, gotW;
    run(false, wantH, wantW);
    run(true, gotH, gotW);
    for (const auto& [g, w, name] :
         {std::tuple{gotH, wantH, "grad hidden"}, std::tuple{gotW, wantW, "grad weight"}}) {
        const double diff = maxAbs(g - w), size = maxAbs(w);
        QVERIFY2(diff <= 5e-3 * size, qPrintable(QStringLiteral("%1: max |diff| %2 of %3")
                                                     .arg(QString::fromLatin1(name))
                                                     .arg(diff)
                                                     .arg(size)));
    }
}

void TestChunkedLoss::fusedUnderAutocast()
{
    // bf16 autocast: the plain path is autocast's own (the head in bf16, its logits taken to fp32
    // for cross_entropy); the fused loss makes the same casts, so they agree to bf16 rounding.
    torch::manual_seed(21);
    const torch::Tensor hiddenInit = torch::randn({70, 48});
    const torch::Tensor weightInit = torch::randn({300, 48}) * (2.0 / std::sqrt(48.0));
    const torch::Tensor labels = makeLabels(70, 300, 9, 0, 0);
    auto run = [&](bool fused, torch::Tensor& gh, torch::Tensor& gw) {
        torch::Tensor hidden = hiddenInit.clone().requires_grad_(true);
        torch::Tensor weight = weightInit.clone().requires_grad_(true);
        at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
        at::autocast::set_autocast_enabled(at::kCPU, true);
        torch::Tensor loss;
        if (fused) {
            loss = tb::fusedHeadCrossEntropy(hidden, weight, labels, 1.0 / 70);
        } else {
            const torch::Tensor logits = torch::nn::functional::linear(hidden, weight);
            loss = torch::nn::functional::cross_entropy(
                       logits.to(torch::kFloat), labels,
                       torch::nn::functional::CrossEntropyFuncOptions()
                           .ignore_index(tb::kIgnoreIndex)
                           .reduction(torch::kSum)) /
                   70;
        }
        at::autocast::set_autocast_enabled(at::kCPU, false);
        at::autocast::clear_cache();
        loss.backward();
        gh = hidden.grad();
        gw = weight.grad();
        return loss.item<double>();
    };
    torch::Tensor wantH, wantW, gotH, gotW;
    const double want = run(false, wantH, wantW);
    const double got = run(true, gotH, gotW);
    QVERIFY2(std::abs(got - want) <= 1e-3 * std::abs(want),
             qPrintable(QStringLiteral("loss %1 vs autocast's %2").arg(got).arg(want)));
    QVERIFY(gotH.scalar_type() == torch::kFloat && gotW.scalar_type() == torch::kFloat);
    for (const auto& [g, w, name] :
         {std::tuple{gotH, wantH, "grad hidden"}, std::tuple{gotW, wantW, "grad weight"}}) {
        const double scale = maxAbs(w);
        const double diff = maxAbs(g - w);
        QVERIFY2(diff <= 2e-2 * scale, qPrintable(QStringLiteral("%1: max |diff| %2, scale %3")
                                                      .arg(QString::fromLatin1(name))
                                                      .arg(diff)
                                                      .arg(scale)));
    }
    // And bf16 really ran: an fp32 head gives a different loss in the last digits.
    const double fp32 = plainCrossEntropy(hiddenInit, weightInit, labels).item<double>() / 70;
    QVERIFY(std::abs(fp32 - got) > 1e-6 * std::abs(fp32));
}

void TestChunkedLoss::fusedWithoutGradients()
{
    torch::manual_seed(9);
    const torch::Tensor hidden = torch::randn({20, 8});
    torch::Tensor weight = torch::randn({30, 8}).requires_grad_(true);
    torch::Tensor weightRef = weight.detach().clone().requires_grad_(true);
    const torch::Tensor labels = makeLabels(20, 30, 4, 0, 0);
    // Frozen hidden states: only the weight's gradient.
    tb::fusedHeadCrossEntropy(hidden, weight, labels, 0.5, 6).backward();
    (plainCrossEntropy(hidden, weightRef, labels) * 0.5).backward();
    compareGrad(weight.grad(), weightRef.grad(), "grad weight (frozen hidden)");
    // No grad mode (evaluation): the loss alone, without a graph.
    torch::NoGradGuard noGrad;
    const torch::Tensor loss = tb::fusedHeadCrossEntropy(hidden, weight, labels, 0.5);
    QVERIFY(!loss.requires_grad());
    QVERIFY(std::abs(loss.item<double>() -
                     0.5 * plainCrossEntropy(hidden, weightRef, labels).item<double>()) <=
            1e-5 * loss.item<double>());
    // Bad input is refused as by the chunked loss.
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::fusedHeadCrossEntropy(hidden, weight, labels.clone().fill_(30)));
}

void TestChunkedLoss::softmaxRowsEachIsa_data()
{
    QTest::addColumn<int>("isa");
    QTest::newRow("avx512") << int(tb::FewRowsIsa::avx512);
    QTest::newRow("avx2") << int(tb::FewRowsIsa::avx2);
    QTest::newRow("portable") << int(tb::FewRowsIsa::portable);
}

// The softmax-rows kernel of every instruction set against log-softmax in float64: vocabularies
// of whole vectors and with tails, logits of a few units and of hundreds (e^x underflows for most
// of the row), rows at any stride; the bf16 rows against the fp32 kernel and LibTorch's rounding.
void TestChunkedLoss::softmaxRowsEachIsa()
{
    QFETCH(int, isa);
    const auto set = static_cast<tb::FewRowsIsa>(isa);
    if (!tb::fewRowsIsaSupported(set))
        QSKIP("this CPU lacks the instruction set");
    torch::manual_seed(77);
    for (int64_t vocab : {1, 3, 16, 17, 100, 1000, 32000}) {
        for (double spread : {3.0, 300.0}) {
            const int64_t rows = 9, ld = vocab + 5;
            torch::Tensor x = torch::randn({rows, ld}) * spread;
            const torch::Tensor labels = torch::randint(0, vocab, {rows}, torch::kLong);
            const torch::Tensor ref = x.narrow(1, 0, vocab).to(torch::kFloat64);
            const torch::Tensor logp = ref.log_softmax(1);
            const torch::Tensor wantLoss = -logp.gather(1, labels.unsqueeze(1)).squeeze(1);
            torch::Tensor wantG = logp.exp();
            wantG.scatter_add_(1, labels.unsqueeze(1),
                               torch::full({rows, 1}, -1.0, wantG.options()));
            const torch::Tensor tail = x.narrow(1, vocab, 5).clone();
            std::vector<double> loss(rows, -1.0);
            tb::softmaxMinusOnehotRows(x.data_ptr<float>(), ld, vocab, labels.data_ptr<int64_t>(),
                                       0, rows, loss.data(), set);
            const auto where =
                QStringLiteral("vocab %1, logits of about %2").arg(vocab).arg(spread);
            for (int64_t r = 0; r < rows; ++r) {
                const double want = wantLoss[r].item<double>();
                QVERIFY2(std::abs(loss[size_t(r)] - want) <= 1e-5 * std::max(1.0, std::abs(want)),
                         qPrintable(where + QStringLiteral(": row %1 loss %2 vs %3")
                                                .arg(r)
                                                .arg(loss[size_t(r)], 0, 'g', 10)
                                                .arg(want, 0, 'g', 10)));
            }
            const double diff =
                (x.narrow(1, 0, vocab).to(torch::kFloat64) - wantG).abs().max().item<double>();
            QVERIFY2(diff <= 2e-6,
                     qPrintable(where + QStringLiteral(": softmax - onehot off by %1").arg(diff)));
            QVERIFY2(torch::equal(x.narrow(1, vocab, 5), tail),
                     qPrintable(where + QStringLiteral(": wrote past the row")));
        }
    }
    // A row holding NaN or infinity becomes NaN, loss included; the rows beside it are untouched.
    torch::Tensor x = torch::randn({3, 40});
    x[1][7] = std::numeric_limits<float>::quiet_NaN();
    x[2][39] = std::numeric_limits<float>::infinity();
    const torch::Tensor labels = torch::tensor({1, 2, 3}, torch::kLong);
    const double want0 = -x[0].to(torch::kFloat64).log_softmax(0)[1].item<double>();
    std::vector<double> loss(3);
    tb::softmaxMinusOnehotRows(x.data_ptr<float>(), 40, 40, labels.data_ptr<int64_t>(), 0, 3,
                               loss.data(), set);
    QVERIFY(std::abs(loss[0] - want0) <= 1e-5 * want0);
    QVERIFY(std::isnan(loss[1]) && std::isnan(loss[2]));
    QVERIFY(x[1].isnan().all().item<bool>() && x[2].isnan().all().item<bool>());
    QVERIFY(!x[0].isnan().any().item<bool>());

    // bf16 rows in place: bit for bit the fp32 kernel on the rows widened, rounded back by
    // LibTorch's conversion (nearest even, NaN kept), the same losses, nothing past the rows.
    for (int64_t vocab : {1, 17, 100, 32000}) {
        for (double spread : {3.0, 300.0}) {
            const int64_t rows = 7, ld = vocab + 3;
            torch::Tensor xb = (torch::randn({rows, ld}) * spread).to(torch::kBFloat16);
            if (vocab == 100)
                xb[3][50] = std::numeric_limits<float>::quiet_NaN();
            const torch::Tensor labels = torch::randint(0, vocab, {rows}, torch::kLong);
            torch::Tensor xf = xb.to(torch::kFloat);
            std::vector<double> wantLoss(rows), gotLoss(rows);
            tb::softmaxMinusOnehotRows(xf.data_ptr<float>(), ld, vocab, labels.data_ptr<int64_t>(),
                                       0, rows, wantLoss.data(), set);
            const torch::Tensor tail = xb.narrow(1, vocab, 3).clone();
            std::vector<float> scratch(static_cast<size_t>(vocab));
            tb::softmaxMinusOnehotRowsBf16(reinterpret_cast<uint16_t*>(xb.data_ptr<at::BFloat16>()),
                                           ld, vocab, labels.data_ptr<int64_t>(), 0, rows,
                                           gotLoss.data(), scratch.data(), set);
            const auto where =
                QStringLiteral("bf16, vocab %1, logits of about %2").arg(vocab).arg(spread);
            const torch::Tensor want = xf.narrow(1, 0, vocab).to(torch::kBFloat16);
            const torch::Tensor got = xb.narrow(1, 0, vocab);
            QVERIFY2(torch::equal(got.view(torch::kShort), want.view(torch::kShort)) ||
                         (vocab == 100 && torch::equal(got.isnan(), want.isnan())),
                     qPrintable(where + QStringLiteral(": rows differ from fp32's rounded")));
            if (vocab == 100) {  // NaN's bit patterns may differ; the finite rows may not
                const torch::Tensor finite = got.isnan().logical_not();
                QVERIFY(torch::equal(got.masked_select(finite), want.masked_select(finite)));
                QVERIFY(got[3].isnan().all().item<bool>());
            }
            for (int64_t r = 0; r < rows; ++r)
                QVERIFY2(gotLoss[size_t(r)] == wantLoss[size_t(r)] ||
                             (std::isnan(gotLoss[size_t(r)]) && std::isnan(wantLoss[size_t(r)])),
                         qPrintable(where + QStringLiteral(": row %1 loss").arg(r)));
            QVERIFY2(torch::equal(xb.narrow(1, vocab, 3), tail),
                     qPrintable(where + QStringLiteral(": wrote past the row")));
        }
    }
}

// Through the fused loss: logits in the hundreds (a head scaled up) still give the plain path's
// loss and gradients; a NaN in the hidden states gives a NaN loss, as the plain path does.
void TestChunkedLoss::fusedLargeAndNonFiniteLogits()
{
    torch::manual_seed(5);
    const torch::Tensor hiddenInit = torch::randn({24, 16});
    const torch::Tensor weightInit = torch::randn({300, 16}) * 40.0;
    const torch::Tensor labels = makeLabels(24, 300, 5, 0, 0);
    torch::Tensor h1 = hiddenInit.clone().requires_grad_(true),
                  w1 = weightInit.clone().requires_grad_(true);
    torch::Tensor h2 = hiddenInit.clone().requires_grad_(true),
                  w2 = weightInit.clone().requires_grad_(true);
    const torch::Tensor got = tb::fusedHeadCrossEntropy(h1, w1, labels, 1.0, 7);
    got.backward();
    const torch::Tensor want = plainCrossEntropy(h2, w2, labels);
    want.backward();
    checkAgainstPlain(got.detach(), want.detach(), h1.grad(), h2.grad(), w1.grad(), w2.grad(), true,
                      false);
    torch::Tensor bad = hiddenInit.clone();
    bad[3][2] = std::numeric_limits<float>::quiet_NaN();
    QVERIFY(std::isnan(tb::fusedHeadCrossEntropy(bad, weightInit, labels).item<double>()));
}

void TestChunkedLoss::badInputsFail()
{
    const torch::Tensor hidden = torch::randn({6, 4});
    const torch::Tensor weight = torch::randn({10, 4});
    const torch::Tensor labels = torch::tensor({1, 2, 3, -100, 4, 5}, torch::kLong);
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::chunkedCrossEntropy(hidden, weight, labels.clone().fill_(10)));
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::chunkedCrossEntropy(hidden, weight, labels.clone().fill_(-1)));
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::chunkedCrossEntropy(hidden, weight, labels.to(torch::kInt)));
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::chunkedCrossEntropy(hidden, torch::randn({10, 5}), labels));
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::chunkedCrossEntropy(hidden, weight, labels.narrow(0, 0, 5)));
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::chunkedCrossEntropy(hidden.unsqueeze(0), weight, labels));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::chunkedCrossEntropy(hidden, weight, labels, 0));
    // The message names the bad label and where it is.
    try {
        torch::Tensor bad = labels.clone();
        bad[4] = 12;
        tb::chunkedCrossEntropy(hidden, weight, bad);
        QFAIL("no error for label 12 with vocab 10");
    } catch (const tb::Error& e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.contains(QStringLiteral("label 12 at token 4")), qPrintable(message));
    }
}

void TestChunkedLoss::peakMemoryBelowQuarter()
{
    // Plain: [4096, 32000] fp32 logits are 500 MiB, and its log-softmax and backward add more of
    // the same size; chunked holds one [1024, 32000] chunk (125 MiB) at a time.
    const int64_t tokens = 4096, vocab = 32000, hiddenDim = 64, chunk = 1024;
    const PeakPair peaks = measurePeaks(tokens, vocab, hiddenDim, chunk, true);
    qInfo().noquote() << "tokens 4096, vocab 32000, hidden 64, chunk 1024: peak plain"
                      << mib(peaks.plain) << "chunked" << mib(peaks.chunked);
    const int64_t logitsBytes = tokens * vocab * 4;
    QVERIFY2(peaks.plain >= logitsBytes, "the plain path should hold the full logits");
    QVERIFY2(peaks.chunked < peaks.plain / 4, "chunked peak is not below 25% of the plain peak");
    // One chunk of logits plus the gradients ([vocab, hidden] fp32 accumulator and result,
    // hidden's) and small change: nothing [tokens, vocab]-sized is kept.
    const int64_t chunkBytes = chunk * vocab * 4;
    const int64_t gradBytes = 2 * vocab * hiddenDim * 4 + tokens * hiddenDim * 4;
    QVERIFY2(peaks.chunked < chunkBytes + gradBytes + chunkBytes / 4,
             qPrintable(QStringLiteral("chunked peak %1 exceeds one chunk (%2) + grads (%3)")
                            .arg(mib(peaks.chunked), mib(chunkBytes), mib(gradBytes))));
}

void TestChunkedLoss::peakMemory150kVocab_data()
{
    QTest::addColumn<qint64>("chunk");
    QTest::addColumn<bool>("weightTrainable");
    QTest::newRow("trainable head, chunk 1024") << 1024ll << true;
    QTest::newRow("trainable head, chunk 256") << 256ll << true;
    QTest::newRow("frozen head (LoRA), chunk 1024") << 1024ll << false;
}

void TestChunkedLoss::peakMemory150kVocab()
{
    // A Qwen2-0.5B-like head (vocab 151,936, hidden 896) over 2048 tokens in fp32: the plain path's
    // logits alone are 1.16 GiB, a trainable head's gradient 519 MiB. Printed for the benchmarks.
    QFETCH(qint64, chunk);
    QFETCH(bool, weightTrainable);
    const int64_t tokens = 2048, vocab = 151936, hiddenDim = 896;
    const auto start = std::chrono::steady_clock::now();
    const PeakPair peaks = measurePeaks(tokens, vocab, hiddenDim, chunk, weightTrainable);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo().noquote() << QStringLiteral("tokens 2048, vocab 151936, hidden 896, fp32, %1 head, "
                                        "chunk %2, forward + backward: peak plain %3 (%4 B), "
                                        "chunked %5 (%6 B), ratio %7; both runs %8 s")
                             .arg(weightTrainable ? QStringLiteral("trainable")
                                                  : QStringLiteral("frozen"))
                             .arg(chunk)
                             .arg(mib(peaks.plain))
                             .arg(peaks.plain)
                             .arg(mib(peaks.chunked))
                             .arg(peaks.chunked)
                             .arg(double(peaks.chunked) / double(peaks.plain), 0, 'f', 3)
                             .arg(seconds, 0, 'f', 1);
    // The bound of peakMemoryBelowQuarter: one chunk of logits, the gradients (the head's
    // accumulator and result only when it trains) and a quarter chunk of small change; nothing
    // [tokens, vocab]-sized (1.16 GiB here) is held.
    const int64_t chunkBytes = chunk * vocab * 4;
    const int64_t gradBytes =
        (weightTrainable ? 2 * vocab * hiddenDim * 4 : 0) + tokens * hiddenDim * 4;
    QVERIFY2(peaks.chunked < chunkBytes + gradBytes + chunkBytes / 4,
             qPrintable(QStringLiteral("chunked peak %1 exceeds one chunk (%2) + grads (%3)")
                            .arg(mib(peaks.chunked), mib(chunkBytes), mib(gradBytes))));
    QVERIFY(peaks.plain >= tokens * vocab * 4);  // the plain path holds the logits
}

void TestChunkedLoss::tiedHeadCopyInFusedLoss()
{
    // A tied head over a frozen embedding, under bf16 autocast: the fused loss reads the model's
    // bf16 copy of the head (CausalLM::holdTiedHeadCopy) instead of casting the embedding every
    // step (the step's transient bytes show it), to the same loss and gradients bit for bit; a
    // changed embedding drops the copy.
    tb::ModelConfig c;
    c.architecture = tb::Architecture::Qwen2;
    c.modelType = tb::architectureName(c.architecture);
    c.vocabSize = 8192;  // the head's bf16 cast (1 MiB) stands out of a step's transients
    c.hiddenSize = 64;
    c.intermediateSize = 96;
    c.numLayers = 2;
    c.numHeads = 4;
    c.numKvHeads = 2;
    c.headDim = 16;
    c.maxPositions = 64;
    c.tieWordEmbeddings = true;
    c.qkvBias = true;
    auto model = tb::createCausalLM(c);
    model->initRandom(5, torch::kFloat32, torch::kCPU);
    model->train();
    torch::Tensor embedding = model->tokenEmbeddingWeight();
    embedding.requires_grad_(false);
    torch::manual_seed(2);
    const torch::Tensor ids = torch::randint(0, c.vocabSize, {3, 11}, torch::kInt64);
    const torch::Tensor labels = torch::randint(0, c.vocabSize, {3, 11}, torch::kInt64);
    const tb::TrainConfig config;  // loss full: the fused loss
    tb::AutocastGuard bf16(at::kCPU, true, at::kBFloat16);
    // The loss and the gradient of every trainable parameter.
    auto step = [&] {
        model->zero_grad();
        torch::Tensor loss = tb::batchLoss(*model, ids, labels, 33.0, config);
        loss.backward();
        std::vector<torch::Tensor> out{loss.detach()};
        for (const auto& p : model->parameters())
            if (p.requires_grad())
                out.push_back(p.grad().clone());
        return out;
    };
    const int64_t cast = 8192 * 64 * 2;
    tb::installCpuMemoryTracking();
    auto stepPeak = [&](std::vector<torch::Tensor>& out) {  // bytes above the step's start
        const int64_t start = tb::memorySnapshot("cpu").current;
        tb::resetMemoryPeak("cpu");
        out = step();
        return tb::memorySnapshot("cpu").peak - start;
    };
    std::vector<torch::Tensor> reference;  // the embedding cast in the loss
    const int64_t castingPeak = stepPeak(reference);
    QCOMPARE(model->holdTiedHeadCopy(torch::kBFloat16), cast);
    QCOMPARE(model->tiedHeadCopyBytes(), cast);
    const torch::Tensor copy = model->headWeightIn(torch::kBFloat16);
    QCOMPARE(copy.scalar_type(), torch::kBFloat16);
    QVERIFY(copy.data_ptr() != embedding.data_ptr());
    QVERIFY(torch::equal(copy, embedding.to(torch::kBFloat16)));
    QVERIFY(model->headWeightIn(torch::kHalf).data_ptr() == embedding.data_ptr());
    std::vector<torch::Tensor> withCopy;
    const int64_t copyPeak = stepPeak(withCopy);
    // The step no longer makes the cast: its transients shrink by about the cast's bytes.
    qInfo("a step's peak above its start: %lld B casting the head, %lld B with the copy",
          static_cast<long long>(castingPeak), static_cast<long long>(copyPeak));
    QVERIFY(castingPeak - copyPeak >= cast * 9 / 10);
    QCOMPARE(withCopy.size(), reference.size());
    QVERIFY(reference.size() > 10);
    for (size_t i = 0; i < reference.size(); ++i)
        QVERIFY2(torch::equal(withCopy[i], reference[i]), qPrintable(QString::number(i)));
    // The embedding changes in place: the copy is stale, dropped, and the loss follows the
    // embedding.
    {
        torch::NoGradGuard noGrad;
        embedding.mul_(1.5);
    }
    QVERIFY(model->headWeightIn(torch::kBFloat16).data_ptr() == embedding.data_ptr());
    QCOMPARE(model->tiedHeadCopyBytes(), int64_t(0));
    const auto changed = step();
    QVERIFY(!torch::equal(changed[0], reference[0]));
    // None for a trainable embedding, nor for an untied head (castFrozenLinearWeights casts it).
    embedding.requires_grad_(true);
    QCOMPARE(model->holdTiedHeadCopy(torch::kBFloat16), int64_t(0));
    c.tieWordEmbeddings = false;
    auto untied = tb::createCausalLM(c);
    untied->initRandom(5, torch::kFloat32, torch::kCPU);
    for (auto& p : untied->parameters())
        p.requires_grad_(false);
    QCOMPARE(untied->holdTiedHeadCopy(torch::kBFloat16), int64_t(0));
}

QTEST_GUILESS_MAIN(TestChunkedLoss)
#include "test_chunked_loss.moc"
