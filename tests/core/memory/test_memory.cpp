// The memory planner against closed forms recomputed here: parameters, items, ZeRO, advice, CLI.
#include "cli/cli.h"
#include "memory/estimator.h"
#include "model/config.h"
#include "peft/trainable_count.h"
#include "train/train_config.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace {

const std::string kData = TB_SOURCE_DIR "/tests/data/configs/";

tb::ModelConfig load(const std::string& file)
{
    return tb::loadModelConfig(kData + file);
}

// A method alone: the closed forms below are the methods' own (trainableTokensItemised adds the
// rows).
tb::TrainConfig method(tb::Method m)
{
    tb::TrainConfig run;
    run.method = m;
    run.trainableTokens = {false, {}};
    return run;
}

// A tied multi-head Llama with exactly the given shape (parameters = v h + L (4h^2 + 3hi + 2h) +
// h).
tb::ModelConfig syntheticLlama(int64_t vocab, int64_t hidden, int64_t inter, int64_t layers,
                               int64_t heads)
{
    tb::ModelConfig c;
    c.architecture = tb::Architecture::Llama;
    c.modelType = "llama";
    c.sourcePath = "synthetic";
    c.vocabSize = vocab;
    c.hiddenSize = hidden;
    c.intermediateSize = inter;
    c.numLayers = layers;
    c.numHeads = c.numKvHeads = heads;
    c.headDim = hidden / heads;
    c.maxPositions = 4096;
    c.tieWordEmbeddings = true;
    return c;
}

tb::EstimateOptions cpu(int64_t batch = 2, int64_t seq = 128)
{
    tb::EstimateOptions o;
    o.batch = batch;
    o.seq = seq;
    o.cudaOverhead = false;
    return o;
}

struct CliResult {
    int status = 0;
    std::string out, err;
};

CliResult cli(std::vector<std::string> argv)
{
    std::ostringstream out, err;
    CliResult r;
    r.status = tb::runCli(argv, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
}

// Expects `f` to throw a tb::Error whose message contains every fragment.
template <typename F> void expectError(F f, const std::vector<std::string>& fragments)
{
    try {
        f();
    } catch (const tb::Error& e) {
        const std::string msg = e.what();
        for (const auto& fragment : fragments)
            QVERIFY2(msg.find(fragment) != std::string::npos, msg.c_str());
        return;
    }
    QFAIL("no tb::Error thrown");
}

// Independent closed forms for TinyLlama-shaped Llama blocks (docs/memory.md), bytes per token.
struct Dims {
    int64_t h, q, i, nh, v, layers;
};

Dims dims(const tb::ModelConfig& c)
{
    return {c.hiddenSize, c.numHeads * c.headDim, c.intermediateSize, c.numHeads, c.vocabSize,
            c.numLayers};
}

}  // namespace

class TestMemory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parameterCounts_data();
    void parameterCounts();
    void sixteenBytesPerParameter();
    void fullFp32ClosedForm();
    void bf16MixedClosedForm();
    void loraClosedForm();
    void pureBf16AndSgd();
    void peftMethods();
    void trainableTokensItemised();
    void zeroShares();
    void loraDropoutMask();
    void attentionMask();
    void rotaryTablesOnlyForRotatingLayers();
    void checkpointingLowersActivations();
    void accumulationKeepsActivations();
    void chunkedLossLowersLogits();
    void naiveAttentionAddsScores();
    void fitsAndAdvice();
    void inferenceComparison();
    void badInputs();
    void byteSizes();
    void cliJson();
    void cliTableAndErrors();
    void quantisedBaseClosedForm();
    void quantisedBaseVerdicts();
};

void TestMemory::parameterCounts_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<qint64>("expected");
    QTest::newRow("gpt2") << "gpt2.json" << qint64(124439808);
    QTest::newRow("tinyllama") << "tinyllama-1.1b.json" << qint64(1100048384);
    QTest::newRow("qwen2.5-0.5b") << "qwen2.5-0.5b.json" << qint64(494032768);
    QTest::newRow("llama-2-7b") << "" << qint64(6738415616);
}

void TestMemory::parameterCounts()
{
    QFETCH(QString, file);
    QFETCH(qint64, expected);
    tb::ModelConfig c;
    if (file.isEmpty())
        c = tb::parseModelConfig(
            R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
            "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "max_position_embeddings": 4096,
            "tie_word_embeddings": false})",
            "llama-2-7b/config.json");
    else
        c = load(file.toStdString());
    const auto e = tb::estimateMemory(c, method(tb::Method::Full), cpu());
    QCOMPARE(e.parameters, int64_t(expected));
    QCOMPARE(e.parametersBase, int64_t(expected));
    QCOMPARE(e.trainableParameters, int64_t(expected));
    // LoRA: the base plus exactly trainableParameterCount's adapters.
    const auto lora = tb::estimateMemory(c, method(tb::Method::Lora), cpu());
    const int64_t added = tb::trainableParameterCount(c, method(tb::Method::Lora));
    QCOMPARE(lora.trainableParameters, added);
    QCOMPARE(lora.parameters, int64_t(expected) + added);
}

void TestMemory::sixteenBytesPerParameter()
{
    // fp32 AdamW full fine-tuning: 4 (weights) + 4 (gradients) + 8 (two moments) bytes per
    // parameter.
    const auto fourB = syntheticLlama(79879, 2000, 8000, 60, 16);
    const auto onePointTwoB = syntheticLlama(259979, 1000, 30000, 10, 8);
    QCOMPARE(tb::parameterCount(fourB), int64_t(4000000000));
    QCOMPARE(tb::parameterCount(onePointTwoB), int64_t(1200000000));
    for (const auto& [c, bytes] :
         {std::pair{fourB, int64_t(64000000000)}, std::pair{onePointTwoB, int64_t(19200000000)}}) {
        const auto e = tb::estimateMemory(c, method(tb::Method::Full), cpu(1, 16));
        QCOMPARE(e.weights + e.gradients + e.optimizerStates + e.masterWeights, bytes);
        QCOMPARE(e.weights, bytes / 4);
        QCOMPARE(e.optimizerStates, bytes / 2);
    }
    auto o = cpu(1, 16);
    o.deviceMemory = int64_t(32000000000);
    QCOMPARE(tb::estimateMemory(fourB, method(tb::Method::Full), o).fits,
             std::optional<bool>(false));
    for (const char* file : {"gpt2.json", "qwen2.5-0.5b.json", "llama-3.1-8b.json"}) {
        const auto c = load(file);
        const auto e = tb::estimateMemory(c, method(tb::Method::Full), cpu());
        QCOMPARE(e.weights + e.gradients + e.optimizerStates, 16 * tb::parameterCount(c));
    }
}

// Generation with the same model, batch and sequence, beside the training estimate. TinyLlama: 22
// layers, 4 KV heads of 64, intermediate 5632, vocab 32000; batch 2 x seq 128.
void TestMemory::inferenceComparison()
{
    const auto c = load("tinyllama-1.1b.json");
    const auto full = tb::estimateMemory(c, method(tb::Method::Full), cpu(2, 128));
    // weights 1,100,048,384 x 4 = 4,400,193,536; KV cache 2 x 22 x 4 x 64 x 2 x 128 x 4 =
    // 11,534,336; MLP temporaries 3 x 2 x 128 x 5632 x 4 = 17,301,504; next-token logits 4 x 2 x
    // 32000 = 256,000.
    QCOMPARE(full.inference, int64_t(4429285376));
    QVERIFY(full.inferenceFormula.find("11,534,336") != std::string::npos);
    // The CLI shows it with --explain (the plain --json keeps the contract's five keys).
    const auto r = cli({"estimate", "--model", kData + "tinyllama-1.1b.json", "--method", "full",
                        "--batch", "2", "--seq", "128", "--explain", "--json"});
    QCOMPARE(r.status, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j.at("inference_bytes").get<int64_t>(), tb::estimateMemory(c, method(tb::Method::Full),
                                                                        [] {
                                                                            tb::EstimateOptions o;
                                                                            o.batch = 2;
                                                                            o.seq = 128;
                                                                            return o;
                                                                        }())
                                                         .inference);
    const auto table =
        cli({"estimate", "--model", kData + "tinyllama-1.1b.json", "--method", "full"});
    QVERIFY2(table.out.find("Training needs ") != std::string::npos, table.out.c_str());
    // Full fp32 AdamW training holds 16 B per parameter before any activation: over 4x inference.
    QVERIFY(full.total > 4 * full.inference);
    // 16-bit conventions serve the model in 2 B: 2,200,096,768 + 5,767,168 + 8,650,752 + 256,000.
    auto o = cpu(2, 128);
    o.precision = "bf16-mixed";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), o).inference, int64_t(2214770688));
    // The method does not change inference (a merged model), and LoRA training stays close to it in
    // weights: its total is far below full training's.
    tb::TrainConfig lora = method(tb::Method::Lora);
    lora.lora.rank = 8;
    lora.lora.targets = {"q_proj", "v_proj"};
    const auto l = tb::estimateMemory(c, lora, cpu(2, 128));
    QCOMPARE(l.inference, full.inference);
    QVERIFY(l.total < full.total / 3);
    // On CUDA, the same overhead rule: 512 MiB + 5 %.
    auto g = cpu(2, 128);
    g.cudaOverhead = true;
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), g).inference,
             int64_t(4429285376) + 512 * (int64_t(1) << 20) + int64_t(4429285376) / 20);
}

void TestMemory::fullFp32ClosedForm()
{
    const auto c = load("tinyllama-1.1b.json");
    const Dims d = dims(c);
    const int64_t params = 1100048384, b = 2, s = 128, n = b * s;
    const auto e = tb::estimateMemory(c, method(tb::Method::Full), cpu(b, s));
    QCOMPARE(e.weights, 4 * params);
    QCOMPARE(e.gradients, 4 * params);
    QCOMPARE(e.optimizerStates, 8 * params);
    QCOMPARE(e.masterWeights, int64_t(0));
    QCOMPARE(e.weightsFrozen, int64_t(0));
    // Saved per token and block: norm inputs 2(4h+4), normalised 2x4h, q/k/v input 4h, q,k,v 3x4q,
    // attention output 4q + logsumexp 4nh, MLP input 4h, gate/silu/up 3x4i (fp32 keeps LibTorch's
    // SwiGLU), down input 4i.
    const int64_t perToken = 2 * (4 * d.h + 4) + 8 * d.h + 4 * d.h + 12 * d.q + 4 * d.q + 4 * d.nh +
                             4 * d.h + 12 * d.i + 4 * d.i;
    QCOMPARE(e.activationsPerBlock, perToken * n);
    // Final norm input, normalised, int64 token ids (the embedding trains); the fused loss keeps
    // no head input.
    const int64_t head = (4 * d.h + 4 + 4 * d.h + 8) * n;
    QCOMPARE(e.activationsHead, head);
    const int64_t rotary = 2 * s * c.headDim * 4;  // cos and sin, shared by the blocks
    QCOMPARE(e.activations, d.layers * perToken * n + head + rotary);
    // The fused loss, one chunk of all 256 tokens, beside the hidden states' gradient: the fp32
    // logits (made softmax in place by the CPU's softmax-rows kernel), or with the head weight's
    // fp32 gradient being formed. Kept for backward: the two gradients.
    QCOMPARE(e.logits, 4 * n * d.h + std::max(4 * n * d.v, 4 * n * d.v + 4 * d.v * d.h));
    QCOMPARE(e.logitsSaved, 4 * n * d.h + 4 * d.v * d.h);
    QCOMPARE(e.overhead, int64_t(0));
    // AdamW's step temporaries: two copies of the largest tensor (the [vocab, hidden] embedding).
    QCOMPARE(e.stepWorkspace, 2 * 4 * d.v * d.h);
    const int64_t backward = e.activations + e.logits, step = e.gradients + e.stepWorkspace;
    QCOMPARE(e.total, e.weights + e.optimizerStates + std::max(backward, step));
    QCOMPARE(e.peakPhase, std::string(step > backward ? "optimizer step" : "backward"));
    // On CUDA: 512 MiB + 5% of the rest.
    auto o = cpu(b, s);
    o.cudaOverhead = true;
    const auto g = tb::estimateMemory(c, method(tb::Method::Full), o);
    QCOMPARE(g.overhead, 512 * (int64_t(1) << 20) + e.total / 20);
    QCOMPARE(g.total, e.total + g.overhead);
    // Items in the JSON order, each with a sentence and a formula.
    QCOMPARE(e.items.size(), size_t(7));
    const char* keys[] = {"weights",     "gradients", "optimizer_states", "master_weights",
                          "activations", "logits",    "overhead"};
    for (size_t k = 0; k < 7; ++k) {
        QCOMPARE(e.items[k].key, std::string(keys[k]));
        QVERIFY(!e.items[k].explanation.empty() && !e.items[k].formula.empty());
    }
    QCOMPARE(e.items[4].bytes, e.activations);
}

void TestMemory::bf16MixedClosedForm()
{
    const auto c = load("tinyllama-1.1b.json");
    const Dims d = dims(c);
    const int64_t params = 1100048384, b = 2, s = 128, n = b * s;
    auto o = cpu(b, s);
    o.precision = "bf16-mixed";
    const auto e = tb::estimateMemory(c, method(tb::Method::Full), o);
    // Tunebench's layout: fp32 weights (the master copy), fp32 gradients and moments.
    QCOMPARE(e.weights, 4 * params);
    QCOMPARE(e.gradients, 4 * params);
    QCOMPARE(e.optimizerStates, 8 * params);
    QCOMPARE(e.masterWeights, int64_t(0));
    // fp32 residual and norms; 16-bit matmul outputs. On the CPU q, k, v and gate, up are stacked
    // products (model/stacked_linears.h), each group over one 16-bit copy of its norm output. The
    // attention over these 128 queries runs in fp32 on the CPU (model/attention_width.h): fp32 q,
    // k, v and output, and o_proj keeps the output's bf16 rounding.
    const int64_t perToken = 2 * (4 * d.h + 4) + 8 * d.h + 2 * d.h + 3 * 4 * d.q + 4 * d.q +
                             4 * d.nh + 2 * d.q + 2 * d.h + 2 * 2 * d.i + 2 * d.i;
    QCOMPARE(e.activationsPerBlock, perToken * n);
    // Without the stacked products each matmul casts its own copy: 3 for q, k, v, 2 for gate, up.
    const int64_t ownCasts = (3 - 1) * 2 * d.h + (2 - 1) * 2 * d.h;
    // On CUDA, or from 192 queries, the attention is bf16: its q, k, v and output, the output
    // o_proj's input.
    const int64_t bf16Attention = 3 * 4 * d.q + 4 * d.q + 2 * d.q - (3 * 2 * d.q + 2 * d.q);
    auto gpu = o;
    gpu.cudaOverhead = true;
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), gpu).activationsPerBlock,
             (perToken + ownCasts - bf16Attention + 2 * d.i) *
                 n);  // and LibTorch's SwiGLU keeps silu's output
    auto long256 = cpu(1, 256);
    long256.precision = "bf16-mixed";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), long256).activationsPerBlock,
             (perToken - bf16Attention) * 256);
    // A decoding step's 64 rows or fewer keep LibTorch's SwiGLU on the CPU too (silu's output),
    // and each layer its own product.
    auto rows64 = cpu(1, 64);
    rows64.precision = "bf16-mixed";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), rows64).activationsPerBlock,
             (perToken + ownCasts + 2 * d.i) * 64);
    const int64_t kv = c.numKvHeads * c.headDim;
    const int64_t blockMatmul = d.h * d.q + 2 * d.h * kv + d.q * d.h + 3 * d.h * d.i;
    // The blocks' weight copies; the fused loss's copy of the head weight lives only while it
    // runs.
    const int64_t copies = 2 * d.layers * blockMatmul;
    QCOMPARE(e.activationsWeightCopies, copies);
    const int64_t head = (4 * d.h + 4 + 4 * d.h + 8) * n;
    const int64_t rotary = 2 * s * c.headDim * 4;
    QCOMPARE(e.activations, d.layers * perToken * n + head + rotary + copies);
    // The fused loss under autocast: the hidden states' fp32 gradient and the head weight's
    // 16-bit copy throughout; the 16-bit logits beside their fp32 copy, or the 16-bit softmax
    // gradient with the head gradient's 16-bit part and fp32 sum.
    QCOMPARE(e.logits,
             4 * n * d.h + 2 * d.v * d.h + std::max(6 * n * d.v, 2 * n * d.v + 6 * d.v * d.h));
    o.precision = "fp16-mixed";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), o).total, e.total);
}

void TestMemory::loraClosedForm()
{
    const auto c = load("tinyllama-1.1b.json");
    const Dims d = dims(c);
    const int64_t params = 1100048384, b = 2, s = 128, n = b * s, r = 8;
    const int64_t kv = c.numKvHeads * c.headDim;
    const auto e = tb::estimateMemory(c, method(tb::Method::Lora), cpu(b, s));
    const int64_t lora = d.layers * r * ((d.h + d.q) + (d.h + kv));  // q_proj and v_proj
    QCOMPARE(e.trainableParameters, lora);
    // Frozen weights count in weights only.
    QCOMPARE(e.weightsFrozen, 4 * params);
    QCOMPARE(e.weightsTrainable, 4 * lora);
    QCOMPARE(e.weights, 4 * (params + lora));
    QCOMPARE(e.gradients, 4 * lora);
    QCOMPARE(e.optimizerStates, 8 * lora);
    // Frozen linears keep no inputs, frozen norms no normalised input; LoRA's A keeps the attention
    // input and B keeps A's output; the MLP still keeps gate, silu and up for the input gradient.
    const int64_t perToken =
        2 * (4 * d.h + 4) + 4 * d.h + 2 * 4 * r + 12 * d.q + 4 * d.q + 4 * d.nh + 12 * d.i;
    QCOMPARE(e.activationsPerBlock, perToken * n);
    QCOMPARE(e.activationsHead, (4 * d.h + 4) * n);
    // The first block's input needs no gradient (frozen embeddings): its first norm keeps nothing.
    const int64_t rotary = 2 * s * c.headDim * 4;
    QCOMPARE(e.activations,
             d.layers * perToken * n - (4 * d.h + 4) * n + (4 * d.h + 4) * n + rotary);
    QCOMPARE(e.stepWorkspace, 2 * 4 * r * d.h);
    QVERIFY(e.activations < tb::estimateMemory(c, method(tb::Method::Full), cpu(b, s)).activations);
}

void TestMemory::pureBf16AndSgd()
{
    const auto c = load("qwen2.5-0.5b.json");
    const int64_t params = 494032768;
    auto o = cpu();
    o.precision = "bf16";
    auto e = tb::estimateMemory(c, method(tb::Method::Full), o);
    QCOMPARE(e.weights, 2 * params);
    QCOMPARE(e.gradients, 2 * params);
    QCOMPARE(e.optimizerStates, 4 * params);
    QCOMPARE(e.masterWeights, int64_t(0));
    o.precision = "fp32";
    o.optimizer = "sgd";
    e = tb::estimateMemory(c, method(tb::Method::Full), o);
    QCOMPARE(e.optimizerStates, int64_t(0));
    QCOMPARE(e.stepWorkspace, int64_t(0));
    o.optimizer = "sgd-momentum";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), o).optimizerStates, 4 * params);
}

void TestMemory::peftMethods()
{
    const auto c = load("gpt2.json");
    const int64_t params = 124439808, b = 1, s = 256;
    auto partial = method(tb::Method::Partial);
    partial.partial.trainableBlocks = 2;
    auto e = tb::estimateMemory(c, partial, cpu(b, s));
    QCOMPARE(e.trainableParameters, tb::trainableParameterCount(c, partial));
    QCOMPARE(e.parameters, params);  // partial adds nothing
    QCOMPARE(e.weights, 4 * params);
    QCOMPARE(e.blocksStoring, int64_t(2));  // frozen blocks before them record nothing

    auto adapter = method(tb::Method::Adapter);
    adapter.adapter.size = 64;
    e = tb::estimateMemory(c, adapter, cpu(b, s));
    QCOMPARE(e.trainableParameters, c.numLayers * 2 * (2 * 768 * 64 + 64 + 768));
    QCOMPARE(e.parameters, params + e.trainableParameters);
    QCOMPARE(e.blocksStoring, c.numLayers);

    // Prompt tuning: the virtual tokens run through every block and the head.
    auto prompt = method(tb::Method::Prompt);
    prompt.prompt.numTokens = 20;
    e = tb::estimateMemory(c, prompt, cpu(b, s));
    QCOMPARE(e.trainableParameters, int64_t(20 * 768));
    // The fused loss sees the real tokens only: their fp32 logits (one chunk) beside the hidden
    // states' gradient; the frozen tied head forms no gradient. On CUDA LibTorch's logsumexp adds
    // an fp32 temporary of 64 rows (the CPU's softmax-rows kernel needs none).
    QCOMPARE(e.logits, 4 * b * s * (c.vocabSize + 768));
    QCOMPARE(tb::estimateMemory(c, prompt, cpu(2, s)).logits, 4 * 2 * s * (c.vocabSize + 768));
    auto onCuda = cpu(b, s);
    onCuda.cudaOverhead = true;
    QCOMPARE(tb::estimateMemory(c, prompt, onCuda).logits,
             4 * b * s * (c.vocabSize + 768) + 4 * 64 * c.vocabSize);
    // A pair objective keeps the full loss: the forward side holds the logits of all 276 tokens,
    // the real ones' fp32 copy and the log-softmax, for 2 x 2 sequences.
    auto pairs = cpu(2, s);
    pairs.objective = "simpo";
    QCOMPARE(tb::estimateMemory(c, prompt, pairs).logits, (4 * (s + 20) + 8 * s) * 4 * c.vocabSize);
    const int64_t h = 768, i = 3072, nh = 12;
    // GPT-2, all frozen: layernorm inputs 2(4h+8), c_attn output 3x4h, attention output 4h + 4nh,
    // gelu input 4i.
    const int64_t perToken = 2 * (4 * h + 8) + 12 * h + 4 * h + 4 * nh + 4 * i;
    QCOMPARE(e.activationsPerBlock, perToken * b * (s + 20));
}

// Trainable token rows (the EOS ids of config.json): rows x hidden parameters (x 2 untied) in the
// weights, gradients and states; the embeddings' output then needs a gradient (every block records
// from the first), and the head keeps the rows' int64 slots (the fused loss keeps no input).
void TestMemory::trainableTokensItemised()
{
    for (const char* file : {"tinyllama-1.1b.json", "gpt2.json", "llama-3.1-8b.json"}) {
        const auto c = load(file);
        auto with = method(tb::Method::Lora);
        with.trainableTokens = {};  // auto: config.json's eos_token_id(s)
        const auto o = cpu(2, 64);
        const auto a = tb::estimateMemory(c, method(tb::Method::Lora), o);
        const auto e = tb::estimateMemory(c, with, o);
        const int64_t rows = static_cast<int64_t>(c.eosTokenIds.size());
        QVERIFY(rows >= 1);
        QCOMPARE(e.trainableTokens, rows);
        const int64_t added = rows * c.hiddenSize * (c.tieWordEmbeddings ? 1 : 2);
        QCOMPARE(e.trainableTokenParameters, added);
        QCOMPARE(e.trainableParameters, a.trainableParameters + added);
        QCOMPARE(e.parameters, a.parameters + added);
        QCOMPARE(e.gradients, a.gradients + 4 * added);
        QCOMPARE(e.optimizerStates, a.optimizerStates + 8 * added);
        QCOMPARE(e.activationsHead, a.activationsHead + 8 * 2 * 64);
        QVERIFY(e.activations > a.activations);
        QVERIFY2(e.items[0].explanation.find("trainable token row") != std::string::npos,
                 e.items[0].explanation.c_str());
        QVERIFY2(e.items[0].formula.find("token rows") != std::string::npos,
                 e.items[0].formula.c_str());
    }
    // Full training ignores them.
    auto full = method(tb::Method::Full);
    full.trainableTokens = {};
    QCOMPARE(tb::estimateMemory(load("gpt2.json"), full, cpu()).trainableTokens, int64_t(0));
}

// LoRA dropout keeps each branch's dropped input and the mask: x's dtype on the CPU (measured in
// test_measure), 1 byte where CUDA's fused dropout keeps a bool mask.
void TestMemory::loraDropoutMask()
{
    const auto c = load("qwen2.5-0.5b.json");
    auto run = method(tb::Method::Lora);
    auto activations = [&](double dropout, bool cuda) {
        run.lora.dropout = dropout;
        auto o = cpu();
        o.cudaOverhead = cuda;
        return tb::estimateMemory(c, run, o).activations;
    };
    const int64_t onCpu = activations(0.1, false) - activations(0.0, false);
    const int64_t onCuda = activations(0.1, true) - activations(0.0, true);
    QVERIFY2(onCuda > 0 && onCuda < onCpu,
             qPrintable(QStringLiteral("%1 vs %2").arg(onCuda).arg(onCpu)));
    QCOMPARE((onCpu - onCuda) % 3, int64_t(0));  // 4-byte masks against 1-byte ones
}

void TestMemory::attentionMask()
{
    // One additive mask per forward, kept once: packed rows' [batch, seq, seq], a sliding window's
    // [seq, seq] where it is shorter than the sequence, in the compute dtype (fp32 where CPU bf16
    // attention runs widened, under 192 queries).
    auto c = load("tinyllama-1.1b.json");
    const auto run = method(tb::Method::Full);
    auto activations = [&](const tb::ModelConfig& model, tb::EstimateOptions o) {
        return tb::estimateMemory(model, run, o).activations;
    };
    auto packed = cpu(4, 256);
    packed.packing = true;
    QCOMPARE(activations(c, packed) - activations(c, cpu(4, 256)), int64_t(4 * 256 * 256 * 4));
    packed.precision = "bf16-mixed";
    auto bf16 = cpu(4, 256);
    bf16.precision = "bf16-mixed";
    QCOMPARE(activations(c, packed) - activations(c, bf16), int64_t(4 * 256 * 256 * 2));
    packed.seq = bf16.seq = 128;  // widened to fp32
    QCOMPARE(activations(c, packed) - activations(c, bf16), int64_t(4 * 128 * 128 * 4));
    packed.gradientCheckpointing = bf16.gradientCheckpointing = true;
    QCOMPARE(activations(c, packed) - activations(c, bf16), int64_t(4 * 128 * 128 * 4));
    auto windowed = c;
    windowed.slidingWindow = 256;
    QCOMPARE(activations(windowed, cpu(4, 256)), activations(c, cpu(4, 256)));  // within it
    QCOMPARE(activations(windowed, cpu(4, 512)) - activations(c, cpu(4, 512)),
             int64_t(512 * 512 * 4));
    // Packed rows through a window: one mask on every layer; with some layers outside the window,
    // the packed mask beside its band.
    auto packed512 = cpu(4, 512);
    packed512.packing = true;
    QCOMPARE(activations(windowed, packed512) - activations(c, cpu(4, 512)),
             int64_t(4 * 512 * 512 * 4));
    windowed.slidingLayers.assign(size_t(windowed.numLayers), true);
    windowed.slidingLayers[0] = false;
    QCOMPARE(activations(windowed, packed512) - activations(c, cpu(4, 512)),
             int64_t(2 * 4 * 512 * 512 * 4));
    // The CLI's --packing.
    auto total = [](const std::vector<std::string>& more) {
        std::vector<std::string> argv{"estimate", "--model", kData + "tinyllama-1.1b.json",
                                      "--method", "full",    "--batch",
                                      "4",        "--seq",   "256",
                                      "--json"};
        argv.insert(argv.end(), more.begin(), more.end());
        const auto r = cli(argv);
        if (r.status != 0)
            qFatal("%s", r.err.c_str());
        return nlohmann::json::parse(r.out).at("bytes").at("activations").get<int64_t>();
    };
    QCOMPARE(total({"--packing"}) - total({}), int64_t(4 * 256 * 256 * 4));
}

// The rotary cos/sin tables (2 x seq x head_dim, fp32 here) are kept once, by the rotary
// multiplications of the layers that need a gradient through q or k: SmolLM3's NoPE layers keep
// none. Partial training of the last block: only that block records, so whether it rotates decides.
void TestMemory::rotaryTablesOnlyForRotatingLayers()
{
    const auto c = load("tinyllama-1.1b.json");
    auto run = method(tb::Method::Partial);
    run.partial.trainableBlocks = 1;
    const int64_t tables = 2 * 128 * c.headDim * 4;
    auto activations = [&](const tb::ModelConfig& model) {
        return tb::estimateMemory(model, run, cpu(2, 128)).activations;
    };
    auto nope = c;
    nope.architecture = tb::Architecture::SmolLM3;
    nope.noRopeLayers.assign(size_t(c.numLayers), false);
    QCOMPARE(activations(nope), activations(c));  // every layer rotates: as Llama
    nope.noRopeLayers.back() = true;              // the trained block has no rotary embedding
    QCOMPARE(activations(c) - activations(nope), tables);
    nope.noRopeLayers.back() = false;
    nope.noRopeLayers.front() = true;  // a frozen block's: nothing of it is kept anyway
    QCOMPARE(activations(nope), activations(c));
    // LoRA on every block: the rotating blocks keep the tables.
    auto lora = method(tb::Method::Lora);
    nope.noRopeLayers.assign(size_t(c.numLayers), true);
    nope.noRopeLayers[3] = false;
    QCOMPARE(tb::estimateMemory(nope, lora, cpu(2, 128)).activations,
             tb::estimateMemory(c, lora, cpu(2, 128)).activations);
    nope.noRopeLayers[3] = true;
    QCOMPARE(tb::estimateMemory(c, lora, cpu(2, 128)).activations -
                 tb::estimateMemory(nope, lora, cpu(2, 128)).activations,
             tables);
}

void TestMemory::zeroShares()
{
    const auto c = load("qwen2.5-0.5b.json");
    auto o = cpu();
    const auto base = tb::estimateMemory(c, method(tb::Method::Full), o);
    o.gpus = 4;
    const int expected[4][3] = {
        {1, 1, 1}, {1, 1, 4}, {1, 4, 4}, {4, 4, 4}};  // weights, grads, states
    for (int z = 0; z <= 3; ++z) {
        o.zero = z;
        const auto e = tb::estimateMemory(c, method(tb::Method::Full), o);
        QCOMPARE(e.weights, base.weights / expected[z][0]);
        QCOMPARE(e.gradients, base.gradients / expected[z][1]);
        QCOMPARE(e.optimizerStates, base.optimizerStates / expected[z][2]);
        QCOMPARE(e.activations, base.activations);
        QCOMPARE(e.logits, base.logits);
        QVERIFY(z == 0 ? e.total == base.total : e.total < base.total);
    }
    // ZeRO-2 as training runs it (dist/grad_sync.h): whole gradients at the end of the last
    // backward, beside the shards, and held whole across accumulation (the shares applied only
    // after the step's reductions).
    const auto phase = [](const tb::MemoryEstimate& e, const std::string& name) {
        int64_t bytes = -1;
        for (const auto& p : e.phases)
            if (p.name == name)
                bytes = std::max(bytes, p.bytes);
        return bytes;
    };
    o.zero = 2;
    QCOMPARE(phase(tb::estimateMemory(c, method(tb::Method::Full), o), "end of backward"),
             base.gradients + base.gradients / 4);
    o.gradAccum = 4;
    const auto two = tb::estimateMemory(c, method(tb::Method::Full), o);
    o.zero = 1;
    QCOMPARE(phase(two, "backward"),
             phase(tb::estimateMemory(c, method(tb::Method::Full), o), "backward"));
}

void TestMemory::checkpointingLowersActivations()
{
    const auto c = load("tinyllama-1.1b.json");
    const Dims d = dims(c);
    auto o = cpu(4, 512);
    const auto off = tb::estimateMemory(c, method(tb::Method::Full), o);
    o.gradientCheckpointing = true;
    const auto on = tb::estimateMemory(c, method(tb::Method::Full), o);
    const int64_t n = 4 * 512;
    QVERIFY(on.activations < off.activations / 5);
    // Every block's input (fp32) plus one block recomputed at a time, plus the head.
    const int64_t rotary = 2 * 512 * c.headDim * 4;
    QCOMPARE(on.activations,
             d.layers * 4 * d.h * n + off.activationsPerBlock + off.activationsHead + rotary);
    QCOMPARE(on.activationsNoCheckpointing, off.activations);
    QCOMPARE(off.activationsCheckpointing, on.activations);
    QCOMPARE(on.weights + on.gradients + on.optimizerStates,
             off.weights + off.gradients + off.optimizerStates);
}

void TestMemory::accumulationKeepsActivations()
{
    const auto c = load("gpt2.json");
    auto o = cpu(4, 512);
    const auto one = tb::estimateMemory(c, method(tb::Method::Full), o);
    o.gradAccum = 8;
    const auto eight = tb::estimateMemory(c, method(tb::Method::Full), o);
    QCOMPARE(eight.activations, one.activations);
    QCOMPARE(eight.logits, one.logits);
    // Later micro-batches run with the gradients of the earlier ones held; at backward's end the
    // tied embedding's two gradients are summed beside them.
    const int64_t vh = 4 * c.vocabSize * c.hiddenSize;
    QCOMPARE(eight.total,
             eight.weights + eight.optimizerStates +
                 std::max({eight.activations + eight.logits + eight.gradients,
                           eight.gradients + 3 * vh, eight.gradients + eight.stepWorkspace}));
    QVERIFY(eight.total >= one.total);
}

void TestMemory::chunkedLossLowersLogits()
{
    const auto c = load("qwen2.5-0.5b.json");
    auto o = cpu(4, 2048);
    // A pair objective keeps the full loss (three fp32 [tokens, vocab] buffers at backward's
    // start): 2 pairs are 4 sequences; SFT trains through the fused loss.
    auto pairs = o;
    pairs.objective = "simpo";
    pairs.batch = 2;
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Lora), pairs).logits,
             3 * 4 * 4 * 2048 * c.vocabSize);
    const auto fused = tb::estimateMemory(c, method(tb::Method::Lora), o);
    const int64_t chunk = std::max<int64_t>(64, (int64_t(256) << 20) / (8 * c.vocabSize));
    QCOMPARE(tb::fusedLossChunkTokens(c.vocabSize), chunk);
    QCOMPARE(fused.logits, 4 * 4 * 2048 * c.hiddenSize + 4 * chunk * c.vocabSize);
    auto onCuda = o;  // LibTorch's logsumexp: an fp32 temporary of 64 rows
    onCuda.cudaOverhead = true;
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Lora), onCuda).logits,
             fused.logits + 4 * std::min<int64_t>(64, chunk) * c.vocabSize);
    o.loss = "chunked";
    o.lossChunk = 1024;
    const auto chunked = tb::estimateMemory(c, method(tb::Method::Lora), o);
    QCOMPARE(chunked.logits, 4 * 1024 * c.vocabSize + 12 * 4 * 2048);
    QVERIFY(chunked.logits * 10 < 3 * 4 * 4 * 2048 * c.vocabSize);
    QVERIFY(fused.logits * 10 < 3 * 4 * 4 * 2048 * c.vocabSize);
}

void TestMemory::naiveAttentionAddsScores()
{
    const auto c = load("tinyllama-1.1b.json");
    const Dims d = dims(c);
    const int64_t b = 2, s = 1024, n = b * s;
    auto o = cpu(b, s);
    const auto sdpa = tb::estimateMemory(c, method(tb::Method::Full), o);
    o.attention = "naive";
    const auto naive = tb::estimateMemory(c, method(tb::Method::Full), o);
    // Per block: + the fp32 s x s probabilities per head, - the logsumexp (o_proj keeps the output
    // instead of the kernel); once: one layer's scores and masked scores on the way to softmax.
    const int64_t probabilities = b * d.nh * s * s * 4;
    QCOMPARE(naive.activations - sdpa.activations,
             d.layers * (probabilities - 4 * d.nh * n) + 2 * b * d.nh * s * s * 4);
    QVERIFY(naive.activations > sdpa.activations * 3 / 2);
}

void TestMemory::fitsAndAdvice()
{
    const auto c = load("tinyllama-1.1b.json");
    tb::EstimateOptions o;  // the CLI defaults: fp32, adamw, batch 1, seq 512, CUDA overhead
    QVERIFY(!tb::estimateMemory(c, method(tb::Method::Full), o).fits.has_value());
    o.deviceMemory = int64_t(16) << 30;
    const auto full = tb::estimateMemory(c, method(tb::Method::Full), o);
    QCOMPARE(full.fits, std::optional<bool>(false));
    QVERIFY(!full.advice.empty());
    bool lora = false, zero = false;
    for (const auto& a : full.advice) {
        lora = lora || a.find("LoRA") != std::string::npos;
        zero = zero || a.find("ZeRO") != std::string::npos;
        QVERIFY2(a.find("GiB") != std::string::npos, a.c_str());
    }
    QVERIFY(lora && zero);
    // Every advice re-estimates to a fit: the LoRA one, checked here.
    const auto loraRun = tb::estimateMemory(c, method(tb::Method::Lora), o);
    QCOMPARE(loraRun.fits, std::optional<bool>(true));
    QVERIFY(loraRun.advice.empty());
    // Checkpointing alone cannot fit 16 B/param of 1.1B parameters in 16 GiB: not advised.
    for (const auto& a : full.advice)
        QVERIFY2(a.find("checkpointing") == std::string::npos, a.c_str());
    // A large micro-batch that fits once halved with more accumulation.
    auto big = o;
    big.batch = 64;
    const auto wide = tb::estimateMemory(c, method(tb::Method::Lora), big);
    QCOMPARE(wide.fits, std::optional<bool>(false));
    bool halved = false;
    for (const auto& a : wide.advice)
        halved = halved || a.find("--grad-accum") != std::string::npos;
    QVERIFY(halved);
    // A 152k vocabulary at 8 x 1024 tokens fits through the fused loss; with a pair objective
    // (the full loss: [tokens, vocab] buffers) the chunked loss is the cheapest fix.
    auto qwen = o;
    qwen.precision = "bf16-mixed";
    qwen.batch = 8;
    qwen.seq = 1024;
    qwen.deviceMemory = int64_t(16) << 30;
    QCOMPARE(tb::estimateMemory(load("qwen2.5-0.5b.json"), method(tb::Method::Lora), qwen).fits,
             std::optional<bool>(true));
    qwen.objective = "simpo";
    qwen.batch = 4;  // pairs: 8 sequences
    const auto vocab =
        tb::estimateMemory(load("qwen2.5-0.5b.json"), method(tb::Method::Lora), qwen);
    QCOMPARE(vocab.fits, std::optional<bool>(false));
    QVERIFY(!vocab.advice.empty());
    QVERIFY2(vocab.advice.front().find("--loss chunked") != std::string::npos,
             vocab.advice.front().c_str());
    // Nothing tried fits a tiny device: no advice.
    o.deviceMemory = int64_t(1) << 20;
    QVERIFY(tb::estimateMemory(c, method(tb::Method::Full), o).advice.empty());
}

void TestMemory::badInputs()
{
    const auto c = load("tinyllama-1.1b.json");
    auto lora = method(tb::Method::Lora);
    lora.lora.rank = 0;
    expectError([&] { tb::estimateMemory(c, lora, cpu()); }, {"lora rank", "0"});
    lora.lora.rank = 8;
    lora.lora.targets = {"c_attn"};
    expectError([&] { tb::estimateMemory(c, lora, cpu()); }, {"c_attn", "lora.targets"});
    for (int64_t batch : {0, -3})
        expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), cpu(batch, 128)); },
                    {"batch", std::to_string(batch)});
    auto o = cpu();
    o.precision = "fp8";
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), o); }, {"precision", "fp8"});
    o = cpu();
    o.zero = 4;
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), o); }, {"zero", "4"});
    o = cpu();
    o.optimizer = "adam";
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), o); }, {"optimizer", "adam"});
    expectError(
        [&] { tb::estimateMemory(load("gpt2.json"), method(tb::Method::Full), cpu(1, 2048)); },
        {"seq", "n_positions"});
    expectError([] { tb::loadModelConfig(kData + "missing.json"); }, {"missing.json"});
    // Shapes whose bytes pass 64 bits are refused (before: negative activations and logits).
    expectError(
        [&] { tb::estimateMemory(c, method(tb::Method::Full), cpu(int64_t(1000000000000), 1000)); },
        {"batch 1000000000000", "more than 2^60 bytes"});
}

void TestMemory::byteSizes()
{
    QCOMPARE(tb::parseByteSize("24GiB"), int64_t(24) << 30);
    QCOMPARE(tb::parseByteSize("24G"), int64_t(24) << 30);
    QCOMPARE(tb::parseByteSize("24GB"), int64_t(24000000000));
    QCOMPARE(tb::parseByteSize("80e9"), int64_t(80000000000));
    QCOMPARE(tb::parseByteSize("25769803776"), int64_t(25769803776));
    QCOMPARE(tb::parseByteSize("1.5 TiB"), int64_t(3) << 39);
    QCOMPARE(tb::parseByteSize("512mib"), int64_t(512) << 20);
    for (const char* bad : {"", "GiB", "24XB", "-1G", "0", "nan"})
        expectError([bad] { tb::parseByteSize(bad); }, {"size"});
    QCOMPARE(tb::formatBytes(int64_t(19200000000)), std::string("17.88 GiB"));
    QCOMPARE(tb::formatBytes(512 << 20), std::string("512.0 MiB"));
    QCOMPARE(tb::groupDigits(1100048384), std::string("1,100,048,384"));
}

void TestMemory::cliJson()
{
    const std::string model = kData + "tinyllama-1.1b.json";
    auto r = cli({"estimate", "--model", model, "--method", "full", "--json"});
    QCOMPARE(r.status, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j.size(), size_t(5));
    QCOMPARE(j.at("parameters").get<int64_t>(), int64_t(1100048384));
    QCOMPARE(j.at("trainable_parameters").get<int64_t>(), int64_t(1100048384));
    QVERIFY(j.at("fits").is_null());
    QVERIFY(j.at("advice").is_array() && j.at("advice").empty());
    const auto e = tb::estimateMemory(tb::loadModelConfig(model), method(tb::Method::Full),
                                      tb::EstimateOptions{});
    const auto& bytes = j.at("bytes");
    QCOMPARE(bytes.size(), size_t(8));
    QCOMPARE(bytes.at("weights").get<int64_t>(), e.weights);
    QCOMPARE(bytes.at("gradients").get<int64_t>(), e.gradients);
    QCOMPARE(bytes.at("optimizer_states").get<int64_t>(), e.optimizerStates);
    QCOMPARE(bytes.at("master_weights").get<int64_t>(), int64_t(0));
    QCOMPARE(bytes.at("activations").get<int64_t>(), e.activations);
    QCOMPARE(bytes.at("logits").get<int64_t>(), e.logits);
    QCOMPARE(bytes.at("overhead").get<int64_t>(), e.overhead);
    QCOMPARE(bytes.at("total").get<int64_t>(), e.total);

    // Options reach the estimate: LoRA rank and targets, precision, batch, device memory.
    r = cli({"estimate",
             "--model",
             model,
             "--method",
             "lora",
             "--lora-rank",
             "16",
             "--lora-targets",
             "q_proj,k_proj,v_proj,o_proj",
             "--precision",
             "bf16-mixed",
             "--batch",
             "4",
             "--seq",
             "256",
             "--grad-checkpointing",
             "--device-memory",
             "24GiB",
             "--json",
             "--explain"});
    QCOMPARE(r.status, 0);
    const auto k = nlohmann::json::parse(r.out);
    tb::TrainConfig lora = method(tb::Method::Lora);
    lora.trainableTokens = {};  // the CLI's default: auto
    lora.lora.rank = 16;
    lora.lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    tb::EstimateOptions o;
    o.precision = "bf16-mixed";
    o.batch = 4;
    o.seq = 256;
    o.gradientCheckpointing = true;
    o.deviceMemory = int64_t(24) << 30;
    const auto f = tb::estimateMemory(tb::loadModelConfig(model), lora, o);
    QCOMPARE(k.at("trainable_parameters").get<int64_t>(), f.trainableParameters);
    QCOMPARE(k.at("bytes").at("total").get<int64_t>(), f.total);
    QCOMPARE(k.at("fits").get<bool>(), true);
    QCOMPARE(k.at("items").size(), size_t(7));
    QVERIFY(!k.at("items")[4].at("formula").get<std::string>().empty());

    r = cli(
        {"estimate", "--model", model, "--method", "full", "--device-memory", "16GiB", "--json"});
    const auto m = nlohmann::json::parse(r.out);
    QCOMPARE(m.at("fits").get<bool>(), false);
    QVERIFY(!m.at("advice").empty());
}

void TestMemory::cliTableAndErrors()
{
    const std::string model = kData + "gpt2.json";
    auto r = cli({"estimate", "--model", model, "--method", "lora", "--explain"});
    QCOMPARE(r.status, 0);
    QVERIFY2(r.out.find("1 trainable token row (50256)") != std::string::npos, r.out.c_str());
    r = cli(
        {"estimate", "--model", model, "--method", "lora", "--trainable-tokens", "none", "--json"});
    QCOMPARE(nlohmann::json::parse(r.out).at("trainable_parameters").get<int64_t>(),
             tb::trainableParameterCount(tb::loadModelConfig(model), method(tb::Method::Lora)));
    r = cli({"estimate", "--model", model, "--method", "lora", "--explain"});
    for (const char* word : {"weights", "gradients", "optimizer_states", "activations", "logits",
                             "total", "inference"})
        QVERIFY2(r.out.find(word) != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("two running averages") != std::string::npos, r.out.c_str());

    struct Bad {
        std::vector<std::string> argv;
        const char* fragment;
    };
    const std::vector<Bad> bad = {
        {{"--method", "qlora"}, "--method"},
        {{"--method", "lora", "--lora-rank", "0"}, "--lora-rank"},
        {{"--method", "lora", "--lora-rank", "4294967297"}, "--lora-rank is 4294967297 (at most"},
        {{"--method", "prompt", "--prompt-tokens", "4294967312"}, "--prompt-tokens"},
        {{"--method", "full", "--batch", "-1"}, "--batch"},
        {{"--method", "full", "--batch", "0"}, "--batch"},
        {{"--method", "full", "--lora-rank", "4"}, "--lora-rank"},
        {{"--method", "full", "--device-memory", "lots"}, "--device-memory"},
        {{"--method", "full", "--zero", "5"}, "--zero"},
        {{"--method", "full", "--precision", "int4"}, "precision"},
        {{"--method", "full", "--frobnicate", "1"}, "--frobnicate"},
        {{"--method", "lora", "--lora-targets", "q_proj"}, "--lora-targets"},
        {{"--method", "lora", "--trainable-tokens", "60000"}, "trainable_tokens"},
        {{"--method", "lora", "--trainable-tokens", "</s>"}, "trainable_tokens"},
    };
    for (const auto& b : bad) {
        std::vector<std::string> argv = {"estimate", "--model", model};
        argv.insert(argv.end(), b.argv.begin(), b.argv.end());
        r = cli(argv);
        QCOMPARE(r.status, 1);
        QVERIFY2(r.err.find(b.fragment) != std::string::npos, r.err.c_str());
        QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1L);
    }
    r = cli({"estimate", "--model", "/nonexistent/model", "--method", "full"});
    QCOMPARE(r.status, 1);
    QVERIFY2(r.err.find("/nonexistent/model") != std::string::npos, r.err.c_str());
}

void TestMemory::quantisedBaseClosedForm()
{
    // TinyLlama, LoRA (q_proj, v_proj) on an NF4 base: every block's 7 linear weights at their
    // packed size (quant_format.h: bitsandbytes' layout), the rest of the frozen parameters in
    // fp32.
    const auto c = load("tinyllama-1.1b.json");
    const int64_t h = 2048, i = 5632, kv = 256, layers = 22, params = 1100048384;
    const int64_t shapes[][2] = {{h, h}, {kv, h}, {kv, h}, {h, h}, {i, h}, {i, h}, {h, i}};
    for (bool dq : {false, true}) {
        auto run = method(tb::Method::Lora);
        run.quant = {tb::QuantKind::Nf4, dq, false};
        const auto e = tb::estimateMemory(c, run, cpu());
        int64_t quantised = 0, bytes = 0, largest = 0;
        for (const auto& sh : shapes) {
            const int64_t n = sh[0] * sh[1], blocks = (n + 63) / 64;
            quantised += layers * n;
            bytes += layers *
                     ((n + 1) / 2 + (dq ? blocks + (blocks + 255) / 256 * 4 + 1024 : 4 * blocks));
            largest = std::max(largest, n);
        }
        QCOMPARE(e.quantizedParameters, quantised);
        QCOMPARE(e.quantizedBytes.total(), bytes);
        QCOMPARE(e.weightsFrozen, 4 * (params - quantised) + bytes);
        QCOMPARE(e.dequantTransient, 4 * largest);  // fp32 compute
        const double bits = 8.0 * double(bytes) / double(quantised);
        QVERIFY2(std::abs(bits - (dq ? 4.127 : 4.5)) < 0.005, qPrintable(QString::number(bits)));
        // Trainable parts do not change; the peak phases carry the dequantised layer.
        const auto plain = tb::estimateMemory(c, method(tb::Method::Lora), cpu());
        QCOMPARE(e.gradients, plain.gradients);
        QCOMPARE(e.optimizerStates, plain.optimizerStates);
        bool found = false;
        for (const auto& item : e.items)
            found = found || item.key == "dequantized";
        QVERIFY(found);
    }
    // int8: n bytes + a float32 absmax per row.
    auto run = method(tb::Method::Lora);
    run.quant.kind = tb::QuantKind::Int8;
    const auto e = tb::estimateMemory(c, run, cpu());
    QCOMPARE(e.quantizedBytes.total(), layers * (2 * (h * h + 4 * h) + 2 * (kv * h + 4 * kv) +
                                                 2 * (i * h + 4 * i) + (h * i + 4 * h)));
    // A method that trains the base cannot hold it quantised.
    auto full = method(tb::Method::Full);
    full.quant.kind = tb::QuantKind::Nf4;
    expectError([&] { tb::estimateMemory(c, full, cpu()); }, {"quant nf4", "full", "lora"});
}

void TestMemory::quantisedBaseVerdicts()
{
    // The shipped Llama-3.1-8B config, LoRA r16 on all seven projections at batch 1 x 2048 with
    // gradient checkpointing and bf16 autocast, on a 24 GiB card: QLoRA (NF4, double quantisation)
    // fits, and so does LoRA on the unquantised base under bf16-mixed (frozen linear weights in
    // bf16), as in pure bf16 (not a trainer option), both more than 5 GiB above QLoRA.
    const auto c = tb::loadModelConfig(TB_SOURCE_DIR "/datasets/model-configs/llama-3.1-8b");
    auto run = method(tb::Method::Lora);
    run.lora.rank = 16;
    run.lora.targets = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                        "gate_proj", "up_proj", "down_proj"};
    tb::EstimateOptions o;
    o.batch = 1;
    o.seq = 2048;
    o.gradientCheckpointing = true;
    o.precision = "bf16-mixed";
    o.deviceMemory = int64_t(24) << 30;
    o.advise = false;
    const auto lora = tb::estimateMemory(c, run, o);
    o.precision = "bf16";
    const auto loraBf16 = tb::estimateMemory(c, run, o);
    run.quant = {tb::QuantKind::Nf4, true, false};
    o.precision = "bf16-mixed";
    const auto qlora = tb::estimateMemory(c, run, o);
    qInfo("Llama-3.1-8B LoRA r16, 1 x 2048: bf16-mixed %.2f GiB, pure bf16 %.2f GiB, QLoRA nf4 "
          "%.2f GiB",
          double(lora.total) / (1 << 30), double(loraBf16.total) / (1 << 30),
          double(qlora.total) / (1 << 30));
    QVERIFY(qlora.fits && *qlora.fits);
    // bf16-mixed holds the frozen linear weights in bf16 (the head's too): 2 bytes more than pure
    // bf16 only for the embeddings, the norms and LoRA's fp32 masters; so it fits too.
    QVERIFY(lora.fits && *lora.fits);
    const int64_t fp32 = c.vocabSize * c.hiddenSize + (2 * c.numLayers + 1) * c.hiddenSize +
                         lora.trainableParameters;
    QCOMPARE(lora.weights - loraBf16.weights, 2 * fp32);
    QVERIFY(loraBf16.total > qlora.total + (int64_t(5) << 30));
    // 4-bit blocks of the 6.98e9 block weights: about 3.6 GB instead of 14 GB in bf16.
    QVERIFY(qlora.weights < lora.weights / 2);
}

QTEST_GUILESS_MAIN(TestMemory)
#include "test_memory.moc"
