// Batched generation: every row of generateBatch equals generate() on its prompt alone (tokens,
// text, stop reason), greedy and sampled, over random GPT-2, Llama, Qwen3, Gemma 3, SmolLM3 and
// Phi-3 models and the bundled model, with LoRA, bottleneck adapters and a soft prompt; the padded
// batch's logits equal each prompt's own; cancellation, context limits and bad requests.
#include "model/model.h"
#include "model/model_impl.h"
#include "peft/peft.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <QtTest>

#include "test_util.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

namespace {

using tbtest::errorOf;

const std::string kBundled = TB_SOURCE_DIR "/datasets/models/stories260k";

tb::ModelConfig smallConfig(tb::Architecture arch)
{
    tb::ModelConfig c;
    c.architecture = arch;
    c.modelType = tb::architectureName(arch);
    c.vocabSize = 101;
    c.hiddenSize = 32;
    c.intermediateSize = 64;
    c.numLayers = 2;
    c.numHeads = 4;
    c.numKvHeads = arch == tb::Architecture::Gpt2 ? 4 : 2;  // grouped-query attention in Llama
    c.headDim = 8;
    c.maxPositions = 128;
    c.tieWordEmbeddings = false;  // a random tied head mostly repeats the last token
    c.qkNorm = arch == tb::Architecture::Qwen3;
    if (arch == tb::Architecture::Gpt2) {
        c.hiddenAct = "gelu_new";
        c.qkvBias = c.oBias = c.mlpBias = true;
    }
    // Sliding windows shorter than most prompts: Mistral's on both layers, Qwen2's on the second.
    if (arch == tb::Architecture::Mistral)
        c.slidingWindow = 7;
    if (arch == tb::Architecture::Qwen2) {
        c.qkvBias = true;
        c.slidingWindow = 6;
        c.slidingLayers = {false, true};
    }
    // Gemma 3: its first layer slides with a rotary base of its own.
    if (arch == tb::Architecture::Gemma3) {
        c.qkNorm = true;
        c.hiddenAct = "gelu_pytorch_tanh";
        c.slidingWindow = 6;
        c.slidingLayers = {true, false};
        c.ropeTheta = 100000.0;
        c.ropeThetaSliding = 1000.0;
        c.attentionScale = 0.3;
        c.embeddingScale = std::sqrt(32.0);
    }
    // SmolLM3: its second layer has no rotary embedding and slides.
    if (arch == tb::Architecture::SmolLM3) {
        c.noRopeLayers = {false, true};
        c.slidingWindow = 6;
        c.slidingLayers = {false, true};
    }
    // Phi-3: fused projections, half of each head rotating, a window on both layers, LongRoPE's
    // short factors and attention factor (the original context is beyond every row here).
    if (arch == tb::Architecture::Phi3) {
        c.rotaryDim = 4;
        c.slidingWindow = 6;
        c.ropeScaling.type = "longrope";
        c.ropeScaling.shortFactor = {1.0, 1.5};
        c.ropeScaling.longFactor = {2.0, 4.0};
        c.ropeScaling.originalMaxPositions = 1000;
        c.ropeScaling.attentionFactor = 1.1;
    }
    return c;
}

// A head of 8,192 x 128 (4 MiB): decoding a few rows multiplies it as W x^T (linearForward).
tb::ModelConfig wideConfig(tb::Architecture arch)
{
    auto c = smallConfig(arch);
    c.vocabSize = 8192;
    c.hiddenSize = 128;
    c.headDim = 32;
    return c;
}

// Prompts of the given lengths, ids drawn uniformly from [0, vocab).
std::vector<std::vector<int32_t>> randomPrompts(const std::vector<int>& lengths, int64_t vocab,
                                                unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab) - 1);
    std::vector<std::vector<int32_t>> out;
    for (int n : lengths) {
        out.emplace_back(static_cast<size_t>(n));
        for (auto& id : out.back())
            id = pick(rng);
    }
    return out;
}

// Eight prompt lengths within a tenth of each other: padding adds under a quarter to the batch's
// positions, so it is prefilled in one padded pass (else prompt by prompt, on the CPU).
const std::vector<int> kEvenLengths{30, 28, 29, 30, 27, 30, 26, 29};

std::vector<int> lengthsFor(int batch)
{
    if (batch == 1)
        return {7};
    if (batch == 3)
        return {1, 40, 12};
    return {5, 1, 33, 17, 2, 48, 9, 24};
}

// Runs each prompt alone and all as one batch: the rows that disagree with their single run
// (tokens, text, stop reason, prefill tokens), "" when none does. single: the single runs.
std::string rowsDiffer(const tb::Model& model, const std::vector<std::vector<int32_t>>& prompts,
                       const tb::GenerateOptions& o, const tb::Tokenizer* tok,
                       std::vector<tb::GenerateResult>& single)
{
    single.clear();
    for (const auto& p : prompts)
        single.push_back(model.generate(p, o, tok));
    auto batch = model.generateBatch(prompts, o, tok);
    if (batch.size() != prompts.size())
        return "generateBatch returned " + std::to_string(batch.size()) + " results";
    std::string out;
    for (size_t i = 0; i < prompts.size(); ++i)
        if (batch[i].tokens != single[i].tokens || batch[i].stopReason != single[i].stopReason ||
            batch[i].text != single[i].text ||
            batch[i].prefillTokens != static_cast<int64_t>(prompts[i].size()))
            out += tbtest::numbered("row ", static_cast<long long>(i)) + ": batch " +
                   std::to_string(batch[i].tokens.size()) + " tokens (" + batch[i].stopReason +
                   "), alone " + std::to_string(single[i].tokens.size()) + " (" +
                   single[i].stopReason + "); ";
    return out;
}

// Fails the test function unless every row of the batch equals its single run (kept in `single`).
#define EXPECT_ROWS_MATCH(single, model, prompts, o, tok)                                          \
    do {                                                                                           \
        const std::string differ = rowsDiffer(model, prompts, o, tok, single);                     \
        QVERIFY2(differ.empty(), differ.c_str());                                                  \
    } while (false)

std::set<std::string> reasonsOf(const std::vector<tb::GenerateResult>& results)
{
    std::set<std::string> out;
    for (const auto& r : results)
        out.insert(r.stopReason);
    return out;
}

// A token that some rows produce and others do not, at different steps: as a stop token it ends
// rows at different times. -1 when there is none.
int32_t tokenSomeRowsHit(const std::vector<tb::GenerateResult>& results)
{
    std::map<int32_t, std::set<long>> firstAt;  // token -> first positions, one per row with it
    std::map<int32_t, size_t> rowsWith;
    for (const auto& r : results) {
        std::set<int32_t> seen;
        for (size_t j = 0; j < r.tokens.size(); ++j)
            if (seen.insert(r.tokens[j]).second) {
                firstAt[r.tokens[j]].insert(static_cast<long>(j));
                ++rowsWith[r.tokens[j]];
            }
    }
    int32_t best = -1;
    size_t bestSpread = 1;
    for (const auto& [token, positions] : firstAt)
        if (rowsWith[token] < results.size() && positions.size() > bestSpread) {
            best = token;
            bestSpread = positions.size();
        }
    return best;
}

double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
}

}  // namespace

class TestGenerateBatch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void greedyRowsMatchSingle_data();
    void greedyRowsMatchSingle();
    void bundledModel();
    void methodsInBatch_data();
    void methodsInBatch();
    void sampledRowsMatchSingle();
    void paddedLogitsMatchSingle_data();
    void paddedLogitsMatchSingle();
    void cancelAndEdges();
};

void TestGenerateBatch::greedyRowsMatchSingle_data()
{
    QTest::addColumn<int>("arch");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("maxPositions");
    QTest::addColumn<bool>("wide");
    QTest::addColumn<bool>("even");
    for (auto arch : {tb::Architecture::Gpt2, tb::Architecture::Llama, tb::Architecture::Qwen3})
        for (int batch : {1, 3, 8}) {
            const std::string name =
                std::string(tb::architectureName(arch)) + " batch " + std::to_string(batch);
            QTest::newRow(name.c_str()) << static_cast<int>(arch) << batch << 128 << false << false;
        }
    // A context of 52: the long prompts fill it before their budget, the short ones do not.
    const int gpt2 = static_cast<int>(tb::Architecture::Gpt2);
    const int llama = static_cast<int>(tb::Architecture::Llama);
    QTest::newRow("gpt2 context full") << gpt2 << 8 << 52 << false << false;
    QTest::newRow("llama context full") << llama << 8 << 52 << false << false;
    QTest::newRow("llama wide head") << llama << 8 << 128 << true << false;
    QTest::newRow("gpt2 wide head") << gpt2 << 8 << 128 << true << false;
    QTest::newRow("gpt2 even lengths") << gpt2 << 8 << 128 << false << true;
    QTest::newRow("qwen3 even lengths")
        << static_cast<int>(tb::Architecture::Qwen3) << 8 << 128 << false << true;
    const int mistral = static_cast<int>(tb::Architecture::Mistral);
    const int qwen2 = static_cast<int>(tb::Architecture::Qwen2);
    QTest::newRow("mistral window batch 8") << mistral << 8 << 128 << false << false;
    QTest::newRow("qwen2 window batch 3") << qwen2 << 3 << 128 << false << false;
    QTest::newRow("gemma3 batch 8")
        << static_cast<int>(tb::Architecture::Gemma3) << 8 << 128 << false << false;
    QTest::newRow("smollm3 batch 8")
        << static_cast<int>(tb::Architecture::SmolLM3) << 8 << 128 << false << false;
    QTest::newRow("phi3 batch 8") << static_cast<int>(tb::Architecture::Phi3) << 8 << 128 << false
                                  << false;
}

void TestGenerateBatch::greedyRowsMatchSingle()
{
    QFETCH(int, arch);
    QFETCH(int, batch);
    QFETCH(int, maxPositions);
    QFETCH(bool, wide);
    QFETCH(bool, even);
    auto config = wide ? wideConfig(static_cast<tb::Architecture>(arch))
                       : smallConfig(static_cast<tb::Architecture>(arch));
    config.maxPositions = maxPositions;
    auto model = tb::Model::createRandom(config, {"fp32", "cpu"}, 17);
    const auto prompts =
        randomPrompts(even ? kEvenLengths : lengthsFor(batch), config.vocabSize, 3);
    tb::GenerateOptions o;
    o.greedy = true;
    o.maxNewTokens = 24;
    std::vector<tb::GenerateResult> free;
    EXPECT_ROWS_MATCH(free, *model, prompts, o, nullptr);
    if (config.maxPositions < 128) {
        const auto reasons = reasonsOf(free);
        QVERIFY(reasons.count("context_full") && reasons.count("max_tokens"));
        return;
    }
    QCOMPARE(reasonsOf(free), std::set<std::string>{"max_tokens"});
    // A stop token that ends some rows, at different steps, and not others.
    const int32_t stop = tokenSomeRowsHit(free);
    if (batch == 1)
        return;
    QVERIFY2(stop >= 0, "no token that only some rows produce");
    o.stopTokenIds = {stop};
    std::vector<tb::GenerateResult> stopped;
    EXPECT_ROWS_MATCH(stopped, *model, prompts, o, nullptr);
    QCOMPARE(reasonsOf(stopped), (std::set<std::string>{"eos", "max_tokens"}));
    std::set<size_t> lengths;
    for (const auto& r : stopped)
        lengths.insert(r.tokens.size());
    QVERIFY(lengths.size() >= 3);  // rows left the batch at two different steps at least
}

void TestGenerateBatch::bundledModel()
{
    auto tok = tb::loadTokenizer(kBundled);
    auto model = tb::Model::load(kBundled, {"fp32", "cpu"});
    const std::vector<std::string> texts = {
        "Once upon a time",
        "Lily",
        "The dog ran to the park and saw a big red ball. He",
        "One day, a little boy named Tom went to the store with his mom. They",
        "Sam",
        "The sun was",
        "Sue and her friend",
        "Once upon a time, in a small house, there lived"};
    std::vector<std::vector<int32_t>> prompts;
    for (const auto& t : texts)
        prompts.push_back(tok->encode(t));
    tb::GenerateOptions o;
    o.greedy = true;
    o.maxNewTokens = 60;
    o.stopStrings = {" ball"};
    for (size_t batch : {size_t(1), size_t(3), size_t(8)}) {
        std::vector<std::vector<int32_t>> part(prompts.begin(),
                                               prompts.begin() + static_cast<long>(batch));
        std::vector<tb::GenerateResult> single;
        EXPECT_ROWS_MATCH(single, *model, part, o, tok.get());
        if (batch == 8)  // the stop string ends some rows, the budget the others
            QCOMPARE(reasonsOf(single), (std::set<std::string>{"max_tokens", "stop_string"}));
    }
    // Stop tokens (the model's EOS, and "." as a template's end-of-turn id would be) end rows.
    o.stopStrings.clear();
    o.stopTokenIds = {tok->encode("a ball.", false).back()};
    std::vector<tb::GenerateResult> single;
    EXPECT_ROWS_MATCH(single, *model, prompts, o, tok.get());
    QVERIFY(reasonsOf(single).count("eos"));
}

void TestGenerateBatch::methodsInBatch_data()
{
    QTest::addColumn<int>("arch");
    QTest::addColumn<int>("method");
    for (auto arch : {tb::Architecture::Gpt2, tb::Architecture::Llama})
        for (auto method : {tb::Method::Lora, tb::Method::Adapter, tb::Method::Prompt}) {
            const std::string name =
                std::string(tb::architectureName(arch)) + " " + tb::methodName(method);
            QTest::newRow(name.c_str()) << static_cast<int>(arch) << static_cast<int>(method);
        }
}

void TestGenerateBatch::methodsInBatch()
{
    QFETCH(int, arch);
    QFETCH(int, method);
    auto config = smallConfig(static_cast<tb::Architecture>(arch));
    auto model = tb::Model::createRandom(config, {"fp32", "cpu"}, 23);
    tb::CausalLM& m = *model->impl().module;
    tb::MethodOptions run;
    run.method = static_cast<tb::Method>(method);
    run.lora.rank = 4;
    run.adapter.size = 8;
    run.prompt.numTokens = 5;
    tb::applyMethod(m, run, nullptr, 1);
    {
        // LoRA's B and an adapter's up projection start at zero: give them values that change
        // the model's output.
        torch::NoGradGuard g;
        for (auto& [name, layer] : m.linearLayers())
            if (layer->hasLora() || (name.size() > 3 && name.substr(name.size() - 3) == ".up"))
                (layer->hasLora() ? layer->lora_B->weight : layer->weight).normal_(0, 0.2);
    }
    m.eval();
    tb::GenerateOptions o;
    o.greedy = true;
    o.maxNewTokens = 20;
    std::vector<tb::GenerateResult> even;  // one padded prefill pass
    EXPECT_ROWS_MATCH(even, *model, randomPrompts(kEvenLengths, config.vocabSize, 6), o, nullptr);
    const auto prompts = randomPrompts(lengthsFor(8), config.vocabSize, 5);
    std::vector<tb::GenerateResult> free;
    EXPECT_ROWS_MATCH(free, *model, prompts, o, nullptr);
    o.stopTokenIds = {tokenSomeRowsHit(free)};
    QVERIFY(o.stopTokenIds[0] >= 0);
    std::vector<tb::GenerateResult> stopped;
    EXPECT_ROWS_MATCH(stopped, *model, prompts, o, nullptr);
    QVERIFY(reasonsOf(stopped).count("eos") && reasonsOf(stopped).count("max_tokens"));
    // The method changed what the model generates (the base model's rows differ).
    auto base = tb::Model::createRandom(config, {"fp32", "cpu"}, 23);
    o.stopTokenIds.clear();
    auto plain = base->generateBatch(prompts, o);
    int differ = 0;
    for (size_t i = 0; i < prompts.size(); ++i)
        differ += plain[i].tokens != free[i].tokens;
    QVERIFY(differ > 0);
}

void TestGenerateBatch::sampledRowsMatchSingle()
{
    auto model = tb::Model::load(kBundled, {"fp32", "cpu"});
    const auto prompts = randomPrompts({1, 9, 30, 4, 17}, model->config().vocabSize, 8);
    tb::GenerateOptions o;
    o.maxNewTokens = 40;
    o.temperature = 0.9;
    o.topK = 40;
    o.topP = 0.95;
    o.repetitionPenalty = 1.3;
    o.seed = 11;
    std::vector<tb::GenerateResult> sampled;
    EXPECT_ROWS_MATCH(sampled, *model, prompts, o, nullptr);
    // Greedy with a repetition penalty takes the row-by-row path too.
    tb::GenerateOptions greedy;
    greedy.greedy = true;
    greedy.maxNewTokens = 40;
    greedy.repetitionPenalty = 1.5;
    std::vector<tb::GenerateResult> penalised;
    EXPECT_ROWS_MATCH(penalised, *model, prompts, greedy, nullptr);
    int differ = 0;
    for (size_t i = 0; i < prompts.size(); ++i)
        differ += sampled[i].tokens != penalised[i].tokens;
    QVERIFY(differ > 0);  // sampling really sampled
}

void TestGenerateBatch::paddedLogitsMatchSingle_data()
{
    QTest::addColumn<int>("arch");
    QTest::addColumn<bool>("softPrompt");
    QTest::addColumn<bool>("wide");
    const int gpt2 = static_cast<int>(tb::Architecture::Gpt2);
    const int llama = static_cast<int>(tb::Architecture::Llama);
    QTest::newRow("gpt2") << gpt2 << false << false;
    QTest::newRow("llama") << llama << false << false;
    QTest::newRow("gpt2 soft prompt") << gpt2 << true << false;
    QTest::newRow("llama soft prompt") << llama << true << false;
    QTest::newRow("llama wide head") << llama << false << true;
    const int mistral = static_cast<int>(tb::Architecture::Mistral);
    QTest::newRow("mistral window") << mistral << false << false;
    QTest::newRow("mistral window soft prompt") << mistral << true << false;
    QTest::newRow("qwen2 window") << static_cast<int>(tb::Architecture::Qwen2) << false << false;
    const int gemma3 = static_cast<int>(tb::Architecture::Gemma3);
    QTest::newRow("gemma3") << gemma3 << false << false;
    QTest::newRow("gemma3 soft prompt") << gemma3 << true << false;
    QTest::newRow("smollm3") << static_cast<int>(tb::Architecture::SmolLM3) << false << false;
    QTest::newRow("phi3") << static_cast<int>(tb::Architecture::Phi3) << false << false;
}

void TestGenerateBatch::paddedLogitsMatchSingle()
{
    QFETCH(int, arch);
    QFETCH(bool, softPrompt);
    QFETCH(bool, wide);
    auto config = wide ? wideConfig(static_cast<tb::Architecture>(arch))
                       : smallConfig(static_cast<tb::Architecture>(arch));
    auto model = tb::Model::createRandom(config, {"fp32", "cpu"}, 29);
    tb::CausalLM& m = *model->impl().module;
    if (softPrompt)
        m.setPromptEmbeddings(torch::randn({5, config.hiddenSize}));
    torch::InferenceMode guard;
    const auto prompts = randomPrompts({3, 11, 1, 7}, config.vocabSize, 2);
    const int64_t width = 11;
    auto ids = torch::zeros({4, width}, torch::kInt64);
    auto real = torch::zeros({4, width}, torch::kBool);
    for (int64_t i = 0; i < 4; ++i) {
        const auto& p = prompts[size_t(i)];
        const int64_t pad = width - static_cast<int64_t>(p.size());
        ids[i]
            .narrow(0, pad, static_cast<int64_t>(p.size()))
            .copy_(torch::tensor(std::vector<int64_t>(p.begin(), p.end())));
        real[i].narrow(0, pad, static_cast<int64_t>(p.size())).fill_(true);
    }
    tb::KVCache batchCache;
    std::vector<tb::KVCache> caches(4);
    auto batchLogits = m.forwardLast(ids, &batchCache, real);  // [4, vocab]
    std::vector<torch::Tensor> single;
    for (size_t i = 0; i < 4; ++i) {
        auto one =
            torch::tensor(std::vector<int64_t>(prompts[i].begin(), prompts[i].end())).unsqueeze(0);
        single.push_back(m.forwardLast(one, &caches[i]).squeeze(0));
        const double d = maxAbsDiff(batchLogits[int64_t(i)], single[i]);
        QVERIFY2(d < 1e-5, qPrintable(QStringLiteral("row %1: %2").arg(i).arg(d)));
    }
    QVERIFY(maxAbsDiff(single[0], single[1]) > 1e-3);  // the rows really differ
    // Two decoding steps, then rows 2 and 0 alone (rows 1 and 3 left the batch).
    std::vector<int64_t> rowsKept{0, 1, 2, 3};
    for (int step = 0; step < 3; ++step) {
        if (step == 2) {
            rowsKept = {2, 0};
            batchCache.keepRows(torch::tensor(rowsKept, torch::kInt64));
        }
        std::vector<int64_t> next;
        for (int64_t i : rowsKept)
            next.push_back((step * 13 + i * 7) % config.vocabSize);
        batchLogits = m.forwardLast(torch::tensor(next).view({-1, 1}), &batchCache);
        for (size_t k = 0; k < rowsKept.size(); ++k) {
            auto one =
                m.forwardLast(torch::tensor({next[k]}).view({1, 1}), &caches[size_t(rowsKept[k])]);
            const double d = maxAbsDiff(batchLogits[int64_t(k)], one.squeeze(0));
            QVERIFY2(
                d < 1e-5,
                qPrintable(QStringLiteral("step %1 row %2: %3").arg(step).arg(rowsKept[k]).arg(d)));
        }
    }
    // (11 + 3 positions; without a soft prompt, the 8 before row 0's first token go.)
    QCOMPARE(batchCache.length, int64_t(softPrompt ? 5 + 11 + 3 : 11 + 3 - 8));
}

void TestGenerateBatch::cancelAndEdges()
{
    auto model = tb::Model::createRandom(smallConfig(tb::Architecture::Llama), {"fp32", "cpu"}, 31);
    const auto prompts = randomPrompts({4, 20, 9}, 101, 4);
    tb::GenerateOptions o;
    o.greedy = true;
    o.maxNewTokens = 30;
    auto full = model->generateBatch(prompts, o);
    // Cancelled after the 5th step: every row has 5 tokens, those of the full run.
    std::vector<size_t> seen;
    auto cut = model->generateBatch(prompts, o, nullptr, [&](size_t finished) {
        seen.push_back(finished);
        return seen.size() < 5;
    });
    QCOMPARE(seen, std::vector<size_t>(5, 0));
    for (size_t i = 0; i < prompts.size(); ++i) {
        QCOMPARE(cut[i].stopReason, std::string("cancelled"));
        QCOMPARE(cut[i].tokens,
                 std::vector<int32_t>(full[i].tokens.begin(), full[i].tokens.begin() + 5));
    }
    // The callback counts finished rows: row 0 stops at its first token, the others run on.
    o.stopTokenIds = {full[0].tokens[0]};
    std::vector<size_t> counts;
    auto stopped = model->generateBatch(prompts, o, nullptr, [&](size_t finished) {
        counts.push_back(finished);
        return true;
    });
    QCOMPARE(stopped[0].stopReason, std::string("eos"));
    QVERIFY(stopped[0].tokens.empty());
    QCOMPARE(counts.front(), size_t(1));
    QCOMPARE(counts.back(), prompts.size());
    QVERIFY(std::is_sorted(counts.begin(), counts.end()));
    // No budget: no tokens; no prompts: no results.
    o.maxNewTokens = 0;
    for (const auto& r : model->generateBatch(prompts, o)) {
        QVERIFY(r.tokens.empty());
        QCOMPARE(r.stopReason, std::string("max_tokens"));
    }
    QVERIFY(model->generateBatch({}, o).empty());
    // Bad requests name the prompt.
    QVERIFY(tbtest::contains(errorOf([&] {
                                 model->generateBatch({{1, 2}, {}}, o);
                             }),
                             "generateBatch: prompt 1: the prompt has no tokens"));
    QVERIFY(tbtest::contains(errorOf([&] {
                                 model->generateBatch({{1, 200}}, o);
                             }),
                             "200 is outside the vocabulary"));
    o.stopStrings = {"x"};
    QVERIFY(tbtest::contains(errorOf([&] { model->generateBatch({{1}}, o); }),
                             "stop strings need a tokenizer"));
}

QTEST_GUILESS_MAIN(TestGenerateBatch)
#include "test_generate_batch.moc"
