// PEFT methods at the module level: LoRA merged == unmerged, adapters and text-initialised prompts
// reproduce the base model, one step changes only the intended parameters, gradient checkpointing
// gives the same gradients, and trainable counts from config.json alone equal the modules' counts.
#include "model/causal_lm.h"
#include "model/registry.h"
#include "peft/defaults.h"
#include "peft/peft.h"
#include "peft/trainable_count.h"
#include "tokenizer/tokenizer.h"
#include "train/losses.h"
#include "train/optimizer.h"
#include "train/train_config.h"
#include "util/error.h"

#include <QtTest>

#include <algorithm>
#include <set>

namespace {

tb::ModelConfig tiny(tb::Architecture arch)
{
    tb::ModelConfig c;
    c.architecture = arch;
    c.modelType = tb::architectureName(arch);
    c.vocabSize = 61;
    c.hiddenSize = 32;
    c.intermediateSize = 48;
    c.numLayers = 3;
    c.numHeads = 4;
    c.numKvHeads = arch == tb::Architecture::Gpt2 ? 4 : 2;
    c.headDim = 8;
    c.maxPositions = 64;
    c.tieWordEmbeddings = arch != tb::Architecture::Llama;
    c.qkvBias = arch == tb::Architecture::Qwen2 || arch == tb::Architecture::Gpt2;
    c.oBias = c.mlpBias = arch == tb::Architecture::Gpt2;
    c.qkNorm = arch == tb::Architecture::Qwen3;
    if (arch == tb::Architecture::Gpt2)
        c.hiddenAct = "gelu_new";
    return c;
}

std::shared_ptr<tb::CausalLM> randomModel(const tb::ModelConfig& c, uint64_t seed = 3)
{
    auto m = tb::createCausalLM(c);
    m->initRandom(seed, torch::kFloat32, torch::kCPU);
    m->eval();
    return m;
}

tb::TrainConfig run(tb::Method method)
{
    tb::TrainConfig r;
    r.method = method;
    r.lora.rank = 4;
    r.lora.alpha = 8;
    r.lora.targets = {};
    r.adapter.size = 8;
    r.prompt.numTokens = 5;
    r.partial.trainableBlocks = 1;
    return r;
}

torch::Tensor ids()
{
    return torch::tensor({{1, 7, 3, 22, 9, 40, 5, 11}, {2, 8, 60, 1, 13, 17, 4, 30}},
                         torch::kInt64);
}

double relDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a - b).abs().max().item<double>() / std::max(1e-12, b.abs().max().item<double>());
}

// Gives every LoRA B a random value so merging has something to fold in.
void perturbLora(tb::CausalLM& m)
{
    torch::NoGradGuard g;
    for (auto& [name, layer] : m.linearLayers())
        if (layer->hasLora())
            layer->lora_B->weight.normal_(0, 0.1);
}

}  // namespace

class TestPeft : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void loraMergeEqualsUnmerged_data();
    void loraMergeEqualsUnmerged();
    void adaptersStartAsBase();
    void textPromptReproducesBaseOnText();
    void stepChangesOnlyTrainable_data();
    void stepChangesOnlyTrainable();
    void checkpointingSameGradients();
    void countsFromConfigMatchModules_data();
    void countsFromConfigMatchModules();
    void countsOfRealModels();
    void badTargets();
    void defaultLoraTargetsPerArchitecture();
    void displayedRolesMatchTraining();
};

void TestPeft::loraMergeEqualsUnmerged_data()
{
    QTest::addColumn<int>("arch");
    QTest::addColumn<QStringList>("targets");
    QTest::newRow("llama all") << int(tb::Architecture::Llama)
                               << QStringList{
                                      QStringLiteral("q_proj"),    QStringLiteral("k_proj"),
                                      QStringLiteral("v_proj"),    QStringLiteral("o_proj"),
                                      QStringLiteral("gate_proj"), QStringLiteral("up_proj"),
                                      QStringLiteral("down_proj"), QStringLiteral("lm_head")};
    QTest::newRow("qwen3 qv") << int(tb::Architecture::Qwen3) << QStringList{};
    QTest::newRow("gpt2 conv1d") << int(tb::Architecture::Gpt2)
                                 << QStringList{QStringLiteral("c_attn"), QStringLiteral("c_proj"),
                                                QStringLiteral("c_fc")};
}

void TestPeft::loraMergeEqualsUnmerged()
{
    QFETCH(int, arch);
    QFETCH(QStringList, targets);
    auto m = randomModel(tiny(static_cast<tb::Architecture>(arch)));
    auto r = run(tb::Method::Lora);
    for (const auto& t : targets)
        r.lora.targets.push_back(t.toStdString());
    torch::NoGradGuard g;
    auto base = m->forward(ids(), nullptr);
    tb::applyMethod(*m, r, nullptr, 1);
    QCOMPARE(relDiff(m->forward(ids(), nullptr), base),
             0.0);  // B = 0: LoRA starts as the base model
    perturbLora(*m);
    auto unmerged = m->forward(ids(), nullptr);
    QVERIFY(relDiff(unmerged, base) > 1e-3);  // the branch really contributes
    std::map<std::string, torch::Tensor> before;
    for (auto& item : m->named_parameters())
        before[item.key()] = item.value().clone();
    tb::mergeLora(*m);
    QVERIFY2(relDiff(m->forward(ids(), nullptr), unmerged) < 1e-5, "merged != unmerged");
    tb::unmergeLora(*m);
    QVERIFY(relDiff(m->forward(ids(), nullptr), unmerged) < 1e-5);
    for (auto& item : m->named_parameters())
        QVERIFY2(relDiff(item.value(), before[item.key()]) < 1e-6, item.key().c_str());
}

void TestPeft::adaptersStartAsBase()
{
    for (auto kind : {tb::AdapterKind::Houlsby, tb::AdapterKind::Pfeiffer})
        for (auto arch : {tb::Architecture::Llama, tb::Architecture::Gpt2}) {
            auto m = randomModel(tiny(arch));
            torch::NoGradGuard g;
            auto base = m->forward(ids(), nullptr);
            auto r = run(tb::Method::Adapter);
            r.adapter.kind = kind;
            tb::applyMethod(*m, r, nullptr, 1);
            QCOMPARE(relDiff(m->forward(ids(), nullptr), base), 0.0);
            QCOMPARE(tb::countTrainable(*m), tb::trainableParameterCount(m->config(), r));
        }
}

void TestPeft::textPromptReproducesBaseOnText()
{
    // A prompt initialised from a text's embeddings makes the model see that text: the logits of
    // the real tokens equal the base model's logits at the same positions after the text itself.
    auto tok = tb::loadTokenizer(TB_SOURCE_DIR "/datasets/models/stories260k");
    auto config = tb::loadModelConfig(TB_SOURCE_DIR "/datasets/models/stories260k");
    auto m = tb::createCausalLM(config);
    m->loadWeights(tb::Checkpoint::open(TB_SOURCE_DIR "/datasets/models/stories260k"),
                   torch::kFloat32, torch::kCPU);
    m->eval();
    const std::string text = "Once upon a time";
    auto textIds = tok->encode(text, false);
    auto r = run(tb::Method::Prompt);
    r.prompt.numTokens = static_cast<int>(textIds.size());
    r.prompt.initText = text;
    torch::NoGradGuard g;
    auto input =
        torch::tensor(std::vector<int64_t>{432, 383, 286, 261, 376}, torch::kInt64).unsqueeze(0);
    std::vector<int64_t> joined(textIds.begin(), textIds.end());
    joined.insert(joined.end(), {432, 383, 286, 261, 376});
    auto reference = m->forward(torch::tensor(joined, torch::kInt64).unsqueeze(0), nullptr)
                         .narrow(1, static_cast<int64_t>(textIds.size()), 5);
    tb::applyMethod(*m, r, tok.get(), 1);
    auto prompted = m->forward(input, nullptr);
    QCOMPARE(prompted.sizes(), reference.sizes());
    QVERIFY2(relDiff(prompted, reference) < 1e-5,
             qPrintable(QString::number(relDiff(prompted, reference))));
    // Generation with a KV cache sees the prompt on the first pass only.
    tb::KVCache cache;
    auto first = m->forward(input.narrow(1, 0, 4), &cache);
    auto next = m->forward(input.narrow(1, 4, 1), &cache);
    QVERIFY(relDiff(next, prompted.narrow(1, 4, 1)) < 1e-5);
}

void TestPeft::stepChangesOnlyTrainable_data()
{
    QTest::addColumn<int>("method");
    QTest::newRow("full") << int(tb::Method::Full);
    QTest::newRow("partial") << int(tb::Method::Partial);
    QTest::newRow("lora") << int(tb::Method::Lora);
    QTest::newRow("adapter") << int(tb::Method::Adapter);
    QTest::newRow("prompt") << int(tb::Method::Prompt);
}

void TestPeft::stepChangesOnlyTrainable()
{
    QFETCH(int, method);
    auto m = randomModel(tiny(tb::Architecture::Llama));
    auto r = run(static_cast<tb::Method>(method));
    r.partial.modules = {"norms"};
    tb::applyMethod(*m, r, nullptr, 1);
    m->train();
    std::map<std::string, torch::Tensor> before;
    for (auto& item : m->named_parameters())
        before[item.key()] = item.value().detach().clone();
    auto params = tb::trainableParameters(*m);
    QCOMPARE(tb::countTrainable(*m), tb::trainableParameterCount(m->config(), r));
    tb::Optimizer opt(params, std::vector<bool>(params.size(), true), r.optim);
    auto x = ids();
    auto labels = x.roll(-1, 1);
    tb::tokenLoss(m->forward(x, nullptr), labels, static_cast<double>(labels.numel())).backward();
    opt.step(1e-2);
    std::set<std::string> trainable;
    for (const auto& [name, p] : params)
        trainable.insert(name);
    for (auto& item : m->named_parameters()) {
        const bool changed = !torch::equal(item.value().detach(), before[item.key()]);
        // LoRA A does not move on the first step: its gradient is B^T(...) with B = 0.
        const bool loraA = item.key().find("lora_A") != std::string::npos;
        const bool adapterDown = item.key().find(".down.") != std::string::npos;
        if (trainable.count(item.key()) && !loraA && !adapterDown)
            QVERIFY2(changed, ("trainable but unchanged: " + item.key()).c_str());
        if (!trainable.count(item.key()))
            QVERIFY2(!changed, ("frozen but changed: " + item.key()).c_str());  // bit-identical
    }
}

void TestPeft::checkpointingSameGradients()
{
    for (auto method : {tb::Method::Full, tb::Method::Lora}) {
        auto gradients = [&](bool checkpointing) {
            auto m = randomModel(tiny(tb::Architecture::Llama), 9);
            auto r = run(method);
            r.lora.dropout = 0.2;  // the recomputation must replay the same dropout mask
            tb::applyMethod(*m, r, nullptr, 1);
            perturbLora(*m);
            m->train();
            m->setGradientCheckpointing(checkpointing);
            torch::manual_seed(77);
            auto x = ids();
            tb::tokenLoss(m->forward(x, nullptr), x.roll(-1, 1), 16.0).backward();
            std::map<std::string, torch::Tensor> g;
            for (const auto& [name, p] : tb::trainableParameters(*m))
                g[name] = p.grad().clone();
            return g;
        };
        auto plain = gradients(false);
        auto recomputed = gradients(true);
        QCOMPARE(plain.size(), recomputed.size());
        for (auto& [name, g] : plain) {
            QVERIFY2(recomputed[name].defined(), name.c_str());
            QVERIFY2((g - recomputed[name]).abs().max().item<double>() <=
                         1e-5 * std::max(1.0, g.abs().max().item<double>()),
                     name.c_str());
        }
    }
}

void TestPeft::countsFromConfigMatchModules_data()
{
    QTest::addColumn<int>("arch");
    QTest::addColumn<int>("method");
    for (auto arch : {tb::Architecture::Llama, tb::Architecture::Qwen2, tb::Architecture::Qwen3,
                      tb::Architecture::Gpt2})
        for (auto method : {tb::Method::Full, tb::Method::Partial, tb::Method::Lora,
                            tb::Method::Adapter, tb::Method::Prompt})
            QTest::addRow("%s/%s", tb::architectureName(arch), tb::methodName(method))
                << int(arch) << int(method);
}

void TestPeft::countsFromConfigMatchModules()
{
    QFETCH(int, arch);
    QFETCH(int, method);
    auto m = randomModel(tiny(static_cast<tb::Architecture>(arch)));
    auto r = run(static_cast<tb::Method>(method));
    r.partial.modules = {"norms", "embeddings"};
    if (arch == int(tb::Architecture::Gpt2))
        r.lora.targets = {"c_attn", "c_proj"};
    else
        r.lora.targets = {"q_proj", "k_proj", "down_proj"};
    tb::applyMethod(*m, r, nullptr, 1);
    QCOMPARE(tb::countTrainable(*m), tb::trainableParameterCount(m->config(), r));
}

void TestPeft::countsOfRealModels()
{
    // PEFT's print_trainable_parameters for Llama-2-7B with LoRA r=8 on q_proj, v_proj: 4,194,304.
    auto llama2 =
        tb::parseModelConfig(R"({"model_type":"llama","vocab_size":32000,"hidden_size":4096,
        "intermediate_size":11008,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32})",
                             "llama-2-7b");
    tb::TrainConfig r;
    r.method = tb::Method::Lora;
    QCOMPARE(tb::trainableParameterCount(llama2, r), int64_t(4194304));
    r.method = tb::Method::Full;
    QCOMPARE(tb::trainableParameterCount(llama2, r), int64_t(6738415616));
    auto gpt2 = tb::loadModelConfig(TB_SOURCE_DIR "/tests/data/configs/gpt2.json");
    r.method = tb::Method::Lora;  // default target c_attn: 12 x 8 x (768 + 2304) ...
    QCOMPARE(tb::trainableParameterCount(gpt2, r), int64_t(294912 + 768));  // + the EOS row, tied
    r.trainableTokens = {false, {}};
    QCOMPARE(tb::trainableParameterCount(gpt2, r), int64_t(294912));
}

// The table of PEFT's defaults (checked against peft itself by test_peft_counts): every default
// names layers of its architecture, and a run that names no targets gets exactly them.
void TestPeft::defaultLoraTargetsPerArchitecture()
{
    using A = tb::Architecture;
    const std::vector<std::string> qv = {"q_proj", "v_proj"};
    const std::pair<A, std::vector<std::string>> table[] = {
        {A::Llama, qv}, {A::Mistral, qv}, {A::Qwen2, qv}, {A::Qwen3, qv}, {A::Gpt2, {"c_attn"}}};
    for (const auto& [arch, want] : table) {
        const char* name = tb::architectureName(arch);
        QVERIFY2(tb::defaultLoraTargets(arch) == want, name);
        const tb::ModelConfig c = tiny(arch);
        const auto names = tb::loraTargetNames(c);
        for (const auto& t : want)
            QVERIFY2(std::find(names.begin(), names.end(), t) != names.end(), name);
        auto r = run(tb::Method::Lora);
        QVERIFY(tb::resolvedLoraTargets(c, r.lora) == want);
        auto m = randomModel(c);
        tb::applyMethod(*m, r, nullptr, 1);
        r.lora.targets = want;
        QCOMPARE(tb::countTrainable(*m), tb::trainableParameterCount(c, r));
    }
}

void TestPeft::badTargets()
{
    auto m = randomModel(tiny(tb::Architecture::Llama));
    auto r = run(tb::Method::Lora);
    r.lora.targets = {"q_proj", "attn_out"};
    try {
        tb::applyMethod(*m, r, nullptr, 1);
        QFAIL("unknown target accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("'attn_out'") != std::string::npos);
        QVERIFY(std::string(e.what()).find("q_proj, k_proj") != std::string::npos);
    }
}

// The studio's Model page marks tensors by name (tensorTrainingRole, torch-free); after applyMethod
// the model's own requires_grad flags must say the same for every checkpoint tensor.
void TestPeft::displayedRolesMatchTraining()
{
    for (tb::Architecture arch :
         {tb::Architecture::Llama, tb::Architecture::Gpt2, tb::Architecture::Qwen3}) {
        const tb::ModelConfig c = tiny(arch);
        std::vector<tb::TrainConfig> runs;
        runs.push_back(run(tb::Method::Full));
        tb::TrainConfig partial = run(tb::Method::Partial);
        partial.partial.modules = {"norms"};
        runs.push_back(partial);
        partial.partial.trainableBlocks = 0;
        partial.partial.modules = {"embeddings"};
        runs.push_back(partial);
        partial.partial.trainableBlocks = 2;
        partial.partial.modules = {"lm_head"};
        runs.push_back(partial);
        runs.push_back(run(tb::Method::Lora));
        tb::TrainConfig lora = run(tb::Method::Lora);
        lora.lora.targets =
            arch == tb::Architecture::Gpt2
                ? std::vector<std::string>{"c_attn", "c_proj", "c_fc"}
                : std::vector<std::string>{"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                           "gate_proj", "up_proj", "down_proj"};
        runs.push_back(lora);
        runs.push_back(run(tb::Method::Adapter));
        runs.push_back(run(tb::Method::Prompt));
        for (const tb::TrainConfig& r : runs) {
            auto m = randomModel(c);
            tb::applyMethod(*m, r, nullptr, 1);
            std::set<std::string> trainable;
            for (const auto& [name, t] : tb::trainableParameters(*m))
                trainable.insert(name);
            int checked = 0;
            for (const auto& item : m->named_parameters()) {
                const std::string& name = item.key();
                if (name.find("lora_") != std::string::npos ||
                    name.find("adapter") != std::string::npos ||
                    name.find("prompt") != std::string::npos)
                    continue;  // added by the method, not in the checkpoint
                std::string expected = trainable.count(name) ? "trains" : "frozen";
                const std::string module = name.size() > 7 ? name.substr(0, name.size() - 7) : name;
                if (trainable.count(module + ".lora_A.weight"))
                    expected = "LoRA";
                const std::string role = tb::tensorTrainingRole(c, r, name);
                QVERIFY2(role == expected,
                         (std::string(tb::architectureName(arch)) + " " + tb::methodName(r.method) +
                          " " + name + ": shown " + role + ", trains as " + expected)
                             .c_str());
                ++checked;
            }
            QVERIFY(checked > 10);
        }
    }
}

QTEST_GUILESS_MAIN(TestPeft)
#include "test_peft.moc"
