// The memory planner's preference objectives and reward models against figures worked out by hand
// for the bundled stories260k (h 64, i 172, 5 layers, 8 heads, 4 KV heads, vocab 512, tied).
#include "cli/cli.h"
#include "memory/estimator.h"
#include "model/config.h"
#include "train/train_config.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <sstream>

namespace {

const std::string kStories = TB_SOURCE_DIR "/datasets/models/stories260k";
const std::string kData = TB_SOURCE_DIR "/tests/data/configs/";
constexpr int64_t kParams = 260032;  // 512 x 64 + 5 x 45,440 + 64

tb::TrainConfig method(tb::Method m)
{
    tb::TrainConfig run;
    run.method = m;
    run.trainableTokens = {false, {}};
    return run;
}

// batch pairs (or sequences for sft) of seq tokens, CPU (no overhead).
tb::EstimateOptions options(const std::string& objective, const std::string& reference,
                            int64_t batch = 2, int64_t seq = 32)
{
    tb::EstimateOptions o;
    o.objective = objective;
    o.reference = reference;
    o.batch = batch;
    o.seq = seq;
    o.cudaOverhead = false;
    return o;
}

const tb::MemoryItem* item(const tb::MemoryEstimate& e, const std::string& key)
{
    for (const auto& i : e.items)
        if (i.key == key)
            return &i;
    return nullptr;
}

std::vector<std::string> keys(const tb::MemoryEstimate& e)
{
    std::vector<std::string> out;
    for (const auto& i : e.items)
        out.push_back(i.key);
    return out;
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

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace

class TestMemoryObjectives : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void twoSequencesPerPair();
    void referenceItems();
    void logprobBuffers();
    void rewardHead();
    void totalsInOrder();
    void referencePhase();
    void adviceForACopiedReference();
    void runConfigResolvesTheReference();
    void badObjectives();
    void cliObjective();
};

void TestMemoryObjectives::twoSequencesPerPair()
{
    const auto c = tb::loadModelConfig(kStories);
    QCOMPARE(tb::parameterCount(c), kParams);
    // 2 pairs of 32 tokens are 4 sequences: the activations of sft at batch 4, where the pairs'
    // full loss also keeps the head's input for a training head's gradient (sft's fused loss forms
    // that gradient in forward), and its three fp32 [tokens, vocab] buffers.
    for (tb::Method m : {tb::Method::Full, tb::Method::Lora}) {
        const auto sft4 = tb::estimateMemory(c, method(m), options("sft", "none", 4));
        // sft's fused loss: the hidden states' gradient 4 x 128 x 64 beside one fp32 chunk of
        // 128 x 512 logits and, full, the head's [512, 64] gradient being formed.
        QCOMPARE(sft4.logits, int64_t(4 * 128 * 64 + 4 * 128 * 512 +
                                      (m == tb::Method::Full ? 4 * 512 * 64 : 0)));
        const int64_t headInput = m == tb::Method::Full ? 4 * 64 * 128 : 0;
        for (const char* objective : {"dpo", "ipo", "simpo", "orpo"}) {
            const auto ref = std::string(objective) == "dpo" || std::string(objective) == "ipo"
                                 ? "precomputed"
                                 : "none";
            const auto e = tb::estimateMemory(c, method(m), options(objective, ref, 2));
            QCOMPARE(e.sequences, int64_t(4));
            QCOMPARE(e.activations, sft4.activations + headInput);
            // Full loss: 3 fp32 [tokens, vocab] buffers, 3 x 4 x 128 x 512.
            QCOMPARE(e.logits, int64_t(3 * 4 * 128 * 512));
            QVERIFY2(
                contains(item(e, "activations")->explanation, "2 pairs per micro-batch make 4"),
                item(e, "activations")->explanation.c_str());
            QVERIFY(contains(item(e, "logits")->formula, "4 (2 x 2 pairs: chosen and rejected)"));
        }
    }
    // The inference comparison stays at the run's batch: 2 prompts, not 4 sequences.
    const auto dpo = tb::estimateMemory(c, method(tb::Method::Lora), options("dpo", "off", 2, 32));
    const auto sft2 = tb::estimateMemory(c, method(tb::Method::Lora), options("sft", "none", 2));
    QCOMPARE(dpo.inference, sft2.inference);
    // sft keeps its seven items and no objective fields.
    QCOMPARE(sft2.items.size(), size_t(7));
    QCOMPARE(sft2.sequences, int64_t(2));
    QCOMPARE(sft2.referenceWeights + sft2.logprobs + sft2.head, int64_t(0));
}

void TestMemoryObjectives::referenceItems()
{
    const auto c = tb::loadModelConfig(kStories);
    // copy: the base weights again in the weights' dtype: 260,032 x 4 B; pure bf16 2 B; ZeRO-3 on
    // 2 GPUs half of it.
    const auto copy = tb::estimateMemory(c, method(tb::Method::Full), options("dpo", "copy"));
    QCOMPARE(copy.referenceWeights, 4 * kParams);
    QCOMPARE(item(copy, "reference")->bytes, int64_t(1040128));
    QVERIFY(contains(item(copy, "reference")->formula, "260,032 base parameters x 4 B"));
    auto o = options("dpo", "copy");
    o.precision = "bf16";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), o).referenceWeights, 2 * kParams);
    o = options("dpo", "copy");
    o.precision = "bf16-mixed";  // fp32 weights, so an fp32 copy
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), o).referenceWeights, 4 * kParams);
    o = options("dpo", "copy");
    o.gpus = 2;
    o.zero = 3;
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Full), o).referenceWeights, 2 * kParams);
    // A copy under LoRA is the base too (not the LoRA matrices).
    QCOMPARE(
        tb::estimateMemory(c, method(tb::Method::Lora), options("ipo", "copy")).referenceWeights,
        4 * kParams);
    // off: an item of 0 bytes that says why.
    const auto off = tb::estimateMemory(c, method(tb::Method::Lora), options("dpo", "off"));
    QCOMPARE(item(off, "reference")->bytes, int64_t(0));
    QVERIFY(contains(item(off, "reference")->explanation, "switched off"));
    // precomputed: 0 on the device, 2 x 4 B per pair on the host (16 B for 2 pairs).
    const auto pre = tb::estimateMemory(c, method(tb::Method::Full), options("dpo", "precomputed"));
    QCOMPARE(item(pre, "reference")->bytes, int64_t(0));
    QVERIFY(contains(item(pre, "reference")->formula, "2 x 4 B per pair"));
    QVERIFY(contains(item(pre, "reference")->formula, "16 B for this micro-batch's 2 pairs"));
    // The items' order: reference after master_weights, logprobs after logits.
    const std::vector<std::string> expected = {"weights",        "gradients", "optimizer_states",
                                               "master_weights", "reference", "activations",
                                               "logits",         "logprobs",  "overhead"};
    QCOMPARE(keys(copy), expected);
    // simpo and orpo have no reference item.
    QVERIFY(!item(tb::estimateMemory(c, method(tb::Method::Full), options("simpo", "none")),
                  "reference"));
}

void TestMemoryObjectives::logprobBuffers()
{
    const auto c = tb::loadModelConfig(kStories);
    // dpo: [4, 32] fp32 per-token log-probabilities + policy and reference sums 2 x 4 B x 4.
    const auto dpo = tb::estimateMemory(c, method(tb::Method::Lora), options("dpo", "off"));
    QCOMPARE(dpo.logprobs, int64_t(4 * 4 * 32 + 2 * 4 * 4));
    QCOMPARE(item(dpo, "logprobs")->bytes, int64_t(544));
    // simpo, orpo: the policy's sums only.
    for (const char* objective : {"simpo", "orpo"})
        QCOMPARE(
            tb::estimateMemory(c, method(tb::Method::Lora), options(objective, "none")).logprobs,
            int64_t(4 * 4 * 32 + 4 * 4));
    // They are alive at backward's start: that phase grows by exactly the buffers (beyond the
    // full loss's logits in place of sft's fused ones).
    const auto sft4 = tb::estimateMemory(c, method(tb::Method::Lora), options("sft", "none", 4));
    auto backward = [](const tb::MemoryEstimate& e) {
        for (const auto& p : e.phases)
            if (p.name == "backward")
                return p.bytes;
        return int64_t(-1);
    };
    QCOMPARE(backward(dpo), backward(sft4) - sft4.logits + dpo.logits + 544);
}

void TestMemoryObjectives::rewardHead()
{
    const auto c = tb::loadModelConfig(kStories);
    const auto r = tb::estimateMemory(c, method(tb::Method::Lora), options("reward", "none"));
    // score.weight [1, 64]: 64 x (4 weight + 4 gradient + 2 x 4 AdamW) = 1,024 B.
    QCOMPARE(r.headParameters, int64_t(64));
    QCOMPARE(r.head, int64_t(1024));
    QCOMPARE(r.headWeight, int64_t(256));
    QCOMPARE(r.headGradient, int64_t(256));
    QCOMPARE(r.headStates, int64_t(512));
    // No [tokens, vocab] logits: the head's input, 4 sequences x 64 x 4 B, and 4 fp32 scores.
    QCOMPARE(r.logits, int64_t(4 * 64 * 4 + 4 * 4));
    QVERIFY(contains(item(r, "logits")->explanation, "no [tokens, vocab] logits"));
    QVERIFY(!item(r, "logprobs") && !item(r, "reference"));
    const std::vector<std::string> expected = {"weights",        "gradients",   "optimizer_states",
                                               "master_weights", "activations", "logits",
                                               "head",           "overhead"};
    QCOMPARE(keys(r), expected);
    // SGD keeps no state: 64 x 8 B.
    auto o = options("reward", "none");
    o.optimizer = "sgd";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Lora), o).head, int64_t(512));
    // Under LoRA the LM head never trains, so the activations equal sft's at 4 sequences.
    const auto sft4 = tb::estimateMemory(c, method(tb::Method::Lora), options("sft", "none", 4));
    QCOMPARE(r.activations, sft4.activations);
    // Full fine-tuning: the tied head trains only as the embedding; the head's input is not kept,
    // by reward (no LM head) as by SFT (its fused loss forms the head's gradient in forward).
    const auto fullReward =
        tb::estimateMemory(c, method(tb::Method::Full), options("reward", "none"));
    const auto fullSft = tb::estimateMemory(c, method(tb::Method::Full), options("sft", "none", 4));
    QCOMPARE(fullSft.activations, fullReward.activations);
    QCOMPARE(fullReward.gradients, fullSft.gradients);  // tied: the embedding still trains
    // An untied LM head never runs: no gradient, no state for its [vocab, hidden].
    const auto qwen = tb::loadModelConfig(kData + "llama-3.1-8b.json");
    QVERIFY(!qwen.tieWordEmbeddings);
    const auto untied =
        tb::estimateMemory(qwen, method(tb::Method::Full), options("reward", "none", 1, 16));
    const auto untiedSft =
        tb::estimateMemory(qwen, method(tb::Method::Full), options("sft", "none", 2, 16));
    const int64_t vh = qwen.vocabSize * qwen.hiddenSize;
    QCOMPARE(untiedSft.gradients - untied.gradients, 4 * vh);
    QCOMPARE(untiedSft.optimizerStates - untied.optimizerStates, 8 * vh);
    QVERIFY(contains(item(untied, "gradients")->formula, "unused LM head"));
}

void TestMemoryObjectives::totalsInOrder()
{
    // Full fine-tuning: sft < dpo precomputed (twice the sequences) < dpo copy (plus the base);
    // LoRA: sft < dpo off = dpo precomputed (the same bytes; off costs a forward, not memory) <
    // dpo copy. Checked on stories260k and TinyLlama.
    for (const std::string& file : {kStories, kData + "tinyllama-1.1b.json"}) {
        const auto c = tb::loadModelConfig(file);
        const int64_t base = tb::parameterCount(c);
        auto total = [&](tb::Method m, const char* objective, const char* ref) {
            return tb::estimateMemory(c, method(m), options(objective, ref, 2, 64)).total;
        };
        const int64_t sft = total(tb::Method::Full, "sft", "none");
        const int64_t pre = total(tb::Method::Full, "dpo", "precomputed");
        const int64_t copy = total(tb::Method::Full, "dpo", "copy");
        // Twice the sequences raise the peak unless the optimizer step is the peak (TinyLlama's
        // full fine-tuning: gradients and AdamW's temporaries outweigh 256 tokens' activations).
        const auto preEstimate =
            tb::estimateMemory(c, method(tb::Method::Full), options("dpo", "precomputed", 2, 64));
        QVERIFY(sft <= pre && pre < copy);
        if (preEstimate.peakPhase == "backward")
            QVERIFY(sft < pre);
        else
            QCOMPARE(preEstimate.peakPhase, std::string("optimizer step"));
        QCOMPARE(copy - pre, 4 * base);  // the copy is fixed on top of the same peak
        const int64_t loraSft = total(tb::Method::Lora, "sft", "none");
        const int64_t loraOff = total(tb::Method::Lora, "dpo", "off");
        const int64_t loraPre = total(tb::Method::Lora, "dpo", "precomputed");
        const int64_t loraCopy = total(tb::Method::Lora, "dpo", "copy");
        QVERIFY(loraSft < loraOff);
        QCOMPARE(loraOff, loraPre);
        QCOMPARE(loraCopy - loraOff, 4 * base);
        QVERIFY(loraOff < pre);
        // The total is the fixed bytes (weights, states, reference, head) + the largest phase.
        const auto e =
            tb::estimateMemory(c, method(tb::Method::Full), options("dpo", "copy", 2, 64));
        int64_t peak = 0;
        for (const auto& p : e.phases)
            peak = std::max(peak, p.bytes);
        QCOMPARE(e.total, e.weights + e.optimizerStates + e.referenceWeights + peak);
    }
}

void TestMemoryObjectives::referencePhase()
{
    const auto c = tb::loadModelConfig(kStories);
    // The no-grad reference pass over 4 x 32 = 128 tokens: logits, their log-softmax (fp32: no
    // copy) 8 B x 128 x 512, one MLP 3 x 4 x 172 x 128, the residual stream 2 x 4 x 64 x 128.
    const auto e = tb::estimateMemory(c, method(tb::Method::Lora), options("dpo", "off"));
    QCOMPARE(e.referenceForward, int64_t(8 * 128 * 512 + 3 * 4 * 172 * 128 + 2 * 4 * 64 * 128));
    bool found = false;
    for (const auto& p : e.phases)
        found = found || (p.name == "reference forward" && p.bytes == e.referenceForward);
    QVERIFY(found);
    // Precomputed, simpo and reward have no reference pass.
    for (auto [objective, ref] : {std::pair{"dpo", "precomputed"}, std::pair{"simpo", "none"},
                                  std::pair{"reward", "none"}}) {
        const auto f = tb::estimateMemory(c, method(tb::Method::Lora), options(objective, ref));
        QCOMPARE(f.referenceForward, int64_t(0));
        for (const auto& p : f.phases)
            QVERIFY(p.name != "reference forward");
    }
    // bf16-mixed: 16-bit logits, their fp32 copy and the log-softmax, 2 + 4 + 4 B per logit.
    auto o = options("dpo", "off");
    o.precision = "bf16-mixed";
    QCOMPARE(tb::estimateMemory(c, method(tb::Method::Lora), o).referenceForward,
             int64_t(10 * 128 * 512 + 3 * 2 * 172 * 128 + 2 * 4 * 64 * 128));
}

void TestMemoryObjectives::adviceForACopiedReference()
{
    // TinyLlama full DPO in fp32 with a reference copy (CUDA overhead on): a device between the
    // precomputed total and the copy's total. The advice names both cheaper references.
    const auto c = tb::loadModelConfig(kData + "tinyllama-1.1b.json");
    auto o = options("dpo", "copy", 1, 256);
    o.cudaOverhead = true;
    const auto full = method(tb::Method::Full);
    const int64_t copyTotal = tb::estimateMemory(c, full, o).total;
    auto pre = o;
    pre.reference = "precomputed";
    const int64_t preTotal = tb::estimateMemory(c, full, pre).total;
    auto lora = method(tb::Method::Lora);
    lora.lora = tb::LoraOptions{};
    auto off = o;
    off.reference = "off";
    const int64_t offTotal = tb::estimateMemory(c, lora, off).total;
    QVERIFY(offTotal < preTotal && preTotal < copyTotal);
    o.deviceMemory = (preTotal + copyTotal) / 2;
    const auto e = tb::estimateMemory(c, full, o);
    QCOMPARE(e.fits, std::optional<bool>(false));
    bool precomputed = false, loraOff = false;
    for (const auto& a : e.advice) {
        if (contains(a, "--reference precomputed")) {
            precomputed = true;
            QVERIFY2(contains(a, tb::formatBytes(preTotal)), a.c_str());
            QVERIFY2(contains(a, tb::formatBytes(4 * tb::parameterCount(c))), a.c_str());
        }
        if (contains(a, "--method lora --reference off")) {
            loraOff = true;
            QVERIFY2(contains(a, tb::formatBytes(offTotal)), a.c_str());
        }
    }
    QVERIFY(precomputed && loraOff);
    // A device below the precomputed total: precomputing is not advised, LoRA still is.
    o.deviceMemory = (offTotal + preTotal) / 2;
    for (const auto& a : tb::estimateMemory(c, full, o).advice)
        QVERIFY2(!contains(a, "precomputed"), a.c_str());
    // sft advice never mentions a reference.
    auto sft = options("sft", "none", 1, 256);
    sft.deviceMemory = int64_t(16) << 30;
    for (const auto& a : tb::estimateMemory(c, full, sft).advice)
        QVERIFY2(!contains(a, "reference"), a.c_str());
}

void TestMemoryObjectives::runConfigResolvesTheReference()
{
    // estimateOptionsFor: reference auto is off for LoRA and copy for full fine-tuning.
    tb::TrainConfig run = method(tb::Method::Lora);
    run.objective = tb::Objective::Dpo;
    run.batchSize = 3;
    auto o = tb::estimateOptionsFor(run, 48);
    QCOMPARE(o.objective, std::string("dpo"));
    QCOMPARE(o.reference, std::string("off"));
    run.method = tb::Method::Full;
    QCOMPARE(tb::estimateOptionsFor(run, 48).reference, std::string("copy"));
    run.preference.reference = tb::ReferenceKind::Precomputed;
    o = tb::estimateOptionsFor(run, 48);
    QCOMPARE(o.reference, std::string("precomputed"));
    o.cudaOverhead = false;
    const auto e = tb::estimateMemory(tb::loadModelConfig(kStories), run, o);
    QCOMPARE(e.sequences, int64_t(6));
    QCOMPARE(e.reference, std::string("precomputed"));
    run.objective = tb::Objective::Reward;
    QCOMPARE(tb::estimateOptionsFor(run, 48).reference, std::string("none"));
    // "auto" in EstimateOptions resolves the same way.
    const auto a = tb::estimateMemory(tb::loadModelConfig(kStories), method(tb::Method::Adapter),
                                      options("ipo", "auto"));
    QCOMPARE(a.reference, std::string("off"));
}

void TestMemoryObjectives::badObjectives()
{
    const auto c = tb::loadModelConfig(kStories);
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), options("kto", "none")); },
                {"objective", "kto"});
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), options("dpo", "shared")); },
                {"reference", "shared"});
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Full), options("dpo", "off")); },
                {"reference is 'off'", "full"});
    expectError([&] { tb::estimateMemory(c, method(tb::Method::Lora), options("simpo", "copy")); },
                {"simpo", "no reference"});
}

void TestMemoryObjectives::cliObjective()
{
    auto r = cli({"estimate", "--model", kStories, "--method", "full", "--objective", "dpo",
                  "--batch", "2", "--seq", "32", "--json"});
    QCOMPARE(r.status, 0);
    auto j = nlohmann::json::parse(r.out);
    auto o = options("dpo", "copy");
    o.cudaOverhead = true;
    const auto e = tb::estimateMemory(tb::loadModelConfig(kStories), method(tb::Method::Full), o);
    QCOMPARE(j.at("objective").get<std::string>(), std::string("dpo"));
    QCOMPARE(j.at("reference").get<std::string>(), std::string("copy"));  // auto under full
    QCOMPARE(j.at("sequences_per_micro_batch").get<int64_t>(), int64_t(4));
    const auto& bytes = j.at("bytes");
    QCOMPARE(bytes.at("reference").get<int64_t>(), 4 * kParams);
    QCOMPARE(bytes.at("logprobs").get<int64_t>(), int64_t(544));
    QCOMPARE(bytes.at("total").get<int64_t>(), e.total);
    QVERIFY(!bytes.contains("head"));
    r = cli(
        {"estimate", "--model", kStories, "--method", "lora", "--objective", "reward", "--json"});
    QCOMPARE(r.status, 0);
    j = nlohmann::json::parse(r.out);
    QCOMPARE(j.at("bytes").at("head").get<int64_t>(), int64_t(1024));
    QCOMPARE(j.at("head_parameters").get<int64_t>(), int64_t(64));
    QVERIFY(!j.at("bytes").contains("logprobs"));
    r = cli({"estimate", "--model", kStories, "--method", "lora", "--objective", "dpo",
             "--reference", "precomputed"});
    QCOMPARE(r.status, 0);
    QVERIFY2(contains(r.out, "objective dpo (reference: precomputed)"), r.out.c_str());
    QVERIFY2(contains(r.out, "reference"), r.out.c_str());
    for (const auto& [argv, fragment] :
         std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--objective", "sft", "--reference", "copy"}, "--reference"},
             {{"--objective", "dpo", "--reference", "none"}, "--reference"},
             {{"--objective", "kto"}, "objective"}}) {
        std::vector<std::string> full = {"estimate", "--model", kStories, "--method", "lora"};
        full.insert(full.end(), argv.begin(), argv.end());
        r = cli(full);
        QCOMPARE(r.status, 1);
        QVERIFY2(contains(r.err, fragment), r.err.c_str());
    }
}

QTEST_GUILESS_MAIN(TestMemoryObjectives)
#include "test_memory_objectives.moc"
