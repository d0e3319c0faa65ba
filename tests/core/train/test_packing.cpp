// Packing without cross-example attention: best-fit-decreasing bins (a hand-checked case, seeded
// determinism, no example split), packed batches' positions and segments, packed vs one-by-one
// per-token losses and gradients on random llama and gpt2 models (1e-5, fp32; with and without
// block checkpointing; full and chunked loss), the packing record, and the length-grouped order.
#include "model/causal_lm.h"
#include "model/model.h"
#include "model/model_impl.h"
#include "train/batching.h"
#include "train/losses.h"
#include "train/metrics.h"
#include "train/train_config.h"
#include "util/error.h"

#include "test_util.h"

#include <torch/torch.h>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace {

using tb::TokenizedExample;

// A small deterministic generator for test data (the same numbers on every platform).
class Lcg {
public:
    explicit Lcg(uint64_t seed) : m_state(seed) {}
    int32_t below(int32_t bound)
    {
        m_state = m_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<int32_t>((m_state >> 33) % static_cast<uint64_t>(bound));
    }

private:
    uint64_t m_state;
};

// Example e of length n: ids 100 e + i, loss on all but the first two tokens.
TokenizedExample numberedExample(int32_t e, int32_t n)
{
    TokenizedExample ex;
    for (int32_t i = 0; i < n; ++i) {
        ex.ids.push_back(100 * e + i);
        ex.lossMask.push_back(i >= 2 ? 1 : 0);
    }
    return ex;
}

tb::ModelConfig tinyConfig(tb::Architecture arch)
{
    tb::ModelConfig c;
    c.architecture = arch;
    c.modelType = tb::architectureName(arch);
    c.vocabSize = 61;
    c.hiddenSize = 32;
    c.intermediateSize = 48;
    c.numLayers = 2;
    c.numHeads = 4;
    c.numKvHeads = arch == tb::Architecture::Gpt2 ? 4 : 2;  // llama: grouped-query attention
    c.headDim = 8;
    c.maxPositions = 64;
    c.tieWordEmbeddings = arch == tb::Architecture::Gpt2;
    c.qkvBias = c.oBias = c.mlpBias = arch == tb::Architecture::Gpt2;
    if (arch == tb::Architecture::Gpt2)
        c.hiddenAct = "gelu_new";
    if (arch == tb::Architecture::Mistral)
        c.slidingWindow = 5;  // shorter than most examples: the window and the segments combine
    if (arch == tb::Architecture::Gemma3) {  // the same, on its first layer, with its own tables
        c.qkNorm = true;
        c.tieWordEmbeddings = true;
        c.hiddenAct = "gelu_pytorch_tanh";
        c.slidingWindow = 5;
        c.slidingLayers = {true, false};
        c.ropeThetaSliding = 500.0;
        c.attentionScale = 0.25;
        c.embeddingScale = std::sqrt(32.0);
    }
    if (arch == tb::Architecture::SmolLM3) {  // a NoPE layer that slides: positions only by order
        c.noRopeLayers = {false, true};
        c.slidingWindow = 5;
        c.slidingLayers = {false, true};
    }
    // Phi-3: fused projections, half of each head rotating, a window on both layers, LongRoPE's
    // short factors (every example stays inside the original context).
    if (arch == tb::Architecture::Phi3) {
        c.rotaryDim = c.headDim / 2;
        c.slidingWindow = 5;
        c.ropeScaling.type = "longrope";
        c.ropeScaling.shortFactor.assign(static_cast<size_t>(c.headDim / 4), 1.5);
        c.ropeScaling.longFactor.assign(static_cast<size_t>(c.headDim / 4), 4.0);
        c.ropeScaling.originalMaxPositions = 1000;
        c.ropeScaling.attentionFactor = 1.2;
    }
    return c;
}

// Per-token losses (summed cross-entropy, not averaged) and every parameter's gradient.
struct Outcome {
    std::vector<torch::Tensor> exampleLosses;  // per example: [tokens] fp32, 0 where no loss
    std::map<std::string, torch::Tensor> grads;
    double lossSum = 0;
};

torch::Tensor tokenLosses(const torch::Tensor& logits, const torch::Tensor& labels)
{
    return torch::nn::functional::cross_entropy(
               logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
               torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(
                   torch::kNone))
        .view(labels.sizes());
}

std::map<std::string, torch::Tensor> takeGrads(tb::CausalLM& m)
{
    std::map<std::string, torch::Tensor> out;
    for (auto& p : m.named_parameters()) {
        out[p.key()] =
            p.value().grad().defined() ? p.value().grad().clone() : torch::zeros_like(p.value());
        p.value().mutable_grad() = torch::Tensor();
    }
    return out;
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a - b).abs().max().item<double>();
}

}  // namespace

class TestPacking : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void bestFitDecreasingByHand();
    void binsDeterministicForSeed();
    void noExampleSplit();
    void packedBatchPositionsAndSegments();
    void packedMatchesOneByOne_data();
    void packedMatchesOneByOne();
    void packedRefusesCacheAndPrompt();
    void packingRecord();
    void lengthGroupedOrder();
};

// Capacity 20, items (by index) 2, 16, 7, 10, 3, 1 tokens. Longest first: 16 opens bin 0 (4 left),
// 10 opens bin 1 (10 left), 7 -> bin 1 (3 left), 3 -> bin 1, the fullest that fits (0 left; first
// fit would pick bin 0), 2 -> bin 0 (2 left), 1 -> bin 0. Two full-ish bins, where packing in
// input order would need three (2+16 | 7+10+3 | 1).
void TestPacking::bestFitDecreasingByHand()
{
    const std::vector<int32_t> lengths{2, 16, 7, 10, 3, 1};
    const auto bins = tb::packBins(lengths, 20, 0);
    QCOMPARE(bins, (std::vector<std::vector<int64_t>>{{1, 0, 5}, {3, 2, 4}}));

    std::vector<TokenizedExample> examples;
    for (size_t e = 0; e < lengths.size(); ++e)
        examples.push_back(numberedExample(int32_t(e), lengths[e]));
    const tb::SequenceSet set = tb::buildSequences(examples, 20, true, 0);
    const auto stats = tb::packingStats(set);
    QVERIFY(stats.has_value());
    QCOMPARE(stats->bins, int64_t(2));
    QCOMPARE(stats->examples, int64_t(6));
    QCOMPARE(stats->tokens, int64_t(39));
    QCOMPARE(stats->tokenSlots, int64_t(40));
    QCOMPARE(stats->efficiency(), 39.0 / 40.0);
    QVERIFY(!tb::packingStats(tb::buildSequences(examples, 20, false)).has_value());

    // Empty items go nowhere, an item of exactly the capacity fills a bin, a longer one is refused.
    QCOMPARE(tb::packBins({0, 20, 5, 0, 15}, 20, 3),
             (std::vector<std::vector<int64_t>>{{1}, {4, 2}}));
    QVERIFY(
        tbtest::contains(tbtest::errorOf([] { tb::packBins({21}, 20, 0); }), "over the capacity"));
    QVERIFY(tb::packBins({}, 20, 0).empty());
}

// The same seed gives the same bins; another seed only changes which of equally long items goes
// where (the bins' lengths stay the same); every item is in exactly one bin, none over capacity.
void TestPacking::binsDeterministicForSeed()
{
    Lcg rng(11);
    std::vector<int32_t> lengths;
    for (int i = 0; i < 500; ++i)
        lengths.push_back(1 + rng.below(40));
    const auto bins = tb::packBins(lengths, 64, 7);
    QCOMPARE(tb::packBins(lengths, 64, 7), bins);
    auto binLengths = [&](const std::vector<std::vector<int64_t>>& b) {
        std::vector<std::vector<int32_t>> out;
        for (const auto& bin : b) {
            out.emplace_back();
            for (int64_t i : bin)
                out.back().push_back(lengths[size_t(i)]);
        }
        return out;
    };
    bool someSeedDiffers = false;
    for (uint64_t seed : {8, 9, 10}) {
        const auto other = tb::packBins(lengths, 64, seed);
        QCOMPARE(binLengths(other), binLengths(bins));
        someSeedDiffers = someSeedDiffers || other != bins;
    }
    QVERIFY(someSeedDiffers);

    std::vector<int64_t> seen;
    int64_t total = 0;
    for (const auto& bin : bins) {
        int64_t used = 0;
        for (int64_t i : bin) {
            seen.push_back(i);
            used += lengths[size_t(i)];
        }
        QVERIFY(used <= 64);
        total += used;
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(lengths.size());
    std::iota(all.begin(), all.end(), 0);
    QCOMPARE(seen, all);
    const double efficiency = double(total) / double(64 * bins.size());
    qInfo("500 items of 1..40 tokens into bins of 64: %zu bins (lower bound %lld), efficiency "
          "%.4f",
          bins.size(), static_cast<long long>((total + 63) / 64), efficiency);
    QVERIFY(efficiency > 0.97);
}

// Every example is whole in exactly one bin, at its start offset, with its own shifted labels;
// an over-long one is cut to max_length and counted.
void TestPacking::noExampleSplit()
{
    Lcg rng(5);
    std::vector<TokenizedExample> examples;
    for (int32_t e = 0; e < 60; ++e)
        examples.push_back(numberedExample(e, 1 + rng.below(30)));
    examples.push_back(numberedExample(60, 45));  // over max_length 32
    examples.push_back(numberedExample(61, 0));   // empty: in no bin
    const tb::SequenceSet set = tb::buildSequences(examples, 32, true, 3);
    QCOMPARE(set.truncated, int64_t(1));
    QCOMPARE(set.examples, int64_t(62));
    std::vector<int> count(examples.size(), 0);
    int64_t tokens = 0;
    for (const tb::Sequence& seq : set.sequences) {
        QVERIFY(seq.length <= 32);
        QCOMPARE(seq.starts.size(), seq.examples.size());
        QCOMPARE(seq.length, int32_t(seq.ids.size()));
        tokens += seq.length;
        for (size_t k = 0; k < seq.examples.size(); ++k) {
            const auto e = size_t(seq.examples[k]);
            ++count[e];
            const int32_t begin = seq.starts[k];
            const int32_t end = k + 1 < seq.starts.size() ? seq.starts[k + 1] : seq.length;
            const size_t n = std::min<size_t>(examples[e].ids.size(), 32);
            QCOMPARE(size_t(end - begin), n);
            for (int32_t i = begin; i < end; ++i) {
                const size_t j = size_t(i - begin);
                QCOMPARE(seq.ids[size_t(i)], examples[e].ids[j]);
                const bool loss = j + 1 < n && examples[e].lossMask[j + 1];
                QCOMPARE(seq.labels[size_t(i)], loss ? examples[e].ids[j + 1] : -100);
            }
        }
    }
    for (size_t e = 0; e < 61; ++e)
        QCOMPARE(count[e], 1);
    QCOMPARE(count[61], 0);
    QCOMPARE(set.tokens, tokens);
    QCOMPARE(set.tokenSlots, int64_t(32) * int64_t(set.sequences.size()));
}

// Positions restart at 0 for each example; segments count the examples of a row, padding one more.
void TestPacking::packedBatchPositionsAndSegments()
{
    // Bins of 8: {5, 3} and {4}.
    const tb::SequenceSet set = tb::buildSequences(
        {numberedExample(0, 5), numberedExample(1, 4), numberedExample(2, 3)}, 8, true, 0);
    QCOMPARE(set.sequences.size(), size_t(2));
    const tb::TokenBatch b = tb::makeBatch(set, {0, 1}, 9);
    QCOMPARE(b.width, int64_t(8));
    QCOMPARE(b.positions,
             (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, /**/ 0, 1, 2, 3, 0, 1, 2, 3}));
    QCOMPARE(b.segments,
             (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, /**/ 0, 0, 0, 0, 1, 1, 1, 1}));
    QCOMPARE(b.ids[12], int64_t(9));  // padding
    // Unpacked batches keep the plain path: no positions, no segments.
    const tb::TokenBatch plain =
        tb::makeBatch(tb::buildSequences({numberedExample(0, 5)}, 8, false), {0}, 9);
    QVERIFY(plain.positions.empty() && plain.segments.empty());
}

void TestPacking::packedMatchesOneByOne_data()
{
    QTest::addColumn<int>("arch");
    QTest::addColumn<bool>("checkpointing");
    QTest::addColumn<bool>("chunked");
    QTest::newRow("llama") << int(tb::Architecture::Llama) << false << false;
    QTest::newRow("gpt2") << int(tb::Architecture::Gpt2) << false << false;
    QTest::newRow("llama checkpointed") << int(tb::Architecture::Llama) << true << false;
    QTest::newRow("gpt2 checkpointed") << int(tb::Architecture::Gpt2) << true << false;
    QTest::newRow("llama chunked loss") << int(tb::Architecture::Llama) << false << true;
    QTest::newRow("mistral window") << int(tb::Architecture::Mistral) << false << false;
    QTest::newRow("mistral window checkpointed") << int(tb::Architecture::Mistral) << true << false;
    QTest::newRow("gemma3") << int(tb::Architecture::Gemma3) << false << false;
    QTest::newRow("gemma3 checkpointed") << int(tb::Architecture::Gemma3) << true << false;
    QTest::newRow("smollm3") << int(tb::Architecture::SmolLM3) << false << false;
    QTest::newRow("phi3") << int(tb::Architecture::Phi3) << false << false;
}

// The packed batch of all bins: one forward and backward. Per-token losses are taken from the full
// logits (not with the chunked loss, which gives only the sum).
Outcome runPacked(tb::CausalLM& m, const tb::SequenceSet& set, const tb::TrainConfig& run,
                  double normaliser)
{
    std::vector<int64_t> all(set.sequences.size());
    std::iota(all.begin(), all.end(), 0);
    const tb::BatchTensors t = tb::toTensors(tb::makeBatch(set, all, 0), torch::kCPU);
    if (!t.packedRows())
        throw tb::Error("a packed set gave an unpacked batch");
    Outcome out;
    out.exampleLosses.resize(size_t(set.examples));
    torch::Tensor loss, perToken;
    if (run.loss == tb::LossKind::Chunked) {
        loss = tb::batchLoss(m, t.ids, t.labels, normaliser, run, t.packedRows());
    } else {
        perToken = tokenLosses(m.forward(t.ids, nullptr, t.packedRows()), t.labels);
        loss = perToken.sum() / normaliser;
        for (size_t r = 0; r < set.sequences.size(); ++r) {
            const tb::Sequence& seq = set.sequences[r];
            for (size_t k = 0; k < seq.examples.size(); ++k) {
                const int32_t end = k + 1 < seq.starts.size() ? seq.starts[k + 1] : seq.length;
                out.exampleLosses[size_t(seq.examples[k])] =
                    perToken[int64_t(r)].slice(0, seq.starts[k], end).detach();
            }
        }
    }
    loss.backward();
    out.lossSum = loss.item<double>();
    out.grads = takeGrads(m);
    return out;
}

// The same examples one by one, unpacked (the plain causal path), their gradients adding up.
Outcome runOneByOne(tb::CausalLM& m, const std::vector<TokenizedExample>& examples, int maxLength,
                    const tb::TrainConfig& run, double normaliser)
{
    Outcome out;
    out.exampleLosses.resize(examples.size());
    for (size_t e = 0; e < examples.size(); ++e) {
        const tb::SequenceSet one = tb::buildSequences({examples[e]}, maxLength, false);
        const tb::BatchTensors t = tb::toTensors(tb::makeBatch(one, {0}, 0), torch::kCPU);
        if (t.packedRows())
            throw tb::Error("an unpacked set gave a packed batch");
        torch::Tensor loss;
        if (run.loss == tb::LossKind::Chunked) {
            loss = tb::batchLoss(m, t.ids, t.labels, normaliser, run);
        } else {
            const torch::Tensor perToken = tokenLosses(m.forward(t.ids, nullptr), t.labels)[0];
            out.exampleLosses[e] = perToken.detach();
            loss = perToken.sum() / normaliser;
        }
        loss.backward();
        out.lossSum += loss.item<double>();
    }
    out.grads = takeGrads(m);
    return out;
}

// A packed batch of examples of different lengths against the same examples one by one: every
// example's per-token losses and every parameter's gradient (of the loss summed over all tokens
// and divided by the same count) agree within 1e-5 in fp32.
void TestPacking::packedMatchesOneByOne()
{
    QFETCH(int, arch);
    QFETCH(bool, checkpointing);
    QFETCH(bool, chunked);
    const tb::ModelConfig config = tinyConfig(tb::Architecture(arch));
    auto model = tb::Model::createRandom(config, {"fp32", "cpu"}, 17);
    tb::CausalLM& m = *model->impl().module;
    for (auto& p : m.parameters())
        p.set_requires_grad(true);
    m.train();  // checkpointing recomputes in training only (these models have no dropout)
    m.setGradientCheckpointing(checkpointing);
    tb::TrainConfig run;
    run.loss = chunked ? tb::LossKind::Chunked : tb::LossKind::Full;
    run.lossChunkTokens = 16;

    Lcg rng(23);
    std::vector<TokenizedExample> examples;
    for (int32_t n : {9, 5, 13, 3, 7, 11, 6, 2}) {
        TokenizedExample ex;
        for (int32_t i = 0; i < n; ++i) {
            ex.ids.push_back(1 + rng.below(int32_t(config.vocabSize) - 1));
            ex.lossMask.push_back(i >= 2 ? 1 : 0);
        }
        examples.push_back(ex);
    }
    const int maxLength = 16;  // bins 13+3, 11+5, 9+7, 6+2: the last row is padded
    const tb::SequenceSet packedSet = tb::buildSequences(examples, maxLength, true, 1);
    QCOMPARE(packedSet.sequences.size(), size_t(4));
    const double normaliser = double(packedSet.lossTokens);
    const Outcome packed = runPacked(m, packedSet, run, normaliser);
    const Outcome single = runOneByOne(m, examples, maxLength, run, normaliser);

    double lossDiff = std::abs(packed.lossSum - single.lossSum);
    if (!chunked)
        for (size_t e = 0; e < examples.size(); ++e) {
            QCOMPARE(packed.exampleLosses[e].numel(), single.exampleLosses[e].numel());
            lossDiff =
                std::max(lossDiff, maxDiff(packed.exampleLosses[e], single.exampleLosses[e]));
        }
    double gradDiff = 0, gradLargest = 0;
    QCOMPARE(packed.grads.size(), single.grads.size());
    for (const auto& [name, g] : single.grads) {
        gradDiff = std::max(gradDiff, maxDiff(packed.grads.at(name), g));
        gradLargest = std::max(gradLargest, g.abs().max().item<double>());
    }
    qInfo("%s: max |loss diff| %.3g (loss sum %.4f), max |grad diff| %.3g (largest grad %.3g)",
          QTest::currentDataTag(), lossDiff, single.lossSum, gradDiff, gradLargest);
    QVERIFY2(lossDiff < 1e-5, QByteArray::number(lossDiff).constData());
    QVERIFY2(gradDiff < 1e-5, QByteArray::number(gradDiff).constData());
    QVERIFY(gradLargest > 1e-3);  // the comparison is not of zeros

    // Not vacuous: the same rows without their segments let the later examples see the earlier.
    if (!chunked && !checkpointing) {
        torch::NoGradGuard noGrad;
        const tb::BatchTensors t = tb::toTensors(tb::makeBatch(packedSet, {0}, 0), torch::kCPU);
        const torch::Tensor leaky = tokenLosses(m.forward(t.ids, nullptr), t.labels);
        const tb::Sequence& first = packedSet.sequences[0];
        const torch::Tensor second = leaky[0].slice(0, first.starts[1], first.length);
        QVERIFY(maxDiff(second, single.exampleLosses[size_t(first.examples[1])]) > 1e-3);
    }
}

// Packed rows are for training: no KV cache, no soft prompt.
void TestPacking::packedRefusesCacheAndPrompt()
{
    auto model = tb::Model::createRandom(tinyConfig(tb::Architecture::Llama), {"fp32", "cpu"}, 1);
    tb::CausalLM& m = *model->impl().module;
    torch::NoGradGuard noGrad;
    const auto ids = torch::tensor({{1, 2, 3, 4}}, torch::kInt64);
    const tb::PackedRows packed{torch::tensor({{0, 1, 0, 1}}, torch::kInt64),
                                torch::tensor({{0, 0, 1, 1}}, torch::kInt64)};
    tb::KVCache cache;
    QVERIFY(
        tbtest::contains(tbtest::errorOf([&] { m.forward(ids, &cache, &packed); }), "KV cache"));
    m.setPromptEmbeddings(torch::zeros({2, 32}));
    QVERIFY(tbtest::contains(tbtest::errorOf([&] { m.forward(ids, nullptr, &packed); }),
                             "data.packing"));
}

// PackingStats: one JSON form, read back; its console line.
void TestPacking::packingRecord()
{
    const tb::PackingStats p{2, 6, 39, 40};
    const nlohmann::json j = tb::toJson(p);
    QCOMPARE(
        j,
        (nlohmann::json{
            {"bins", 2}, {"examples", 6}, {"tokens", 39}, {"slots", 40}, {"efficiency", 0.975}}));
    const tb::PackingStats back = tb::packingStatsFromJson(j);
    QCOMPARE(back.bins, p.bins);
    QCOMPARE(back.examples, p.examples);
    QCOMPARE(back.tokens, p.tokens);
    QCOMPARE(back.tokenSlots, p.tokenSlots);
    QCOMPARE(tb::formatPacking(p),
             std::string("packed 6 examples into 2 bins: efficiency 97.5% (39 of 40 token slots)"));
    QVERIFY(tbtest::contains(tbtest::errorOf([] {
                                 tb::packingStatsFromJson({{"bins", 1}});
                             }),
                             "'examples'"));
    QCOMPARE(tb::PackingStats{}.efficiency(), 0.0);
}

// The length-grouped order: deterministic per seed and epoch, every sequence once, batches of
// similar length (far narrower than random batches), the longest batch first, a short one last.
void TestPacking::lengthGroupedOrder()
{
    Lcg rng(3);
    std::vector<int32_t> lengths;
    for (int i = 0; i < 1003; ++i)
        lengths.push_back(1 + rng.below(200));
    const int64_t batch = 8;
    const auto order = tb::lengthGroupedOrder(lengths, batch, 42, 0);
    QCOMPARE(tb::lengthGroupedOrder(lengths, batch, 42, 0), order);
    QVERIFY(tb::lengthGroupedOrder(lengths, batch, 42, 1) != order);
    QVERIFY(tb::lengthGroupedOrder(lengths, batch, 43, 0) != order);
    for (int64_t epoch : {0, 1, 2}) {
        auto sorted = tb::lengthGroupedOrder(lengths, batch, 42, epoch);
        std::sort(sorted.begin(), sorted.end());
        std::vector<int64_t> all(lengths.size());
        std::iota(all.begin(), all.end(), 0);
        QCOMPARE(sorted, all);
    }
    // Mean length spread (longest - shortest) of the full batches, grouped vs plain epoch order.
    auto spread = [&](const std::vector<int64_t>& o) {
        double sum = 0;
        const size_t full = o.size() / size_t(batch);
        for (size_t b = 0; b < full; ++b) {
            const auto [lo, hi] = std::minmax_element(
                o.begin() + long(b) * batch, o.begin() + long(b + 1) * batch,
                [&](int64_t x, int64_t y) { return lengths[size_t(x)] < lengths[size_t(y)]; });
            sum += lengths[size_t(*hi)] - lengths[size_t(*lo)];
        }
        return sum / double(full);
    };
    const double grouped = spread(order);
    const double plain = spread(tb::epochOrder(int64_t(lengths.size()), 42, 0));
    qInfo("mean length spread per batch of 8: grouped %.2f, random %.2f", grouped, plain);
    QVERIFY(grouped * 10 < plain);
    const int32_t longest = *std::max_element(lengths.begin(), lengths.end());
    bool firstHoldsLongest = false;
    for (int64_t i = 0; i < batch; ++i)
        firstHoldsLongest = firstHoldsLongest || lengths[size_t(order[size_t(i)])] == longest;
    QVERIFY(firstHoldsLongest);
    // 1003 = 125 x 8 + 3: the short batch comes last and holds the shortest three of the last
    // mega-batch (permutation places 800 to 1002).
    const auto permutation = tb::epochOrder(int64_t(lengths.size()), 42, 0);
    std::vector<int32_t> lastMega, tail;
    for (size_t i = 800; i < permutation.size(); ++i)
        lastMega.push_back(lengths[size_t(permutation[i])]);
    std::sort(lastMega.begin(), lastMega.end());
    for (size_t i = order.size() - 3; i < order.size(); ++i)
        tail.push_back(lengths[size_t(order[i])]);
    std::sort(tail.begin(), tail.end());
    QCOMPARE(tail, std::vector<int32_t>(lastMega.begin(), lastMega.begin() + 3));
    QVERIFY(tb::lengthGroupedOrder({}, batch, 1, 0).empty());
    QCOMPARE(tb::lengthGroupedOrder({5, 9, 7}, 8, 1, 0), (std::vector<int64_t>{1, 2, 0}));
}

QTEST_GUILESS_MAIN(TestPacking)
#include "test_packing.moc"
