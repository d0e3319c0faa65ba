// Interop: LoRA trainable-parameter counts from config.json alone equal PEFT's on the real
// architectures (built by transformers on the meta device, so no weights are needed), trainable
// tokens included (the EOS ids of config.json for "auto", or ids given).
#include "model/config.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "train/train_config.h"

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
    };
    return all;
}

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
};

QTEST_GUILESS_MAIN(TestPeftCounts)
#include "test_peft_counts.moc"
