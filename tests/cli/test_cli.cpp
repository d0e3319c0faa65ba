// The tunebench CLI contract (JSON shapes other parts rely on) and its error behaviour: one clear
// line on stderr naming the file and problem, non-zero exit, no crash.
#include "export/gguf.h"
#include "test_util.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/file_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

const QString kBundled = QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k");

struct Run {
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QByteArray out, err;
};

Run tunebench(const QStringList& args)
{
    QProcess p;
    p.start(QStringLiteral(TB_BINARY_DIR "/bin/tunebench"), args);
    Run r;
    if (!p.waitForFinished(120000))
        return r;
    r.exitCode = p.exitCode();
    r.status = p.exitStatus();
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

nlohmann::json jsonOf(const Run& r)
{
    return nlohmann::json::parse(r.out.toStdString());
}

}  // namespace

class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void info();
    void tokenize();
    void generate();
    void convert();
    void bench();
    void trainResumeExport();
    void templateRender();
    void errors_data();
    void errors();

private:
    QTemporaryDir m_dir;
};

void TestCli::info()
{
    for (const QString& path : {kBundled, kBundled + QStringLiteral("/config.json")}) {
        Run r = tunebench(
            {QStringLiteral("info"), QStringLiteral("--model"), path, QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 0);
        auto j = jsonOf(r);
        QCOMPARE(j["architecture"].get<std::string>(), std::string("llama"));
        QCOMPARE(j["parameters"].get<int64_t>(), int64_t(260032));
        QCOMPARE(j["layers"].get<int>(), 5);
        QCOMPARE(j["hidden_size"].get<int>(), 64);
        QCOMPARE(j["vocab_size"].get<int>(), 512);
        QCOMPARE(j["dtype"].get<std::string>(), std::string("float32"));
    }
    // A bare config.json of a model whose weights are not here.
    Run r = tunebench({QStringLiteral("info"), QStringLiteral("--model"),
                       QStringLiteral(TB_SOURCE_DIR "/tests/data/configs/tinyllama-1.1b.json"),
                       QStringLiteral("--json")});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(jsonOf(r)["parameters"].get<int64_t>(), int64_t(1100048384));
    QCOMPARE(jsonOf(r)["context"].get<int64_t>(), int64_t(2048));
    QCOMPARE(jsonOf(r)["sliding_window"].get<int64_t>(), int64_t(0));
    // Sliding windows: the layers they apply to, beside the context they do not shorten.
    auto windowed =
        nlohmann::json::parse(tb::readFile(TB_SOURCE_DIR "/tests/data/configs/qwen2.5-0.5b.json"));
    windowed["use_sliding_window"] = true;
    windowed["sliding_window"] = 512;
    windowed["max_window_layers"] = 20;
    const QString file = m_dir.filePath(QStringLiteral("windowed-config.json"));
    tb::writeFileAtomic(file.toStdString(), windowed.dump());
    Run text = tunebench({QStringLiteral("info"), QStringLiteral("--model"), file});
    QCOMPARE(text.exitCode, 0);
    QVERIFY2(text.out.contains("context       32768\nsliding window 512 (layers 20-23)\n"),
             text.out.constData());
    QVERIFY(!text.out.contains("no rotary"));
    // SmolLM3: the layers without a rotary embedding (every fourth by default).
    nlohmann::json smol = windowed;
    smol["model_type"] = "smollm3";
    smol["num_hidden_layers"] = 8;
    for (const char* key : {"use_sliding_window", "sliding_window", "max_window_layers"})
        smol.erase(key);
    const QString smolFile = m_dir.filePath(QStringLiteral("smollm3-config.json"));
    tb::writeFileAtomic(smolFile.toStdString(), smol.dump());
    Run nope = tunebench({QStringLiteral("info"), QStringLiteral("--model"), smolFile});
    QCOMPARE(nope.exitCode, 0);
    QVERIFY2(nope.out.contains("no rotary     layers 3, 7 (NoPE)\n"), nope.out.constData());
    Run nopeJson = tunebench(
        {QStringLiteral("info"), QStringLiteral("--model"), smolFile, QStringLiteral("--json")});
    QCOMPARE(jsonOf(nopeJson)["no_rope_layers"], nlohmann::json({3, 7}));
    QVERIFY(!nope.out.contains("rotary        "));
    // Phi-4-mini's layout: three quarters of each head rotate, LongRoPE.
    nlohmann::json phi =
        nlohmann::json::parse(tb::readFile(TB_SOURCE_DIR "/tests/data/configs/phi-3-mini-4k.json"));
    phi["partial_rotary_factor"] = 0.75;
    phi["max_position_embeddings"] = 131072;
    phi["rope_scaling"] = {{"type", "longrope"},
                           {"short_factor", std::vector<double>(36, 1.0)},
                           {"long_factor", std::vector<double>(36, 4.0)}};
    const QString phiFile = m_dir.filePath(QStringLiteral("phi-config.json"));
    tb::writeFileAtomic(phiFile.toStdString(), phi.dump());
    Run rotary = tunebench({QStringLiteral("info"), QStringLiteral("--model"), phiFile});
    QCOMPARE(rotary.exitCode, 0);
    QVERIFY2(rotary.out.contains("architecture  phi3\n"), rotary.out.constData());
    QVERIFY2(rotary.out.contains("sliding window 2047 (every layer)\n"), rotary.out.constData());
    QVERIFY2(rotary.out.contains("rotary        72 of 96 dims per head; longrope (original "
                                 "context 4096, x32, cos/sin x1.19)\n"),
             rotary.out.constData());
    Run rotaryJson = tunebench(
        {QStringLiteral("info"), QStringLiteral("--model"), phiFile, QStringLiteral("--json")});
    QCOMPARE(jsonOf(rotaryJson)["rotary_dim"].get<int64_t>(), int64_t(72));
    QCOMPARE(jsonOf(rotaryJson)["rope_scaling"].get<std::string>(), std::string("longrope"));
    QCOMPARE(jsonOf(rotaryJson)["parameters"].get<int64_t>(), int64_t(3821079552));
}

void TestCli::tokenize()
{
    Run r = tunebench({QStringLiteral("tokenize"), QStringLiteral("--model"), kBundled,
                       QStringLiteral("--text"), QStringLiteral("Once upon a time"),
                       QStringLiteral("--json")});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(jsonOf(r)["ids"].get<std::vector<int>>(), (std::vector<int>{1, 403, 407, 261, 378}));
}

void TestCli::generate()
{
    Run r = tunebench({QStringLiteral("generate"), QStringLiteral("--model"), kBundled,
                       QStringLiteral("--prompt"), QStringLiteral("Once upon a time"),
                       QStringLiteral("--max-new-tokens"), QStringLiteral("92"),
                       QStringLiteral("--greedy"), QStringLiteral("--json")});
    QCOMPARE(r.exitCode, 0);
    auto j = jsonOf(r);
    QCOMPARE(j["prompt_ids"].get<std::vector<int>>(), (std::vector<int>{1, 403, 407, 261, 378}));
    QCOMPARE(j["generated_ids"].size(), size_t(92));
    QVERIFY(j["text"].get<std::string>().rfind(", there was a little girl named Lily.", 0) == 0);
    QVERIFY(j["text"].get<std::string>().find("Lily was sad and didn't") != std::string::npos);

    // Streaming text mode prints the prompt and the continuation.
    Run text = tunebench({QStringLiteral("generate"), QStringLiteral("--prompt"),
                          QStringLiteral("Once upon a time"), QStringLiteral("--max-new-tokens"),
                          QStringLiteral("10"), QStringLiteral("--greedy")});
    QCOMPARE(text.exitCode, 0);
    QVERIFY(text.out.startsWith("Once upon a time, there was a little girl"));
    // The answer's first token keeps its space after the prompt ("Once upon", not "Onceupon");
    // the JSON text stays the continuation alone, as transformers decodes it.
    text = tunebench({QStringLiteral("generate"), QStringLiteral("--prompt"),
                      QStringLiteral("Once"), QStringLiteral("--max-new-tokens"),
                      QStringLiteral("3"), QStringLiteral("--greedy")});
    QCOMPARE(text.exitCode, 0);
    QVERIFY2(text.out.startsWith("Once upon a"), text.out.constData());
}

void TestCli::convert()
{
    const QString out = m_dir.filePath(QStringLiteral("conv"));
    Run r = tunebench({QStringLiteral("convert"), QStringLiteral("llama2c"),
                       QStringLiteral("--checkpoint"),
                       QStringLiteral(TB_SOURCE_DIR "/tests/data/llama2c/stories260K.bin"),
                       QStringLiteral("--tokenizer"),
                       QStringLiteral(TB_SOURCE_DIR "/tests/data/llama2c/tok512.bin"),
                       QStringLiteral("--out"), out, QStringLiteral("--json")});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(jsonOf(r)["parameters"].get<int64_t>(), int64_t(260032));
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.model",
                          "tokenizer_config.json", "generation_config.json"})
        QVERIFY2(QFileInfo::exists(out + QLatin1Char('/') + QLatin1String(f)), f);
}

void TestCli::bench()
{
    Run r = tunebench({QStringLiteral("bench"), QStringLiteral("generate"),
                       QStringLiteral("--model"), kBundled, QStringLiteral("--prompt-tokens"),
                       QStringLiteral("16"), QStringLiteral("--new-tokens"), QStringLiteral("8"),
                       QStringLiteral("--repeats"), QStringLiteral("1"), QStringLiteral("--json")});
    QCOMPARE(r.exitCode, 0);
    auto j = jsonOf(r)["results"][0];
    QVERIFY(j["prefill_tokens_per_s"].get<double>() > 0);
    QVERIFY(j["decode_tokens_per_s"].get<double>() > 0);
    QCOMPARE(j["parameters"].get<int64_t>(), int64_t(260032));

    // Batched: a file of prompts (ids or text), every row --new-tokens long whatever the batch.
    const QString prompts = m_dir.filePath(QStringLiteral("prompts.jsonl"));
    tb::writeFileAtomic(prompts.toStdString(), "{\"ids\": [1, 403, 407]}\n{\"text\": \"Once upon "
                                               "a time\"}\n\n{\"ids\": [1, 5, 9, 12, 40]}\n");
    auto batched = [&](const char* batch) {
        Run b = tunebench({QStringLiteral("bench"), QStringLiteral("generate"),
                           QStringLiteral("--prompts"), prompts, QStringLiteral("--batch"),
                           QLatin1String(batch), QStringLiteral("--new-tokens"),
                           QStringLiteral("6"), QStringLiteral("--json")});
        if (b.exitCode != 0)
            qWarning("%s", b.err.constData());
        return b.exitCode == 0 ? jsonOf(b) : nlohmann::json();
    };
    auto three = batched("3");
    auto one = batched("1");
    QCOMPARE(three["generated_tokens"].get<int64_t>(), int64_t(18));
    QCOMPARE(three["prompt_tokens"].get<int64_t>(), int64_t(3 + 5 + 5));  // BOS + 4 pieces
    QVERIFY(three["tokens_per_s"].get<double>() > 0);
    QCOMPARE(three["tokens"], one["tokens"]);
    tb::writeFileAtomic(prompts.toStdString(), "{\"ids\": [1]}\n{\"prompt\": 3}\n");
    Run bad = tunebench({QStringLiteral("bench"), QStringLiteral("generate"),
                         QStringLiteral("--prompts"), prompts});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains("prompts.jsonl:2: expected {\"ids\""), bad.err.constData());
    // Token ids are integers: 1.5 was read as 1, a string gave a bare JSON type error.
    for (const char* ids : {"[1, 1.5]", "[\"a\"]", "[]"}) {
        tb::writeFileAtomic(prompts.toStdString(),
                            "{\"ids\": [1]}\n{\"ids\": " + std::string(ids) + "}\n");
        bad = tunebench({QStringLiteral("bench"), QStringLiteral("generate"),
                         QStringLiteral("--prompts"), prompts});
        QCOMPARE(bad.exitCode, 1);
        QVERIFY2(bad.err.contains("prompts.jsonl:2: 'ids'"), bad.err.constData());
    }
    // A negative seed is refused (it wrapped to 2^64 - 1).
    bad = tunebench({QStringLiteral("generate"), QStringLiteral("--prompt"), QStringLiteral("Once"),
                     QStringLiteral("--seed"), QStringLiteral("-1")});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains("option --seed is -1 (must be at least 0)"), bad.err.constData());
    // A prompt past the context is refused (a prefill of 10^5 tokens never ended).
    bad = tunebench({QStringLiteral("bench"), QStringLiteral("generate"), QStringLiteral("--model"),
                     kBundled, QStringLiteral("--prompt-tokens"), QStringLiteral("100000"),
                     QStringLiteral("--new-tokens"), QStringLiteral("2")});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains("--prompt-tokens 100000 + --new-tokens 2 exceed") &&
                 bad.err.contains("context (512)"),
             bad.err.constData());
}

void TestCli::trainResumeExport()
{
    const QString runs = m_dir.filePath(QStringLiteral("runs"));
    Run r = tunebench({QStringLiteral("train"), QStringLiteral("--config"),
                       QStringLiteral(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json"),
                       QStringLiteral("max_steps=4"), QStringLiteral("output_dir=") + runs,
                       QStringLiteral("name=cli"), QStringLiteral("log_every=2"),
                       QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QVERIFY(lines.size() > 3);  // the precision path, progress lines, then the summary
    QCOMPARE(lines[0], QByteArray("precision: fp32"));
    QVERIFY(lines[1].startsWith("eval step 0") || lines[1].startsWith("step "));
    auto j = nlohmann::json::parse(lines.last().toStdString());
    for (const char* key : {"run_dir", "steps", "initial_loss", "final_loss", "val_loss",
                            "trainable_parameters", "tokens_per_second", "peak_memory_bytes"})
        QVERIFY2(j.contains(key), key);
    QCOMPARE(j["steps"].get<int>(), 4);
    QCOMPARE(j["trainable_parameters"].get<int64_t>(), int64_t(46240 + 64));  // + the </s> row
    // The held-out stop probe: 16 validation conversations answered greedily.
    QCOMPARE(j["stop_rate"]["prompts"].get<int>(), 16);
    QVERIFY(j["stop_rate"]["stopped"].get<int>() >= 0 &&
            j["stop_rate"]["stopped"].get<int>() <= 16);
    QVERIFY(j["final_loss"].get<double>() < j["initial_loss"].get<double>());
    const QString runDir = QString::fromStdString(j["run_dir"].get<std::string>());

    // A finished run resumes to nothing more; a second run under the same name is refused.
    Run again = tunebench({QStringLiteral("train"), QStringLiteral("--config"),
                           QStringLiteral(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json"),
                           QStringLiteral("output_dir=") + runs, QStringLiteral("name=cli")});
    QVERIFY(again.exitCode != 0);
    QVERIFY2(again.err.contains("a run with this name exists"), again.err.constData());
    Run resumed = tunebench(
        {QStringLiteral("train"), QStringLiteral("--resume"), runDir, QStringLiteral("--json")});
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    QCOMPARE(nlohmann::json::parse(resumed.out.trimmed().split('\n').last().toStdString())["steps"]
                 .get<int>(),
             4);

    for (const char* format : {"peft", "merged"}) {
        const QString out = m_dir.filePath(QStringLiteral("export-") + QLatin1String(format));
        Run e = tunebench({QStringLiteral("export"), QStringLiteral("--run"), runDir,
                           QStringLiteral("--format"), QLatin1String(format),
                           QStringLiteral("--out"), out, QStringLiteral("--json")});
        QVERIFY2(e.exitCode == 0, e.err.constData());
        QVERIFY(QFileInfo::exists(out + (QLatin1String(format) == QLatin1String("peft")
                                             ? QStringLiteral("/adapter_model.safetensors")
                                             : QStringLiteral("/model.safetensors"))));
    }
    // The GGUF formats: the JSON names the format, dtype and size; the adapter is a fraction of the
    // base.
    int64_t adapterBytes = 0, baseBytes = 0;
    for (const char* format : {"gguf-lora", "gguf-base"}) {
        const QString out = m_dir.filePath(QStringLiteral("export-") + QLatin1String(format) +
                                           QStringLiteral(".gguf"));
        Run e = tunebench({QStringLiteral("export"), QStringLiteral("--run"), runDir,
                           QStringLiteral("--format"), QLatin1String(format),
                           QStringLiteral("--out"), out, QStringLiteral("--dtype"),
                           QStringLiteral("f16"), QStringLiteral("--json")});
        QVERIFY2(e.exitCode == 0, e.err.constData());
        const auto x = nlohmann::json::parse(e.out.trimmed().toStdString());
        QCOMPARE(x["format"].get<std::string>(), std::string(format));
        QCOMPARE(x["dtype"].get<std::string>(), std::string("f16"));
        QCOMPARE(x["bytes"].get<int64_t>(), int64_t(QFileInfo(out).size()));
        (QLatin1String(format) == QLatin1String("gguf-lora") ? adapterBytes : baseBytes) =
            x["bytes"].get<int64_t>();
    }
    QVERIFY(adapterBytes > 0 && adapterBytes < baseBytes / 2);
    // The merged GGUF carries the template the run trained with (alpaca, as its Jinja equivalent)
    // as tokenizer.chat_template, so llama.cpp serves the format the model learned.
    const QString merged = m_dir.filePath(QStringLiteral("export-merged.gguf"));
    Run mergedGguf =
        tunebench({QStringLiteral("export"), QStringLiteral("--run"), runDir,
                   QStringLiteral("--format"), QStringLiteral("gguf"), QStringLiteral("--out"),
                   merged, QStringLiteral("--force"), QStringLiteral("--json")});
    QVERIFY2(mergedGguf.exitCode == 0, mergedGguf.err.constData());
    QCOMPARE(tb::readGgufSummary(merged.toStdString()).metadata.at("tokenizer.chat_template"),
             tb::familyJinja(tb::ChatTemplateFamily::Alpaca));
    // A model folder straight to GGUF, without a run: the bundled model, named after its folder.
    const QString converted = m_dir.filePath(QStringLiteral("stories.gguf"));
    Run conv =
        tunebench({QStringLiteral("convert"), QStringLiteral("gguf"), QStringLiteral("--model"),
                   QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k"),
                   QStringLiteral("--out"), converted, QStringLiteral("--json")});
    QVERIFY2(conv.exitCode == 0, conv.err.constData());
    const auto cj = nlohmann::json::parse(conv.out.trimmed().toStdString());
    QCOMPARE(cj.at("tensors").get<int64_t>(), int64_t(47));  // 2 + 9 per block x 5, the head tied
    const tb::GgufSummary summary = tb::readGgufSummary(converted.toStdString());
    QCOMPARE(summary.metadata.at("general.name"), std::string("stories260k"));
    QCOMPARE(summary.metadata.at("general.architecture"), std::string("llama"));
    QVERIFY(!summary.metadata.count("tokenizer.chat_template"));  // the folder has none
    QCOMPARE(int64_t(summary.fileSize), cj.at("bytes").get<int64_t>());
    // `info` reads a GGUF file's header: the converted model, and the LoRA adapter exported above.
    Run info = tunebench(
        {QStringLiteral("info"), QStringLiteral("--model"), converted, QStringLiteral("--json")});
    QVERIFY2(info.exitCode == 0, info.err.constData());
    const auto ij = nlohmann::json::parse(info.out.trimmed().toStdString());
    QCOMPARE(ij.at("architecture").get<std::string>(), std::string("llama"));
    QCOMPARE(ij.at("type").get<std::string>(), std::string("model"));
    QCOMPARE(ij.at("tensor_count").get<int64_t>(), int64_t(47));
    QCOMPARE(ij.at("tensor_types").at("F32").get<int64_t>(), int64_t(47));
    Run adapterInfo = tunebench({QStringLiteral("info"), QStringLiteral("--model"),
                                 m_dir.filePath(QStringLiteral("export-gguf-lora.gguf"))});
    QVERIFY2(adapterInfo.exitCode == 0, adapterInfo.err.constData());
    QVERIFY2(adapterInfo.out.contains("type          adapter") && adapterInfo.out.contains("F16"),
             adapterInfo.out.constData());
    Run badOut =
        tunebench({QStringLiteral("convert"), QStringLiteral("gguf"), QStringLiteral("--model"),
                   QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k"),
                   QStringLiteral("--out"), m_dir.filePath(QStringLiteral("stories.bin"))});
    QVERIFY(badOut.exitCode != 0);
    QVERIFY2(badOut.err.contains("ending in .gguf"), badOut.err.constData());

    // Q8_0: the JSON says what the quantisation costs on the validation set, and which matrices
    // stayed f16.
    Run q8 = tunebench({QStringLiteral("export"), QStringLiteral("--run"), runDir,
                        QStringLiteral("--format"), QStringLiteral("gguf"), QStringLiteral("--out"),
                        m_dir.filePath(QStringLiteral("q8.gguf")), QStringLiteral("--dtype"),
                        QStringLiteral("q8_0"), QStringLiteral("--json")});
    QVERIFY2(q8.exitCode == 0, q8.err.constData());
    const auto qj = nlohmann::json::parse(q8.out.trimmed().toStdString());
    QVERIFY(qj.at("quantization").at("tokens").get<int64_t>() > 0);
    QVERIFY(qj.at("quantization").at("loss_q8_0").get<double>() !=
            qj.at("quantization").at("loss_fp32").get<double>());
    QCOMPARE(qj.at("warnings").size(), size_t(5));  // stories260k's five ffn_down (rows of 172)
    QVERIFY(qj.at("warnings").at(0).get<std::string>().find("ffn_down") != std::string::npos);
    Run dtype = tunebench({QStringLiteral("export"), QStringLiteral("--run"), runDir,
                           QStringLiteral("--format"), QStringLiteral("peft"),
                           QStringLiteral("--out"), m_dir.filePath(QStringLiteral("x")),
                           QStringLiteral("--dtype"), QStringLiteral("f16")});
    QVERIFY(dtype.exitCode != 0);
    QVERIFY2(dtype.err.contains("--dtype applies to the GGUF formats only"), dtype.err.constData());

    // The merged folder is a model the CLI loads like any other.
    Run g = tunebench({QStringLiteral("generate"), QStringLiteral("--model"),
                       m_dir.filePath(QStringLiteral("export-merged")), QStringLiteral("--prompt"),
                       QStringLiteral("Tell"), QStringLiteral("--max-new-tokens"),
                       QStringLiteral("4"), QStringLiteral("--json")});
    QVERIFY2(g.exitCode == 0, g.err.constData());

    // Bad config values stop before training with the key named.
    Run bad = tunebench({QStringLiteral("train"), QStringLiteral("--config"),
                         QStringLiteral(TB_SOURCE_DIR "/datasets/examples/lora-tiny.json"),
                         QStringLiteral("lora.rank=0"), QStringLiteral("output_dir=") + runs,
                         QStringLiteral("name=bad")});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains("lora.rank"), bad.err.constData());
    QVERIFY(!QFileInfo::exists(runs + QStringLiteral("/bad/run.json")));
}

// `template render` and `generate --chat`: the text, ids and loss mask training sees, through a
// real template (Qwen2.5's, with the GPT-2 tokenizer plus its markers) and through a family.
void TestCli::templateRender()
{
    using nlohmann::json;
    const QString model = m_dir.filePath(QStringLiteral("qwen-like"));
    QDir().mkpath(model);
    json config = json::parse(
        tb::readFile(TB_SOURCE_DIR
                     "/tests/data/chat_templates/Qwen--Qwen2.5-7B-Instruct/tokenizer_config.json"));
    config.erase("template_special_tokens");
    {
        QFile f(model + QStringLiteral("/tokenizer.json"));
        f.open(QIODevice::WriteOnly);
        f.write(QByteArray::fromStdString(tbtest::chatmlGpt2TokenizerJson()));
        QFile c(model + QStringLiteral("/tokenizer_config.json"));
        c.open(QIODevice::WriteOnly);
        c.write(QByteArray::fromStdString(config.dump()));
        QFile m(m_dir.filePath(QStringLiteral("chat.json")));
        m.open(QIODevice::WriteOnly);
        m.write(R"({"messages": [{"role": "user", "content": "Hi"},
                                 {"role": "assistant", "content": "Hello there!"}]})");
    }
    const QString messages = m_dir.filePath(QStringLiteral("chat.json"));
    Run r =
        tunebench({QStringLiteral("template"), QStringLiteral("render"), QStringLiteral("--model"),
                   model, QStringLiteral("--messages"), messages, QStringLiteral("--json")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    json j = jsonOf(r);
    const std::string text = j["text"];
    QVERIFY2(text.starts_with("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud."),
             text.c_str());
    QVERIFY(text.ends_with("<|im_start|>assistant\nHello there!<|im_end|>\n"));
    const auto ids = j["ids"].get<std::vector<int32_t>>();
    const auto mask = j["loss_mask"].get<std::vector<int>>();
    QCOMPARE(ids.size(), mask.size());
    const auto tok = tb::loadTokenizer(model.toStdString());
    QCOMPARE(ids, tok->encode(text, false));
    std::vector<int32_t> masked;
    for (size_t i = 0; i < ids.size(); ++i)
        if (mask[i])
            masked.push_back(ids[i]);
    QCOMPARE(tok->decode(masked, false), std::string("Hello there!<|im_end|>"));

    Run prompt =
        tunebench({QStringLiteral("template"), QStringLiteral("render"), QStringLiteral("--model"),
                   model, QStringLiteral("--messages"), messages,
                   QStringLiteral("--add-generation-prompt"), QStringLiteral("--json")});
    QVERIFY2(prompt.exitCode == 0, prompt.err.constData());
    QVERIFY(
        jsonOf(prompt)["text"].get<std::string>().ends_with("<|im_end|>\n<|im_start|>assistant\n"));

    // Qwen3's template renders an earlier answer differently once a user turn follows, so no
    // loss mask can be placed: the conversation still renders (it stopped with the mask's error).
    const QString qwen3 = m_dir.filePath(QStringLiteral("qwen3-like"));
    QDir().mkpath(qwen3);
    json config3 = json::parse(tb::readFile(
        TB_SOURCE_DIR "/tests/data/chat_templates/Qwen--Qwen3-0.6B/tokenizer_config.json"));
    config3.erase("template_special_tokens");
    tb::writeFileAtomic((qwen3 + QStringLiteral("/tokenizer.json")).toStdString(),
                        tbtest::chatmlGpt2TokenizerJson());
    tb::writeFileAtomic((qwen3 + QStringLiteral("/tokenizer_config.json")).toStdString(),
                        config3.dump());
    const QString multi = m_dir.filePath(QStringLiteral("multi.json"));
    tb::writeFileAtomic(multi.toStdString(),
                        R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": )"
                        R"("Hello"}, {"role": "user", "content": "How are you?"}])");
    Run open = tunebench({QStringLiteral("template"), QStringLiteral("render"),
                          QStringLiteral("--model"), qwen3, QStringLiteral("--messages"), multi,
                          QStringLiteral("--add-generation-prompt"), QStringLiteral("--json")});
    QVERIFY2(open.exitCode == 0, open.err.constData());
    const json o = jsonOf(open);
    QVERIFY(o["text"].get<std::string>().ends_with(
        "<|im_start|>user\nHow are you?<|im_end|>\n<|im_start|>assistant\n"));
    QCOMPARE(o["ids"].get<std::vector<int32_t>>(),
             tb::loadTokenizer(qwen3.toStdString())->encode(o["text"], false));
    QVERIFY(o["loss_mask"].is_null());
    QVERIFY2(o["loss_mask_error"].get<std::string>().find("carries loss") != std::string::npos,
             o.dump().c_str());

    // A family on the bundled model: its EOS ends the assistant turn and carries loss.
    Run alpaca = tunebench({QStringLiteral("template"), QStringLiteral("render"),
                            QStringLiteral("--messages"), messages, QStringLiteral("--template"),
                            QStringLiteral("alpaca"), QStringLiteral("--json")});
    QVERIFY2(alpaca.exitCode == 0, alpaca.err.constData());
    j = jsonOf(alpaca);
    QCOMPARE(j["text"].get<std::string>(),
             std::string("### Instruction:\nHi\n\n### Response:\nHello there!</s>"));
    QCOMPARE(j["ids"].back().get<int>(), 2);
    QCOMPARE(j["loss_mask"].back().get<int>(), 1);

    // generate --chat renders the prompt with the template's generation prompt.
    Run chat = tunebench({QStringLiteral("generate"), QStringLiteral("--chat"),
                          QStringLiteral("--template"), QStringLiteral("alpaca"),
                          QStringLiteral("--prompt"), QStringLiteral("Hi"),
                          QStringLiteral("--max-new-tokens"), QStringLiteral("4"),
                          QStringLiteral("--greedy"), QStringLiteral("--json")});
    QVERIFY2(chat.exitCode == 0, chat.err.constData());
    const auto bundled = tb::loadTokenizer(kBundled.toStdString());
    QCOMPARE(jsonOf(chat)["prompt_ids"].get<std::vector<int32_t>>(),
             bundled->encode("### Instruction:\nHi\n\n### Response:\n", true));
}

void TestCli::errors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");  // fragment of the one-line message
    const QString dir = m_dir.path();
    auto write = [&](const QString& name, const QByteArray& bytes) {
        QDir().mkpath(QFileInfo(dir + QLatin1Char('/') + name).path());
        QFile f(dir + QLatin1Char('/') + name);
        f.open(QIODevice::WriteOnly);
        f.write(bytes);
        return dir + QLatin1Char('/') + name;
    };
    QFile config(kBundled + QStringLiteral("/config.json"));
    config.open(QIODevice::ReadOnly);
    const QByteArray configBytes = config.readAll();
    QFile weights(kBundled + QStringLiteral("/model.safetensors"));
    weights.open(QIODevice::ReadOnly);
    const QByteArray weightBytes = weights.readAll();

    write(QStringLiteral("trunc/config.json"), configBytes);
    const QString noRole = write(QStringLiteral("norole.json"), R"([{"content": "Hi"}])");
    QTest::newRow("template message without role")
        << QStringList{QStringLiteral("template"), QStringLiteral("render"),
                       QStringLiteral("--messages"), noRole}
        << QStringLiteral("norole.json: message 1 needs a string 'role'");
    const QString none = write(QStringLiteral("none.json"), R"({"messages": []})");
    QTest::newRow("template without messages")
        << QStringList{QStringLiteral("template"), QStringLiteral("render"),
                       QStringLiteral("--messages"), none}
        << QStringLiteral("none.json: 'messages' is empty");
    const QString chat =
        write(QStringLiteral("chat.json"), R"([{"role": "user", "content": "Hi"}])");
    QTest::newRow("model without a template")
        << QStringList{QStringLiteral("template"), QStringLiteral("render"),
                       QStringLiteral("--messages"), chat}
        << QStringLiteral("has no chat template");
    QTest::newRow("unknown template family")
        << QStringList{QStringLiteral("template"),   QStringLiteral("render"),
                       QStringLiteral("--messages"), chat,
                       QStringLiteral("--template"), QStringLiteral("vicuna")}
        << QStringLiteral("option --template 'vicuna'");
    write(QStringLiteral("trunc/model.safetensors"), weightBytes.left(weightBytes.size() / 2));
    write(QStringLiteral("garbage/config.json"), configBytes);
    write(QStringLiteral("garbage/model.safetensors"),
          QByteArray("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": nonsense}", 24));
    write(QStringLiteral("noweights/config.json"), configBytes);
    write(QStringLiteral("unknown/config.json"),
          QByteArray(R"({"model_type": "falcon", "vocab_size": 10})"));
    write(QStringLiteral("badjson/config.json"), QByteArray("{\"model_type\": \"llama\","));
    QByteArray missingKey = configBytes;
    missingKey.replace("\"num_hidden_layers\"", "\"num_layers_typo\"");
    write(QStringLiteral("missingkey/config.json"), missingKey);

    auto gen = [](const QString& model) {
        return QStringList{
            QStringLiteral("generate"), QStringLiteral("--model"), model,
            QStringLiteral("--prompt"), QStringLiteral("hi"),      QStringLiteral("--json")};
    };
    QTest::newRow("missing folder") << gen(dir + QStringLiteral("/nothing"))
                                    << QStringLiteral("nothing: model folder not found");
    QTest::newRow("truncated safetensors")
        << gen(dir + QStringLiteral("/trunc")) << QStringLiteral("model.safetensors");
    QTest::newRow("garbage header")
        << gen(dir + QStringLiteral("/garbage")) << QStringLiteral("not valid JSON");
    QTest::newRow("no weights") << QStringList{QStringLiteral("generate"),
                                               QStringLiteral("--model"),
                                               dir + QStringLiteral("/noweights"),
                                               QStringLiteral("--prompt"), QStringLiteral("x")}
                                << QStringLiteral("noweights: no model.safetensors");
    QTest::newRow("unknown architecture")
        << QStringList{QStringLiteral("info"), QStringLiteral("--model"),
                       dir + QStringLiteral("/unknown")}
        << QStringLiteral("unknown architecture model_type 'falcon'");
    QTest::newRow("bad json") << QStringList{QStringLiteral("info"), QStringLiteral("--model"),
                                             dir + QStringLiteral("/badjson")}
                              << QStringLiteral("badjson/config.json: not valid JSON");
    QTest::newRow("missing key") << QStringList{QStringLiteral("info"), QStringLiteral("--model"),
                                                dir + QStringLiteral("/missingkey")}
                                 << QStringLiteral("missing required key 'num_hidden_layers'");
    QTest::newRow("unknown command")
        << QStringList{QStringLiteral("frobnicate")} << QStringLiteral("unknown command");
    QTest::newRow("unknown option")
        << QStringList{QStringLiteral("info"), QStringLiteral("--modle"), kBundled}
        << QStringLiteral("unknown option --modle");
    QTest::newRow("bad number") << QStringList{QStringLiteral("generate"),
                                               QStringLiteral("--prompt"), QStringLiteral("x"),
                                               QStringLiteral("--max-new-tokens"),
                                               QStringLiteral("ten")}
                                << QStringLiteral("--max-new-tokens expects an integer");
    // "nan" and "inf" parse as numbers: refused where they would make the logits NaN.
    for (const char* value : {"nan", "inf", "1e999"})
        QTest::addRow("non-finite temperature %s", value)
            << QStringList{QStringLiteral("generate"), QStringLiteral("--prompt"),
                           QStringLiteral("x"), QStringLiteral("--temperature"),
                           QString::fromLatin1(value)}
            << QStringLiteral("option --temperature expects a finite number, got '%1'")
                   .arg(QLatin1String(value));
    QTest::newRow("token id beyond any vocabulary")
        << QStringList{QStringLiteral("estimate"),
                       QStringLiteral("--model"),
                       kBundled,
                       QStringLiteral("--method"),
                       QStringLiteral("lora"),
                       QStringLiteral("--trainable-tokens"),
                       QStringLiteral("99999999999999999999")}
        << QStringLiteral("option --trainable-tokens: '99999999999999999999' is too large");
    QTest::newRow("missing checkpoint")
        << QStringList{QStringLiteral("convert"),      QStringLiteral("llama2c"),
                       QStringLiteral("--checkpoint"), dir + QStringLiteral("/none.bin"),
                       QStringLiteral("--tokenizer"),  dir + QStringLiteral("/none2.bin"),
                       QStringLiteral("--out"),        dir + QStringLiteral("/o")}
        << QStringLiteral("none.bin: cannot open");
}

void TestCli::errors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    Run r = tunebench(args);
    QCOMPARE(r.status, QProcess::NormalExit);  // no crash
    QVERIFY(r.exitCode != 0);
    const QString err = QString::fromUtf8(r.err).trimmed();
    QVERIFY2(!err.contains(QLatin1Char('\n')), qPrintable(err));  // one line
    QVERIFY2(err.startsWith(QStringLiteral("tunebench: ")), qPrintable(err));
    QVERIFY2(err.contains(expected), qPrintable(err));
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
