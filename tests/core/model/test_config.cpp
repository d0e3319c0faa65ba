// config.json parsing: exact parameter counts of real models, and clear errors for bad configs.
#include "model/causal_lm.h"
#include "model/config.h"
#include "model/registry.h"
#include "util/error.h"

#include "../../test_util.h"

#include <QtTest>

#include <cmath>

namespace {

const std::string kData = TB_SOURCE_DIR "/tests/data/configs/";

// Expects parseModelConfig to throw a tb::Error naming the file and containing `fragment`.
void expectError(const std::string& json, const std::string& fragment)
{
    try {
        tb::parseModelConfig(json, "/models/x/config.json");
    } catch (const tb::Error& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find("/models/x/config.json") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find(fragment) != std::string::npos, msg.c_str());
        return;
    }
    QFAIL(qPrintable(QString::fromStdString("accepted: " + json)));
}

}  // namespace

class TestConfig : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parameterCounts_data();
    void parameterCounts();
    void fields();
    void gemma3();
    void smollm3();
    void phi3();
    void badConfigs();
};

void TestConfig::parameterCounts_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<qint64>("expected");
    // Published parameter counts of the real checkpoints (Hugging Face model.num_parameters()).
    QTest::newRow("gpt2") << "gpt2.json" << qint64(124439808);
    QTest::newRow("tinyllama") << "tinyllama-1.1b.json" << qint64(1100048384);
    QTest::newRow("qwen2.5-0.5b") << "qwen2.5-0.5b.json" << qint64(494032768);
    QTest::newRow("llama-3.1-8b") << "llama-3.1-8b.json" << qint64(8030261248);
    QTest::newRow("phi-3-mini-4k") << "phi-3-mini-4k.json" << qint64(3821079552);
}

void TestConfig::parameterCounts()
{
    QFETCH(QString, file);
    QFETCH(qint64, expected);
    tb::ModelConfig c = tb::loadModelConfig(kData + file.toStdString());
    QCOMPARE(tb::parameterCount(c), expected);
}

void TestConfig::fields()
{
    auto llama = tb::loadModelConfig(kData + "llama-3.1-8b.json");
    QCOMPARE(llama.architecture, tb::Architecture::Llama);
    QCOMPARE(llama.headDim, int64_t(128));
    QCOMPARE(llama.numKvHeads, int64_t(8));
    QCOMPARE(llama.ropeScaling.type, std::string("llama3"));
    QCOMPARE(llama.ropeScaling.originalMaxPositions, int64_t(8192));
    QCOMPARE(llama.ropeTheta, 500000.0);
    QCOMPARE(llama.eosTokenIds, (std::vector<int64_t>{128001, 128008, 128009}));
    auto qwen = tb::loadModelConfig(kData + "qwen2.5-0.5b.json");
    QVERIFY(qwen.qkvBias && !qwen.oBias && qwen.tieWordEmbeddings);
    auto gpt2 = tb::loadModelConfig(kData + "gpt2.json");
    QCOMPARE(gpt2.intermediateSize, int64_t(3072));
    QVERIFY(gpt2.tieWordEmbeddings);
    // transformers 5 spelling: theta and scaling inside rope_parameters.
    auto v5 = tb::parseModelConfig(
        R"({"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":16,
        "num_hidden_layers":1,"num_attention_heads":2,"rope_parameters":{"rope_type":"linear","factor":2.0,
        "rope_theta":1000.0}})",
        "v5.json");
    QCOMPARE(v5.ropeScaling.type, std::string("linear"));
    QCOMPARE(v5.ropeTheta, 1000.0);
    // Sliding windows as transformers reads them: Mistral's on every layer (a missing key is its
    // default of 4,096, null none); Qwen's with use_sliding_window, on the layers layer_types names
    // or from max_window_layers on.
    const std::string small =
        R"("vocab_size":10,"hidden_size":8,"intermediate_size":16,"num_hidden_layers":3,
        "num_attention_heads":2,"max_position_embeddings":64)";
    const auto config = [&](const std::string& type, const std::string& more) {
        return tb::parseModelConfig("{\"model_type\":\"" + type + "\"," + small + more + "}",
                                    "c.json");
    };
    const auto slides = [](const tb::ModelConfig& c) {
        std::string s;
        for (size_t i = 0; i < 3; ++i)
            s += c.layerSlides(i) ? 'S' : 'F';
        return s;
    };
    const auto mistral = config("mistral", R"(,"sliding_window":6)");
    QCOMPARE(mistral.slidingWindow, int64_t(6));
    QCOMPARE(mistral.maxPositions, int64_t(64));  // the window does not shorten the context
    QCOMPARE(slides(mistral), std::string("SSS"));
    QCOMPARE(config("mistral", "").slidingWindow, int64_t(4096));
    QCOMPARE(config("mistral", R"(,"sliding_window":null)").slidingWindow, int64_t(0));
    QCOMPARE(slides(config("qwen2", R"(,"sliding_window":6,"max_window_layers":0)")),
             std::string("FFF"));  // use_sliding_window false
    QCOMPARE(slides(config("qwen3", R"(,"use_sliding_window":true,"max_window_layers":0)")),
             std::string("SSS"));
    QCOMPARE(config("qwen3", R"(,"use_sliding_window":true,"max_window_layers":0)").slidingWindow,
             int64_t(4096));
    QCOMPARE(slides(config("qwen2", R"(,"use_sliding_window":true,"sliding_window":6,
             "max_window_layers":1)")),
             std::string("FSS"));
    QCOMPARE(slides(config("qwen2", R"(,"use_sliding_window":true,"sliding_window":6)")),
             std::string("FFF"));  // max_window_layers 28 by default
    QCOMPARE(slides(config("qwen2", R"(,"use_sliding_window":true,"sliding_window":6,
             "max_window_layers":0,"layer_types":["sliding_attention","full_attention",
             "sliding_attention"])")),
             std::string("SFS"));  // layer_types wins
    for (const auto& [more, message] : std::vector<std::pair<std::string, std::string>>{
             {R"(,"layer_types":["sliding_attention","full_attention","full_attention"])",
              "key 'layer_types' has sliding_attention layers, but use_sliding_window is not "
              "true"},
             {R"(,"layer_types":["full_attention"])",
              "key 'layer_types' must list one type per layer (3)"},
             {R"(,"layer_types":["full_attention","chunked_attention","full_attention"])",
              "key 'layer_types' entry 1 is \"chunked_attention\""}}) {
        try {
            config("qwen2", more);
            QFAIL(more.c_str());
        } catch (const tb::Error& e) {
            QVERIFY2(tbtest::contains(e.what(), "c.json: " + message), e.what());
        }
    }
    // A sequence past the window is attended through it. With one layer, the last of 7 tokens
    // sees the 6 latest at the same distances as the last of those 6 tokens alone (rotary
    // attention depends on distance only), so their hidden states agree; attending over all 7
    // (the same weights without the window) does not.
    const auto oneLayer = [&](const std::string& window) {
        return tb::createCausalLM(tb::parseModelConfig(
            R"({"model_type":"mistral","vocab_size":10,"hidden_size":8,"intermediate_size":16,
            "num_hidden_layers":1,"num_attention_heads":2,"sliding_window":)" +
                window + "}",
            "c.json"));
    };
    const auto model = oneLayer("6");
    const auto full = oneLayer("null");
    torch::NoGradGuard noGrad;
    torch::manual_seed(3);
    for (auto& p : model->named_parameters())
        p.value().normal_(0, 0.5);  // far from uniform attention
    const auto weights = model->named_parameters();
    for (auto& p : full->named_parameters())
        p.value().copy_(weights[p.key()]);
    const auto seven = torch::arange(1, 8).view({1, 7});
    const auto last = model->forwardHidden(seven).select(1, 6);
    QVERIFY(torch::allclose(last, model->forwardHidden(seven.narrow(1, 1, 6)).select(1, 5), 1e-4,
                            1e-5));
    QVERIFY(!torch::allclose(last, full->forwardHidden(seven).select(1, 6), 1e-3, 1e-3));
    // The first 6 positions are within the window: the same as without it.
    QVERIFY(torch::allclose(model->forwardHidden(seven).narrow(1, 0, 6),
                            full->forwardHidden(seven).narrow(1, 0, 6), 1e-5, 1e-6));
    // A folder path finds its config.json.
    auto bundled = tb::loadModelConfig(TB_SOURCE_DIR "/datasets/models/stories260k");
    QCOMPARE(tb::parameterCount(bundled), int64_t(260032));
}

// Gemma 3 text as transformers' Gemma3TextConfig reads it: the catalog's configs (transformers 4
// spelling: rope_local_base_freq, sliding_window_pattern or layer_types), transformers 5's
// rope_parameters per layer type, and what is refused.
void TestConfig::gemma3()
{
    const std::string catalog = TB_SOURCE_DIR "/datasets/model-configs/";
    const auto one = tb::loadModelConfig(catalog + "gemma-3-1b");
    QCOMPARE(one.architecture, tb::Architecture::Gemma3);
    QCOMPARE(tb::parameterCount(one), int64_t(999885952));  // num_parameters() of the checkpoint
    QCOMPARE(one.headDim, int64_t(256));
    QVERIFY(one.tieWordEmbeddings && one.qkNorm && !one.qkvBias);
    QCOMPARE(one.hiddenAct, std::string("gelu_pytorch_tanh"));
    QCOMPARE(one.ropeTheta, 1000000.0);
    QCOMPARE(one.ropeThetaSliding, 10000.0);
    QCOMPARE(one.ropeScaling.type, std::string());
    QCOMPARE(one.attentionScale, 1.0 / 16.0);
    QCOMPARE(one.embeddingScale, std::sqrt(1152.0));
    QCOMPARE(one.slidingWindow, int64_t(512));
    QCOMPARE(one.maxPositions, int64_t(32768));
    std::string pattern;
    for (size_t i = 0; i < 13; ++i)
        pattern += one.layerSlides(i) ? 'S' : 'F';
    QCOMPARE(pattern, std::string("SSSSSFSSSSSFS"));  // five of every six slide
    QCOMPARE(one.slidingLayerText(), std::string("layers 0-4, 6-10, 12-16, 18-22, 24-25"));
    const auto small = tb::loadModelConfig(catalog + "gemma-3-270m");
    QCOMPARE(tb::parameterCount(small), int64_t(268098176));
    QCOMPARE(small.slidingLayerText(), std::string("layers 0-4, 6-10, 12-16"));

    const std::string base =
        R"({"model_type":"gemma3_text","vocab_size":10,"hidden_size":8,"intermediate_size":16,
        "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4)";
    const auto parse = [&](const std::string& more) {
        return tb::parseModelConfig(base + more + "}", "g.json");
    };
    // Class defaults: head_dim given; window 4,096; bases 1e6 / 1e4; scalar 256; tied.
    const auto defaults = parse("");
    QCOMPARE(defaults.slidingWindow, int64_t(4096));
    QVERIFY(defaults.layerSlides(0) && defaults.layerSlides(1));  // the 6th layer is the first full
    QCOMPARE(defaults.attentionScale, 1.0 / 16.0);
    QVERIFY(defaults.tieWordEmbeddings);
    QCOMPARE(defaults.maxPositions, int64_t(131072));
    const auto v5 = parse(
        R"(,"layer_types":["sliding_attention","full_attention"],"rope_parameters":{
        "full_attention":{"rope_type":"linear","factor":8.0,"rope_theta":1000000.0},
        "sliding_attention":{"rope_type":"default","rope_theta":10000.0}},"sliding_window":512)");
    QCOMPARE(v5.ropeScaling.type, std::string("linear"));
    QCOMPARE(v5.ropeScaling.factor, 8.0);
    QCOMPARE(v5.ropeTheta, 1000000.0);
    QCOMPARE(v5.ropeThetaSliding, 10000.0);
    QVERIFY(v5.layerSlides(0) && !v5.layerSlides(1));
    const auto v4 = parse(R"(,"rope_scaling":{"rope_type":"linear","factor":8.0},
        "rope_theta":20000,"rope_local_base_freq":500,"query_pre_attn_scalar":144)");
    QCOMPARE(v4.ropeScaling.factor, 8.0);
    QCOMPARE(v4.ropeTheta, 20000.0);
    QCOMPARE(v4.ropeThetaSliding, 500.0);
    QCOMPARE(v4.attentionScale, 1.0 / 12.0);
    // Without the window there are no sliding layers.
    QCOMPARE(parse(R"(,"layer_types":["full_attention","full_attention"],"sliding_window":null)")
                 .slidingWindow,
             int64_t(0));

    for (const auto& [more, message] : std::vector<std::pair<std::string, std::string>>{
             {R"(,"attn_logit_softcapping":50.0)",
              "key 'attn_logit_softcapping' is 50.0: soft-capped logits"},
             {R"(,"final_logit_softcapping":30.0)", "key 'final_logit_softcapping' is 30.0"},
             {R"(,"use_bidirectional_attention":true)", "key 'use_bidirectional_attention' true"},
             {R"(,"hidden_activation":"gelu")", "hidden_activation 'gelu' is not supported"},
             {R"(,"sliding_window":null)", "key 'sliding_window' is null, but 2 layers"},
             {R"(,"rope_parameters":{"full_attention":{"rope_type":"yarn","factor":2.0}})",
              "rope_parameters.full_attention rope type 'yarn' is not supported"},
             {R"(,"rope_parameters":{"full_attention":{},"sliding_attention":{"rope_type":
              "linear","factor":2.0}})",
              "rope_parameters.sliding_attention rope type 'linear' is not supported"},
             {R"(,"rope_parameters":{"rope_theta":10000.0})",
              "rope_parameters must hold a \"full_attention\" entry"}}) {
        try {
            parse(more);
            QFAIL(more.c_str());
        } catch (const tb::Error& e) {
            QVERIFY2(tbtest::contains(e.what(), "g.json: " + message), e.what());
        }
    }
    expectError(R"({"model_type":"gemma3","text_config":{}})",
                "model_type 'gemma3' is a Gemma 3 image-and-text checkpoint");
}

// SmolLM3: SmolLM3Config's defaults (every fourth layer without rotary embeddings, tied, theta
// 2e6, 4 KV heads), no_rope_layers as written, and a window only with use_sliding_window (by
// default on the NoPE layers). test_model_interop checks the model against transformers.
void TestConfig::smollm3()
{
    const std::string base =
        R"({"model_type":"smollm3","vocab_size":10,"hidden_size":16,"intermediate_size":32,
        "num_hidden_layers":8,"num_attention_heads":4)";
    const auto parse = [&](const std::string& more) {
        return tb::parseModelConfig(base + more + "}", "s.json");
    };
    const auto defaults = parse("");
    QCOMPARE(defaults.architecture, tb::Architecture::SmolLM3);
    QCOMPARE(std::string(tb::architectureName(defaults.architecture)), std::string("smollm3"));
    QCOMPARE(defaults.numKvHeads, int64_t(4));
    QVERIFY(defaults.tieWordEmbeddings);
    QCOMPARE(defaults.ropeTheta, 2000000.0);
    QCOMPARE(defaults.maxPositions, int64_t(32768));
    QCOMPARE(defaults.headDim, int64_t(4));
    std::string rotary;
    for (size_t i = 0; i < 8; ++i)
        rotary += defaults.layerRotates(i) ? 'R' : 'N';
    QCOMPARE(rotary, std::string("RRRNRRRN"));
    QCOMPARE(defaults.slidingWindow, int64_t(0));
    QCOMPARE(tb::parameterCount(defaults),
             tb::parameterCount(tb::parseModelConfig(
                 R"({"model_type":"llama","vocab_size":10,"hidden_size":16,"intermediate_size":32,
                 "num_hidden_layers":8,"num_attention_heads":4,"num_key_value_heads":4,
                 "tie_word_embeddings":true})",
                 "l.json")));

    const auto interval = parse(R"(,"no_rope_layer_interval":2)");
    QVERIFY(interval.layerRotates(0) && !interval.layerRotates(1) && !interval.layerRotates(7));
    const auto listed = parse(
        R"(,"no_rope_layers":[1,1,1,1,1,1,1,1],"rope_theta":5000000.0,"tie_word_embeddings":false)");
    QVERIFY(listed.noRopeLayers.empty());
    QVERIFY(!listed.tieWordEmbeddings);
    QCOMPARE(listed.ropeTheta, 5000000.0);
    // The window: off without use_sliding_window, else on the NoPE layers unless layer_types says.
    QCOMPARE(parse(R"(,"sliding_window":6)").slidingWindow, int64_t(0));
    const auto window = parse(R"(,"use_sliding_window":true,"sliding_window":6)");
    QCOMPARE(window.slidingWindow, int64_t(6));
    QCOMPARE(window.slidingLayerText(), std::string("layers 3, 7"));
    const auto typed = parse(R"(,"use_sliding_window":true,"sliding_window":6,"layer_types":[
        "sliding_attention","full_attention","full_attention","full_attention",
        "full_attention","full_attention","full_attention","full_attention"])");
    QCOMPARE(typed.slidingLayerText(), std::string("layers 0"));
    QCOMPARE(parse(R"(,"use_sliding_window":true)").slidingWindow, int64_t(0));  // no window

    expectError(base + R"(,"no_rope_layers":[1,0,1]})", "one flag per layer (8)");
    expectError(base + R"(,"no_rope_layers":[1,0,1,2,1,1,1,1]})", "entry 3 is 2");
    expectError(base + R"(,"no_rope_layers":"every fourth"})", "no_rope_layers");
    expectError(base + R"(,"layer_types":["sliding_attention","full_attention","full_attention",
        "full_attention","full_attention","full_attention","full_attention","full_attention"]})",
                "have no window");
}

void TestConfig::phi3()
{
    const std::string base =
        R"({"model_type":"phi3","vocab_size":10,"hidden_size":32,"intermediate_size":48,
        "num_hidden_layers":2,"num_attention_heads":4)";
    const auto parse = [&](const std::string& more) {
        return tb::parseModelConfig(base + more + "}", "p.json");
    };
    // Phi3Config's defaults: as many KV heads as heads, 4,096 positions, eps 1e-5, untied, no
    // window, every dimension rotating; q, k, v and gate, up fused, the same parameters as Llama's.
    const auto defaults = parse("");
    QCOMPARE(defaults.architecture, tb::Architecture::Phi3);
    QCOMPARE(std::string(tb::architectureName(defaults.architecture)), std::string("phi3"));
    QVERIFY(defaults.fusedProjections());
    QCOMPARE(defaults.numKvHeads, int64_t(4));
    QCOMPARE(defaults.maxPositions, int64_t(4096));
    QCOMPARE(defaults.normEps, 1e-5);
    QVERIFY(!defaults.tieWordEmbeddings);
    QCOMPARE(defaults.slidingWindow, int64_t(0));
    QCOMPARE(defaults.rotatedDim(), int64_t(8));
    QVERIFY(defaults.ropeScaling.type.empty());
    QCOMPARE(tb::parameterCount(defaults),
             tb::parameterCount(tb::parseModelConfig(
                 R"({"model_type":"llama","vocab_size":10,"hidden_size":32,"intermediate_size":48,
                 "num_hidden_layers":2,"num_attention_heads":4,"rms_norm_eps":1e-5})",
                 "l.json")));
    // sliding_window slides every layer (Phi-3-mini's 2,047).
    const auto window = parse(R"(,"sliding_window":2047)");
    QCOMPARE(window.slidingWindow, int64_t(2047));
    QVERIFY(window.layerSlides(0) && window.layerSlides(1));

    // LongRoPE as Phi-3.5-mini and Phi-4-mini write it: rope_scaling with the factor lists (one
    // per rotated pair: head_dim 8 x 0.5 = 4 dimensions, 2 pairs), the original context beside it.
    const auto longrope = parse(R"(,"max_position_embeddings":131072,
        "original_max_position_embeddings":4096,"partial_rotary_factor":0.5,
        "rope_scaling":{"type":"longrope","short_factor":[1.0,1.25],"long_factor":[2,8.5]})");
    QCOMPARE(longrope.rotaryDim, int64_t(4));
    QCOMPARE(longrope.rotatedDim(), int64_t(4));
    const auto& rs = longrope.ropeScaling;
    QCOMPARE(rs.type, std::string("longrope"));
    QCOMPARE(rs.shortFactor, (std::vector<double>{1.0, 1.25}));
    QCOMPARE(rs.longFactor, (std::vector<double>{2.0, 8.5}));
    QCOMPARE(rs.originalMaxPositions, int64_t(4096));
    QCOMPARE(rs.factor, 32.0);
    // transformers' default attention factor: sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12).
    QVERIFY(std::abs(rs.attentionFactor - std::sqrt(1.0 + 5.0 / 12.0)) < 1e-12);
    // "su" (and "yarn", which Phi3Config reads as LongRoPE) name it too; an explicit attention
    // factor and the original context inside the scaling object are taken as given.
    const auto su = parse(R"(,"rope_scaling":{"type":"su","short_factor":[1,1,1,1],
        "long_factor":[1,2,3,4],"attention_factor":1.5,"original_max_position_embeddings":1024})");
    QCOMPARE(su.ropeScaling.type, std::string("longrope"));
    QCOMPARE(su.ropeScaling.attentionFactor, 1.5);
    QCOMPARE(su.ropeScaling.originalMaxPositions, int64_t(1024));
    QCOMPARE(su.ropeScaling.factor, 4.0);
    // transformers 5's rope_parameters, the rotary fraction inside it.
    const auto params = parse(R"(,"original_max_position_embeddings":16,"rope_parameters":{
        "rope_type":"longrope","rope_theta":500.0,"partial_rotary_factor":0.5,
        "short_factor":[1,1],"long_factor":[2,2]})");
    QCOMPARE(params.ropeTheta, 500.0);
    QCOMPARE(params.rotaryDim, int64_t(4));
    QCOMPARE(params.ropeScaling.originalMaxPositions, int64_t(16));
    QCOMPARE(params.ropeScaling.attentionFactor,
             std::sqrt(1.0 + std::log(4096.0 / 16.0) / std::log(16.0)));

    expectError(base + R"(,"rope_scaling":{"type":"longrope","short_factor":[1,1,1],
        "long_factor":[1,1,1,1]}})",
                "'short_factor' must list 4 numbers");
    expectError(base + R"(,"rope_scaling":{"type":"longrope","short_factor":[1,1,1,1]}})",
                "needs 'long_factor'");
    expectError(base + R"(,"rope_scaling":{"type":"longrope","short_factor":[1,1,0,1],
        "long_factor":[1,1,1,1]}})",
                "'short_factor' entry 2 must be a positive number");
    expectError(base + R"(,"rope_scaling":{"type":"dynamic","factor":2.0}})",
                "not supported for phi3 (supported: default, longrope)");
    expectError(base + R"(,"partial_rotary_factor":1.5})", "must be in (0, 1]");
    expectError(base + R"(,"partial_rotary_factor":0.375})", "need an even number");
    // LongRoPE belongs to Phi-3 here; a Llama config asking for it is refused as before.
    expectError(R"({"model_type":"llama","vocab_size":10,"hidden_size":32,"intermediate_size":48,
        "num_hidden_layers":2,"num_attention_heads":4,"rope_scaling":{"type":"longrope",
        "short_factor":[1,1,1,1],"long_factor":[1,1,1,1]}})",
                "'longrope' is not supported");
}

void TestConfig::badConfigs()
{
    const std::string base =
        R"("vocab_size":10,"hidden_size":8,"intermediate_size":16,"num_hidden_layers":1,)";
    expectError("{", "not valid JSON");
    expectError("[]", "must be a JSON object");
    expectError(R"({"vocab_size":10})", "'model_type'");
    expectError(R"({"model_type":"bert","vocab_size":10})",
                "unknown architecture model_type 'bert'");
    expectError(R"({"model_type":"llama","hidden_size":8})", "'vocab_size'");
    expectError(R"({"model_type":"llama",)" + base + R"("num_attention_heads":"2"})",
                "'num_attention_heads' must be an integer");
    expectError(R"({"model_type":"llama",)" + base + R"("num_attention_heads":3})",
                "not divisible");
    expectError(R"({"model_type":"llama",)" + base +
                    R"("num_attention_heads":4,"num_key_value_heads":3})",
                "not a multiple of num_key_value_heads");
    expectError(R"({"model_type":"llama",)" + base +
                    R"("num_attention_heads":2,"hidden_act":"gelu"})",
                "hidden_act");
    expectError(R"({"model_type":"llama",)" + base +
                    R"("num_attention_heads":2,"rope_scaling":{"type":"yarn","factor":2}})",
                "'yarn' is not supported");
    expectError(R"({"model_type":"llama",)" + base + R"("num_attention_heads":0})",
                "must be positive");
    expectError(
        R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":3,"n_positions":4})",
        "not divisible");
    expectError(R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2})",
                "'n_positions'");
    // GPT-2's attention-scaling variants gave other logits without a word.
    const std::string gpt2 =
        R"({"model_type":"gpt2","vocab_size":10,"n_embd":8,"n_layer":1,"n_head":2,"n_positions":4,)";
    expectError(gpt2 + R"("scale_attn_by_inverse_layer_idx":true})",
                "'scale_attn_by_inverse_layer_idx' true");
    expectError(gpt2 + R"("scale_attn_weights":false})", "'scale_attn_weights' false");
    // Sizes far past any model's are refused before a byte is allocated; so are epsilons, rotary
    // bases and factors that are not positive, and token ids outside the vocabulary.
    const std::string llama = R"({"model_type":"llama","vocab_size":10,"intermediate_size":16,)";
    expectError(llama +
                    R"("hidden_size":1000000000000,"num_hidden_layers":1,"num_attention_heads":2})",
                "key 'hidden_size' is 1000000000000, more than the 262144 any model has");
    expectError(llama + R"("hidden_size":8,"num_hidden_layers":1000000,"num_attention_heads":2})",
                "key 'num_hidden_layers' is 1000000");
    const std::string ok =
        llama + R"("hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,)";
    expectError(ok + R"("rms_norm_eps":-1.0})", "key 'rms_norm_eps' must be a positive number");
    expectError(ok + R"("rope_theta":0})", "key 'rope_theta' must be a positive number");
    expectError(ok + R"("rope_scaling":{"type":"linear","factor":0}})",
                "key 'factor' must be a positive number");
    expectError(ok + R"("bos_token_id":99999})",
                "key 'bos_token_id' holds token id 99999, outside vocab_size 10");
    expectError(ok + R"("eos_token_id":[2,-7]})", "key 'eos_token_id' holds token id -7");
    try {
        tb::loadModelConfig("/nonexistent/model");
        QFAIL("missing folder accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("/nonexistent/model: not found") != std::string::npos);
    }
}

QTEST_GUILESS_MAIN(TestConfig)
#include "test_config.moc"
