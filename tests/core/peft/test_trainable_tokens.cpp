// Trainable token rows (PEFT's trainable tokens): the model with its deltas equals a plain model
// whose rows were replaced (tied: one row set; untied: the embedding's and the head's), gradients
// reach only the deltas, the KV cache, the chunked loss and merging see the rows, and the rows a
// config names resolve as documented.
#include "model/causal_lm.h"
#include "model/registry.h"
#include "peft/peft.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "tokenizer/tokenizer.h"
#include "train/losses.h"
#include "train/optimizer.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"

#include <QtTest>

#include "test_util.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

const std::string kStories = TB_SOURCE_DIR "/datasets/models/stories260k";
const std::vector<int64_t> kRows{5, 9};  // the EOS ids of the tiny configs

tb::ModelConfig tiny(bool tied, tb::Architecture arch = tb::Architecture::Llama)
{
    tb::ModelConfig c;
    c.architecture = arch;
    c.modelType = tb::architectureName(arch);
    c.vocabSize = 61;
    c.hiddenSize = 32;
    c.intermediateSize = 48;
    c.numLayers = 2;
    c.numHeads = 4;
    c.numKvHeads = arch == tb::Architecture::Gpt2 ? 4 : 2;
    c.headDim = 8;
    c.maxPositions = 64;
    c.tieWordEmbeddings = tied;
    c.qkvBias = c.oBias = c.mlpBias = arch == tb::Architecture::Gpt2;
    if (arch == tb::Architecture::Gpt2)
        c.hiddenAct = "gelu_new";
    c.eosTokenIds = kRows;
    return c;
}

tb::TrainConfig lora()
{
    tb::TrainConfig r;
    r.method = tb::Method::Lora;
    r.lora.rank = 4;
    r.lora.alpha = 8;
    return r;
}

std::shared_ptr<tb::CausalLM> model(const tb::ModelConfig& c, const tb::TrainConfig& r)
{
    auto m = tb::createCausalLM(c);
    m->initRandom(3, torch::kFloat32, torch::kCPU);
    tb::applyMethod(*m, r, nullptr, 1);
    m->eval();
    return m;
}

// Token ids with both rows as inputs (the embedding's rows count) and everything else.
torch::Tensor ids()
{
    return torch::tensor({{1, 5, 3, 22, 9, 40, 5, 11}, {2, 8, 60, 1, 13, 9, 4, 30}}, torch::kInt64);
}

// The indices of a 1-D bool tensor's true entries.
std::vector<int64_t> trueAt(const torch::Tensor& mask)
{
    const auto at = mask.nonzero().squeeze(1).contiguous();
    return {at.data_ptr<int64_t>(), at.data_ptr<int64_t>() + at.numel()};
}

double maxDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a - b).abs().max().item<double>();
}

void randomDeltas(tb::CausalLM& m)
{
    torch::NoGradGuard g;
    m.tokenDelta().normal_(0, 0.5);
    if (!m.config().tieWordEmbeddings)
        m.headTokenDelta().normal_(0, 0.5);
}

// A plain copy of m (no method) whose rows are replaced as PEFT's TrainableTokensLayer does: row
// ids[j] = base row + delta[j] (values, not an update), in the embedding and the head.
std::shared_ptr<tb::CausalLM> replacedRows(tb::CausalLM& m)
{
    auto ref = tb::createCausalLM(m.config());
    torch::NoGradGuard g;
    auto theirs = ref->named_parameters();
    for (const auto& item : m.named_parameters())
        if (theirs.contains(item.key()))
            theirs[item.key()].copy_(item.value());
    const auto rowIds = m.trainableTokenIds();
    auto embedding = ref->tokenEmbeddingWeight();
    embedding.index_copy_(0, rowIds, embedding.index_select(0, rowIds) + m.tokenDelta());
    if (!m.config().tieWordEmbeddings) {
        auto head = theirs["lm_head.weight"];
        head.index_copy_(0, rowIds, head.index_select(0, rowIds) + m.headTokenDelta());
    }
    return ref;
}

}  // namespace

class TestTrainableTokens : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rowsAreReplacedRows_data();
    void rowsAreReplacedRows();
    void stepMovesOnlyTheRows_data();
    void stepMovesOnlyTheRows();
    void cacheChunkedLossAndMergeSeeTheRows();
    void whichTokens();
    void stopTokensOfChatVocabularies();
    void badTokensNameTheKey();
    void countsMatchModules();
};

void TestTrainableTokens::rowsAreReplacedRows_data()
{
    QTest::addColumn<bool>("tied");
    QTest::addColumn<int>("arch");
    QTest::newRow("llama tied") << true << int(tb::Architecture::Llama);
    QTest::newRow("llama untied") << false << int(tb::Architecture::Llama);
    QTest::newRow("gpt2 tied") << true << int(tb::Architecture::Gpt2);
}

// PEFT's semantics: forward and gradients equal a plain model with the rows replaced, whose
// weights' gradients in those rows are the deltas' gradients (tied: the embedding's and the head's
// summed into one delta, as PEFT's tied adapter shares one).
void TestTrainableTokens::rowsAreReplacedRows()
{
    QFETCH(bool, tied);
    QFETCH(int, arch);
    const auto c = tiny(tied, static_cast<tb::Architecture>(arch));
    auto m = model(c, lora());
    QCOMPARE(m->trainableTokenIds().sizes().vec(), std::vector<int64_t>{2});
    QCOMPARE(m->config().tieWordEmbeddings, tied);
    QCOMPARE(m->headTokenDelta().is_same(m->tokenDelta()), tied);
    {
        torch::NoGradGuard g;  // zero deltas: the model starts as the base
        auto base = tb::createCausalLM(c);
        base->initRandom(3, torch::kFloat32, torch::kCPU);
        QCOMPARE(maxDiff(m->forward(ids(), nullptr), base->forward(ids(), nullptr)), 0.0);
    }
    randomDeltas(*m);
    auto ref = replacedRows(*m);
    for (auto& p : ref->parameters())
        p.set_requires_grad(true);
    auto x = ids();
    auto labels = x.roll(-1, 1);
    auto ours = m->forward(x, nullptr);
    auto theirs = ref->forward(x, nullptr);
    QVERIFY2(maxDiff(ours, theirs) < 1e-5, qPrintable(QString::number(maxDiff(ours, theirs))));
    tb::tokenLoss(ours, labels, 16.0).backward();
    tb::tokenLoss(theirs, labels, 16.0).backward();
    const auto rowIds = m->trainableTokenIds();
    auto rowsOf = [&](const torch::Tensor& grad) { return grad.index_select(0, rowIds); };
    const auto refEmbedding = rowsOf(ref->tokenEmbeddingWeight().grad());
    if (tied) {
        QVERIFY(maxDiff(m->tokenDelta().grad(), refEmbedding) < 1e-5);
    } else {
        QVERIFY(maxDiff(m->tokenDelta().grad(), refEmbedding) < 1e-5);
        QVERIFY(maxDiff(m->headTokenDelta().grad(),
                        rowsOf(ref->named_parameters()["lm_head.weight"].grad())) < 1e-5);
    }
    QVERIFY(m->tokenDelta().grad().abs().max().item<double>() > 1e-4);
    // The frozen embedding (and head) get no gradient at all.
    QVERIFY(!m->tokenEmbeddingWeight().grad().defined());
}

void TestTrainableTokens::stepMovesOnlyTheRows_data()
{
    QTest::addColumn<int>("method");
    QTest::addColumn<bool>("tied");
    for (bool tied : {true, false})
        for (auto method : {tb::Method::Lora, tb::Method::Adapter, tb::Method::Prompt})
            QTest::addRow("%s/%s", tb::methodName(method), tied ? "tied" : "untied")
                << int(method) << tied;
}

// One optimizer step: the effective embedding and head (weights + scattered deltas) change in the
// k rows only, and the base weights stay bit-identical.
void TestTrainableTokens::stepMovesOnlyTheRows()
{
    QFETCH(int, method);
    QFETCH(bool, tied);
    auto r = lora();
    r.method = static_cast<tb::Method>(method);
    r.adapter.size = 8;
    r.prompt.numTokens = 3;
    auto m = model(tiny(tied), r);
    m->train();
    std::map<std::string, torch::Tensor> before;
    for (auto& item : m->named_parameters())
        before[item.key()] = item.value().detach().clone();
    auto params = tb::trainableParameters(*m);
    tb::Optimizer opt(params, std::vector<bool>(params.size(), true), r.optim);
    auto x = ids();
    tb::tokenLoss(m->forward(x, nullptr), x.roll(-1, 1), 16.0).backward();
    opt.step(1e-2);
    auto effective = [&](const torch::Tensor& w, const torch::Tensor& delta) {
        return w.detach().index_add(0, m->trainableTokenIds(), delta.detach());
    };
    const auto embedding = m->tokenEmbeddingWeight();
    QVERIFY(torch::equal(embedding, before.at("model.embed_tokens.weight")));
    const auto changed = (effective(embedding, m->tokenDelta()) - embedding).abs().sum(1).ne(0);
    QCOMPARE(trueAt(changed), kRows);
    if (!tied) {
        const auto head = m->named_parameters()["lm_head.weight"];
        QVERIFY(torch::equal(head, before.at("lm_head.weight")));
        const auto moved = (effective(head, m->headTokenDelta()) - head).abs().sum(1).ne(0);
        QCOMPARE(trueAt(moved), kRows);
    }
    for (auto& item : m->named_parameters())
        if (!item.value().requires_grad())
            QVERIFY2(torch::equal(item.value(), before[item.key()]), item.key().c_str());
}

// Generation's cached decoding, the chunked loss and merging all see the trained rows.
void TestTrainableTokens::cacheChunkedLossAndMergeSeeTheRows()
{
    for (bool tied : {true, false}) {
        auto m = model(tiny(tied), lora());
        randomDeltas(*m);
        auto x = ids();
        torch::Tensor full;
        {
            torch::NoGradGuard g;
            full = m->forward(x, nullptr);
            tb::KVCache cache;
            m->forward(x.narrow(1, 0, 5), &cache);
            auto last = m->forwardLast(x.narrow(1, 5, 3), &cache);
            QVERIFY(maxDiff(last, full.select(1, 7)) < 1e-5);
        }
        // Chunked vs full loss: value and the deltas' gradients.
        tb::TrainConfig c = lora();
        auto labels = x.roll(-1, 1);
        labels.index_put_({0, 0}, -100);
        auto gradsOf = [&](tb::LossKind kind) {
            m->zero_grad();
            c.loss = kind;
            c.lossChunkTokens = 5;
            auto loss = tb::batchLoss(*m, x, labels, 15.0, c);
            loss.backward();
            return std::vector<torch::Tensor>{loss.detach(), m->tokenDelta().grad().clone(),
                                              m->headTokenDelta().grad().clone()};
        };
        const auto a = gradsOf(tb::LossKind::Full);
        const auto b = gradsOf(tb::LossKind::Chunked);
        for (size_t i = 0; i < a.size(); ++i)
            QVERIFY2(maxDiff(a[i], b[i]) <= 1e-5 * std::max(1.0, a[i].abs().max().item<double>()),
                     qPrintable(QString::number(i)));
        // Merged into the weights (one row set when tied): the same logits, and a plain model.
        torch::NoGradGuard g;
        m->mergeTrainableTokens();
        QVERIFY(!m->trainableTokenIds().defined());
        QVERIFY(maxDiff(m->forward(x, nullptr), full) < 1e-5);
    }
}

void TestTrainableTokens::whichTokens()
{
    // stories260k: its tokenizer's EOS, config.json's and generation_config.json's are all </s>.
    const auto stories = tb::loadModelConfig(kStories);
    const auto tokenizer = tb::loadTokenizer(kStories);
    QCOMPARE(tb::stopTokenIds(stories, tokenizer.get(), kStories), std::vector<int64_t>{2});
    auto r = lora();
    QCOMPARE(tb::trainableTokenIds(stories, r), std::vector<int64_t>{2});
    QCOMPARE(tb::trainableTokenIds(stories, r, tokenizer.get()), std::vector<int64_t>{2});
    r.trainableTokens = {false, {{-1, "</s>"}, {2, ""}, {-1, "<s>"}}};  // texts and ids, distinct
    QCOMPARE(tb::trainableTokenIds(stories, r), (std::vector<int64_t>{1, 2}));
    r.trainableTokens = {false, {}};
    QVERIFY(tb::trainableTokenIds(stories, r).empty());
    // Methods that train the embedding or the head ignore it.
    r.trainableTokens = {};
    for (auto method : {tb::Method::Full, tb::Method::Partial}) {
        r.method = method;
        r.partial.modules = {"embeddings"};
        QVERIFY(tb::trainableTokenIds(stories, r).empty());
    }
    r.partial.modules = {"norms"};
    QCOMPARE(tb::trainableTokenIds(stories, r), std::vector<int64_t>{2});
    auto untied = tiny(false);
    r = lora();
    r.lora.targets = {"q_proj", "lm_head"};
    QVERIFY(tb::trainableTokenIds(untied, r).empty());  // LoRA adapts the head's rows itself
    r.lora.targets = {};
    QCOMPARE(tb::trainableTokenIds(untied, r), kRows);  // a config without a folder: its EOS ids
}

// <|im_end|> (ChatML) and <|eot_id|> (Llama 3) join the stop tokens when they are one token of the
// vocabulary: the GPT-2 tokenizer with an added <|im_end|>.
void TestTrainableTokens::stopTokensOfChatVocabularies()
{
    QTemporaryDir dir;
    const std::string gpt2 = TB_SOURCE_DIR "/tests/data/tokenizers/gpt2/";
    auto tokenizerJson = nlohmann::json::parse(tb::readFile(gpt2 + "tokenizer.json"));
    tokenizerJson["added_tokens"].push_back({{"id", 50257},
                                             {"content", "<|im_end|>"},
                                             {"single_word", false},
                                             {"lstrip", false},
                                             {"rstrip", false},
                                             {"normalized", false},
                                             {"special", true}});
    tbtest::writeText(dir, "tokenizer.json", tokenizerJson.dump());
    tbtest::writeText(dir, "tokenizer_config.json", tb::readFile(gpt2 + "tokenizer_config.json"));
    auto config =
        nlohmann::json::parse(tb::readFile(TB_SOURCE_DIR "/tests/data/configs/gpt2.json"));
    config["vocab_size"] = 50258;
    const std::string configFile = tbtest::writeText(dir, "config.json", config.dump());
    const auto c = tb::loadModelConfig(configFile);
    auto r = lora();
    QCOMPARE(tb::trainableTokenIds(c, r), (std::vector<int64_t>{50256, 50257}));
    QCOMPARE(tb::chatEndOfTurnTokens(), (std::vector<std::string>{"<|im_end|>", "<|eot_id|>"}));
    // A bare config file reads no tokenizer: its own EOS id only.
    const auto bare = tb::loadModelConfig(TB_SOURCE_DIR "/tests/data/configs/gpt2.json");
    QCOMPARE(tb::trainableTokenIds(bare, r), std::vector<int64_t>{50256});
}

void TestTrainableTokens::badTokensNameTheKey()
{
    const auto stories = tb::loadModelConfig(kStories);
    auto r = lora();
    r.trainableTokens = {false, {{-1, "<|im_end|>"}}};
    const std::string text = tbtest::errorOf([&] { tb::trainableTokenIds(stories, r); });
    QVERIFY2(tbtest::contains(text, "key 'trainable_tokens' has '<|im_end|>', which is not one "
                                    "token of the model's vocabulary"),
             text.c_str());
    QVERIFY2(tbtest::contains(text, "'</s>'"), text.c_str());
    r.trainableTokens = {false, {{512, ""}}};
    const std::string id = tbtest::errorOf([&] { tb::trainableTokenIds(stories, r); });
    QVERIFY2(tbtest::contains(id, "key 'trainable_tokens' has id 512, outside the model's "
                                  "vocabulary of 512 ids"),
             id.c_str());
    r.trainableTokens = {false, {{-1, "</s>"}}};
    const std::string none =
        tbtest::errorOf([&] { tb::trainableTokenIds(tiny(true), r, nullptr); });
    QVERIFY2(tbtest::contains(none, "no tokenizer"), none.c_str());
}

void TestTrainableTokens::countsMatchModules()
{
    for (bool tied : {true, false})
        for (auto method :
             {tb::Method::Lora, tb::Method::Adapter, tb::Method::Prompt, tb::Method::Partial}) {
            auto r = lora();
            r.method = method;
            r.adapter.size = 8;
            r.prompt.numTokens = 3;
            r.partial.modules = {"norms"};
            auto m = model(tiny(tied), r);
            const int64_t rows = 2 * 32 * (tied ? 1 : 2);
            QCOMPARE(tb::countTrainable(*m), tb::trainableParameterCount(m->config(), r));
            r.trainableTokens = {false, {}};
            QCOMPARE(tb::countTrainable(*m) - rows, tb::trainableParameterCount(m->config(), r));
        }
}

QTEST_GUILESS_MAIN(TestTrainableTokens)
#include "test_trainable_tokens.moc"
