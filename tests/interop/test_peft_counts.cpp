// Interop: LoRA trainable-parameter counts from config.json alone equal PEFT's on the real
// architectures (built by transformers on the meta device, so no weights are needed), trainable
// tokens included (the EOS ids of config.json for "auto", or ids given), and the default LoRA
// targets of every architecture are PEFT's own.
#include "oracle_util.h"

#include "model/config.h"
#include "peft/defaults.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "train/train_config.h"
#include "util/file_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

struct Case {
    const char* name;
    const char* config;
    int rank;
    std::vector<std::string> targets;
    std::vector<int64_t> tokens = {};  // trainable_tokens; empty: auto
};

const std::vector<Case>& cases()
{
    static const std::vector<Case> all = {
        {"gpt2-c_attn", "gpt2.json", 8, {"c_attn"}},
        {"gpt2-all", "gpt2.json", 16, {"c_attn", "c_proj", "c_fc"}},
        {"tinyllama-qv", "tinyllama-1.1b.json", 8, {"q_proj", "v_proj"}},
        {"tinyllama-all",
         "tinyllama-1.1b.json",
         4,
         {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"}},
        {"qwen2.5-qkvo", "qwen2.5-0.5b.json", 32, {"q_proj", "k_proj", "v_proj", "o_proj"}},
        {"qwen2.5-chat-rows",
         "qwen2.5-0.5b.json",
         8,
         {"q_proj", "v_proj"},
         {151644, 151645}},  // <|im_start|>, <|im_end|>
        {"llama-3.1-8b-mlp", "llama-3.1-8b.json", 8, {"gate_proj", "up_proj", "down_proj"}},
        {"gemma-3-270m-all",
         "gemma-3-270m.json",
         8,
         {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
        // Phi-3's fused layers: q, k, v as qkv_proj, gate and up as gate_up_proj.
        {"phi-3-mini-qkvo", "phi-3-mini-4k.json", 16, {"qkv_proj", "o_proj"}},
        {"phi-3-mini-all",
         "phi-3-mini-4k.json",
         8,
         {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head"}},
    };
    return all;
}

// Tiny configs of the architectures tests/data/configs has no real model of.
const std::pair<const char*, const char*> kTinyConfigs[] = {
    {"mistral", R"({"model_type": "mistral", "architectures": ["MistralForCausalLM"],
        "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256,
        "sliding_window": 128})"},
    {"qwen3", R"({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
        "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "max_position_embeddings": 256, "tie_word_embeddings": true})"},
};

}  // namespace

class TestPeftCounts : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchPeft()
    {
        if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
            QSKIP("the Python oracle venv is missing (run scripts/setup)");
        QTemporaryDir dir;
        auto runOf = [](const Case& c) {
            tb::TrainConfig run;
            run.method = tb::Method::Lora;
            run.lora.rank = c.rank;
            run.lora.targets = c.targets;
            if (!c.tokens.empty()) {
                run.trainableTokens.automatic = false;
                for (int64_t id : c.tokens)
                    run.trainableTokens.tokens.push_back({id, ""});
            }
            return run;
        };
        auto configOf = [](const Case& c) {
            return tb::loadModelConfig(std::string(TB_SOURCE_DIR "/tests/data/configs/") +
                                       c.config);
        };
        nlohmann::json input = nlohmann::json::array();
        int withRows = 0;
        for (const auto& c : cases()) {
            const auto ids = tb::trainableTokenIds(configOf(c), runOf(c));
            withRows += ids.empty() ? 0 : 1;
            input.push_back(
                {{"name", c.name},
                 {"config", std::string(TB_SOURCE_DIR "/tests/data/configs/") + c.config},
                 {"rank", c.rank},
                 {"targets", c.targets},
                 {"token_indices", ids}});
        }
        QVERIFY(withRows >= 4);  // tied (gpt2, qwen2.5) and untied (tinyllama, llama 3.1) heads
        const std::string file = dir.filePath(QStringLiteral("cases.json")).toStdString();
        std::ofstream(file) << input.dump();
        QProcess p;
        p.start(QStringLiteral(TB_PYTHON),
                {QStringLiteral(TB_SOURCE_DIR "/tests/interop/peft_counts.py"),
                 QString::fromStdString(file)});
        QVERIFY(p.waitForFinished(300000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto oracle = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        for (const auto& c : cases()) {
            const auto model = configOf(c);
            const tb::TrainConfig run = runOf(c);
            const auto& want = oracle.at(c.name);
            QVERIFY2(tb::parameterCount(model) == want.at("base").get<int64_t>(), c.name);
            QVERIFY2(tb::trainableParameterCount(model, run) == want.at("trainable").get<int64_t>(),
                     qPrintable(QStringLiteral("%1: ours %2, PEFT %3")
                                    .arg(QLatin1String(c.name))
                                    .arg(tb::trainableParameterCount(model, run))
                                    .arg(want.at("trainable").get<int64_t>())));
        }
    }
    // defaultLoraTargets equals peft's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for every
    // architecture Tunebench loads, and a LoRA run naming no targets trains what PEFT's does.
    void defaultTargetsArePeftsOwn()
    {
        if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
            QSKIP("the Python oracle venv is missing (run scripts/setup)");
        QTemporaryDir dir;
        std::vector<std::pair<std::string, std::string>> configs;  // name, config.json path
        for (const char* file :
             {"gpt2.json", "tinyllama-1.1b.json", "qwen2.5-0.5b.json", "gemma-3-270m.json"})
            configs.emplace_back(file, std::string(TB_SOURCE_DIR "/tests/data/configs/") + file);
        for (const auto& [name, json] : kTinyConfigs) {
            const std::string path = dir.filePath(QLatin1String(name)).toStdString() + ".json";
            tb::writeFileAtomic(path, json);
            configs.emplace_back(name, path);
        }
        const auto architectures = {tb::Architecture::Llama,  tb::Architecture::Mistral,
                                    tb::Architecture::Qwen2,  tb::Architecture::Qwen3,
                                    tb::Architecture::Gemma3, tb::Architecture::Gpt2};
        nlohmann::json input = {{"model_types", nlohmann::json::array()},
                                {"configs", nlohmann::json::array()}};
        for (tb::Architecture a : architectures)
            input["model_types"].push_back(tb::architectureName(a));
        input["model_types"].push_back("smollm3");
        input["model_types"].push_back("phi3");
        for (const auto& [name, path] : configs)
            input["configs"].push_back({{"name", name}, {"config", path}, {"rank", 8}});
        const QString cases = dir.filePath(QStringLiteral("cases.json"));
        tb::writeFileAtomic(cases.toStdString(), input.dump());
        QString error;
        const QByteArray out =
            tbtest::runOracleScript(QStringLiteral("peft_defaults.py"), {cases}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const auto oracle = nlohmann::json::parse(out.toStdString());
        for (tb::Architecture a : architectures) {
            const auto& want = oracle.at("mapping").at(tb::architectureName(a));
            QVERIFY2(!want.is_null(), tb::architectureName(a));
            QVERIFY2(tb::defaultLoraTargets(a) == want.get<std::vector<std::string>>(),
                     qPrintable(QStringLiteral("%1: PEFT's %2")
                                    .arg(QLatin1String(tb::architectureName(a)),
                                         QString::fromStdString(want.dump()))));
        }
        // PEFT's table has no smollm3 (it asks for target_modules); Tunebench takes Llama's, the
        // layout SmolLM3 shares.
        QVERIFY(oracle.at("mapping").at("smollm3").is_null());
        QVERIFY(tb::defaultLoraTargets(tb::Architecture::SmolLM3) ==
                tb::defaultLoraTargets(tb::Architecture::Llama));
        // Nor phi3: Tunebench takes its fused qkv_proj, the layer that holds Llama's q and v.
        QVERIFY(oracle.at("mapping").at("phi3").is_null());
        QVERIFY(tb::defaultLoraTargets(tb::Architecture::Phi3) ==
                std::vector<std::string>{"qkv_proj"});
        for (const auto& [name, path] : configs) {
            const tb::ModelConfig model = tb::loadModelConfig(path);
            const auto& want = oracle.at("resolved").at(name);
            QCOMPARE(want.at("model_type").get<std::string>(), model.modelType);
            tb::TrainConfig run;
            run.method = tb::Method::Lora;
            run.lora.rank = 8;
            run.trainableTokens.automatic = false;  // PEFT's default LoRA trains no token rows
            auto ours = tb::resolvedLoraTargets(model, run.lora);
            std::sort(ours.begin(), ours.end());
            QVERIFY2(ours == want.at("targets").get<std::vector<std::string>>(), name.c_str());
            QCOMPARE(tb::trainableParameterCount(model, run), want.at("trainable").get<int64_t>());
        }
    }
};

QTEST_GUILESS_MAIN(TestPeftCounts)
#include "test_peft_counts.moc"
