// Interop: runs trained here and exported as PEFT adapters or merged folders load in Hugging Face
// PEFT / transformers and give the same logits as our tuned model; formats a method cannot take are
// refused.
#include "export/export.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "tokenizer/tokenizer.h"
#include "train/job.h"
#include "train/train_config.h"
#include "train/tuned_model.h"
#include "util/error.h"

#include <QtTest>

#include "interop/oracle_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

namespace {

const char* const kSentence =
    "Once upon a time, a little girl named Lily found a big red ball in the park.";
constexpr size_t kTokens = 12;

QByteArray runOracle(const QStringList& args, QString* error)
{
    return tbtest::runOracleScript(QStringLiteral("export_oracle.py"), args, error);
}

// The message of the tb::Error an export throws, or "" when it succeeds.
std::string exportError(const std::string& runDir, const std::string& format,
                        const std::string& outDir)
{
    try {
        tb::exportRun(runDir, {format, outDir});
    } catch (const tb::Error& e) {
        return e.what();
    }
    return {};
}

struct Comparison {
    double maxDiff = 0;  // max |a - b|
    double maxRef = 0;   // max |b|
};

Comparison compare(const std::vector<float>& a, const float* b, size_t n)
{
    Comparison c;
    for (size_t i = 0; i < n; ++i) {
        c.maxDiff = std::max(c.maxDiff, std::abs(static_cast<double>(a[i]) - b[i]));
        c.maxRef = std::max(c.maxRef, std::abs(static_cast<double>(b[i])));
    }
    return c;
}

QString joined(const nlohmann::json& list)
{
    QStringList out;
    for (const auto& s : list)
        out << QString::fromStdString(s.get<std::string>());
    return out.join(QStringLiteral("; "));
}

}  // namespace

class TestExportInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void logitsMatchHuggingFace_data();
    void logitsMatchHuggingFace();
    void unsupportedFormatsFail();

private:
    struct Case;
    // PEFT wrapped the rows the run recorded: the embedding's, and the head's (tied to the
    // embedding's for a tied model, its own values otherwise), each moved by training.
    void checkTokenRows(const Case& c, const nlohmann::json& rows);
    // Trains a short run from an example config: its run folder, or "" (why in m_trainErrors).
    std::string train(const char* example, const std::string& name,
                      std::vector<std::string> overrides);
    std::string path(const QString& relative) const
    {
        return m_dir.filePath(relative).toStdString();
    }

    struct Case {
        std::string run;   // run folder: our tuned model
        std::string kind;  // peft | merged
        std::string base;  // base model folder
        std::vector<int32_t> ids;
    };
    QTemporaryDir m_dir;
    std::map<std::string, std::string> m_runs;  // method -> run folder
    std::map<std::string, Case> m_cases;        // export name -> case
    nlohmann::json m_oracle;
    QString m_trainErrors;
};

std::string TestExportInterop::train(const char* example, const std::string& name,
                                     std::vector<std::string> overrides)
{
    return tbtest::trainTinyRun(path(QStringLiteral("runs")), example, name, std::move(overrides),
                                &m_trainErrors);
}

void TestExportInterop::checkTokenRows(const Case& c, const nlohmann::json& rows)
{
    std::ifstream runJson(c.run + "/run.json");
    const auto info = nlohmann::json::parse(runJson);
    const auto ids = info.at("trainable_tokens").at("ids").get<std::vector<int64_t>>();
    if (info.at("config").at("method") != "lora") {
        QVERIFY(rows.empty());
        return;
    }
    QVERIFY(!ids.empty());
    const bool tied = tb::loadModelConfig(c.base).tieWordEmbeddings;
    const std::string embedding = tb::loadModelConfig(c.base).architecture == tb::Architecture::Gpt2
                                      ? "base_model.model.transformer.wte"
                                      : "base_model.model.model.embed_tokens";
    QVERIFY2(rows.contains(embedding), rows.dump().c_str());
    QVERIFY2(rows.contains("base_model.model.lm_head"), rows.dump().c_str());
    QCOMPARE(rows.size(), size_t(2));
    for (const auto& [module, row] : rows.items()) {
        QCOMPARE(row.at("indices").get<std::vector<int64_t>>(), ids);
        const bool head = module == "base_model.model.lm_head";
        QCOMPARE(row.at("tied").get<bool>(), head && tied);
        // An untied embedding's EOS row gets no gradient here: EOS ends every example and is
        // never an input (it would be with packing). The head's rows (tied: the same) move.
        if (head || tied)
            QVERIFY2(row.at("moved").get<double>() > 1e-3, rows.dump().c_str());
    }
}

void TestExportInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    QVERIFY(m_dir.isValid());
    QString error;

    // A tiny random GPT-2 (Conv1D layers; vocabulary 50257 so the bundled BPE tokenizer fits).
    const std::string gpt2 = path(QStringLiteral("gpt2"));
    runOracle({QStringLiteral("make-gpt2"), QString::fromStdString(gpt2),
               QStringLiteral(TB_SOURCE_DIR "/tests/data/tokenizers/gpt2")},
              &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));

    // An untied copy of stories260k: its token rows train in the embedding and in lm_head.
    const std::string stories = TB_SOURCE_DIR "/datasets/models/stories260k";
    const std::string untied = path(QStringLiteral("untied"));
    runOracle({QStringLiteral("make-untied"), QString::fromStdString(stories),
               QString::fromStdString(untied)},
              &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));

    // A random Gemma 3 text model with the bundled tokenizer: its trainable token rows are scaled
    // with the embeddings (PEFT's embed_scale).
    const std::string gemma = path(QStringLiteral("gemma3"));
    runOracle({QStringLiteral("make-gemma3"), QString::fromStdString(stories),
               QString::fromStdString(gemma)},
              &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));

    // A random Phi-3 with the bundled tokenizer: its fused qkv_proj and gate_up_proj carry one
    // LoRA pair each, as PEFT's; LongRoPE's long factors, as the ids reach past its original 8.
    const std::string phi3 = path(QStringLiteral("phi3"));
    runOracle({QStringLiteral("make-phi3"), QString::fromStdString(stories),
               QString::fromStdString(phi3)},
              &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));

    // Short runs with a learning rate high enough that every trained tensor moves. LoRA trains the
    // rows of the stop tokens too (trainable_tokens: auto); PEFT's prompt tuning cannot carry them.
    m_runs["lora"] = train("lora", "lora",
                           {"lr=0.01", "lora.targets=[\"q_proj\",\"k_proj\",\"v_proj\",\"o_proj\","
                                       "\"gate_proj\",\"up_proj\",\"down_proj\"]"});
    m_runs["untied_lora"] = train("lora", "untied_lora", {"lr=0.01", "model=" + untied});
    m_runs["gemma_lora"] =
        train("lora", "gemma_lora",
              {"lr=0.01", "model=" + gemma,
               "lora.targets=[\"q_proj\",\"k_proj\",\"v_proj\",\"o_proj\",\"gate_proj\","
               "\"up_proj\",\"down_proj\"]"});
    m_runs["prompt"] =
        train("prompt", "prompt", {"lr=0.05", "prompt.num_tokens=8", "trainable_tokens=[]"});
    m_runs["prompt_rows"] = train("prompt", "prompt_rows", {"max_steps=1"});
    // On Gemma 3: the soft prompt enters beside the scaled token embeddings, unscaled (PEFT
    // concatenates it after the embedding layer); QLoRA quantises its projections like Llama's.
    m_runs["gemma_prompt"] =
        train("prompt", "gemma_prompt",
              {"lr=0.05", "model=" + gemma, "prompt.num_tokens=8", "trainable_tokens=[]"});
    m_runs["gemma_qlora"] = train("lora", "gemma_qlora",
                                  {"lr=0.01", "model=" + gemma, "quant=nf4", "quant_double=true"});
    m_runs["phi3_lora"] =
        train("lora", "phi3_lora",
              {"lr=0.01", "model=" + phi3,
               "lora.targets=[\"qkv_proj\",\"o_proj\",\"gate_up_proj\",\"down_proj\"]"});
    m_runs["phi3_qlora"] = train(
        "lora", "phi3_qlora",
        {"lr=0.01", "model=" + phi3, "quant=nf4", "lora.targets=[\"qkv_proj\",\"gate_up_proj\"]"});
    m_runs["full"] = train("full", "full", {"lr=0.01"});
    m_runs["adapter"] = train("adapter", "adapter", {"max_steps=1"});
    // QLoRA: LoRA on the NF4 (double-quantised) base. Merged: the dequantised base plus the
    // adapter, which transformers must compute as our adapter on the NF4 base does; PEFT: the
    // adapter on the original base, as PEFT applies it.
    m_runs["qlora"] = train("lora", "qlora", {"lr=0.01", "quant=nf4", "quant_double=true"});
    m_runs["gpt2_lora"] =
        train("lora", "gpt2_lora",
              {"model=" + gpt2, "lr=0.01", "lora.rank=4", "lora.targets=[\"c_attn\",\"c_proj\"]",
               "data.chat_template=plain", "data.max_length=64", "batch_size=4",
               // a 10-example validation split: evaluating 50257-way logits is most of the time
               "data.val_file=", "data.val_ratio=0.02"});
    QVERIFY2(m_trainErrors.isEmpty(), qPrintable(m_trainErrors));

    // Fixed inputs: one sentence's tokens (with BOS where the tokenizer adds it), cut to kTokens.
    auto idsFor = [&](const std::string& model) {
        auto ids = tb::loadTokenizer(model)->encode(kSentence, true);
        ids.resize(std::min(ids.size(), kTokens));
        return ids;
    };
    auto storiesIds = idsFor(stories);
    storiesIds[6] = 2;  // an EOS inside: the trained input-embedding row is looked up too
    const auto gpt2Ids = idsFor(gpt2);
    QCOMPARE(storiesIds.size(), kTokens);
    QCOMPARE(gpt2Ids.size(), kTokens);
    QCOMPARE(storiesIds.front(), 1);  // <s>
    QVERIFY(*std::max_element(storiesIds.begin(), storiesIds.end()) < 512);

    m_cases["lora_peft"] = {m_runs["lora"], "peft", stories, storiesIds};
    m_cases["lora_merged"] = {m_runs["lora"], "merged", stories, storiesIds};
    m_cases["untied_lora_peft"] = {m_runs["untied_lora"], "peft", untied, storiesIds};
    m_cases["untied_lora_merged"] = {m_runs["untied_lora"], "merged", untied, storiesIds};
    m_cases["gemma_lora_peft"] = {m_runs["gemma_lora"], "peft", gemma, storiesIds};
    m_cases["gemma_lora_merged"] = {m_runs["gemma_lora"], "merged", gemma, storiesIds};
    m_cases["prompt_peft"] = {m_runs["prompt"], "peft", stories, storiesIds};
    m_cases["gemma_prompt_peft"] = {m_runs["gemma_prompt"], "peft", gemma, storiesIds};
    m_cases["gemma_qlora_peft"] = {m_runs["gemma_qlora"], "peft", gemma, storiesIds};
    m_cases["gemma_qlora_merged"] = {m_runs["gemma_qlora"], "merged", gemma, storiesIds};
    m_cases["phi3_lora_peft"] = {m_runs["phi3_lora"], "peft", phi3, storiesIds};
    m_cases["phi3_lora_merged"] = {m_runs["phi3_lora"], "merged", phi3, storiesIds};
    m_cases["phi3_qlora_peft"] = {m_runs["phi3_qlora"], "peft", phi3, storiesIds};
    m_cases["full_merged"] = {m_runs["full"], "merged", stories, storiesIds};
    m_cases["qlora_peft"] = {m_runs["qlora"], "peft", stories, storiesIds};
    m_cases["qlora_merged"] = {m_runs["qlora"], "merged", stories, storiesIds};
    m_cases["gpt2_lora_peft"] = {m_runs["gpt2_lora"], "peft", gpt2, gpt2Ids};
    m_cases["gpt2_lora_merged"] = {m_runs["gpt2_lora"], "merged", gpt2, gpt2Ids};

    nlohmann::json cases = nlohmann::json::array();
    for (const auto& [name, c] : m_cases) {
        const std::string out = path(QStringLiteral("exports/") + QString::fromStdString(name));
        try {
            tb::exportRun(c.run, {c.kind, out});
        } catch (const tb::Error& e) {
            QFAIL(qPrintable(QStringLiteral("export %1: %2")
                                 .arg(QString::fromStdString(name), QString::fromUtf8(e.what()))));
        }
        cases.push_back(
            {{"name", name}, {"kind", c.kind}, {"dir", out}, {"base", c.base}, {"ids", c.ids}});
    }
    const std::string casesFile = path(QStringLiteral("cases.json"));
    std::ofstream(casesFile) << cases.dump();
    const QByteArray out = runOracle(
        {QStringLiteral("logits"), QString::fromStdString(casesFile), m_dir.path()}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_oracle = nlohmann::json::parse(out.toStdString());
    QCOMPARE(m_oracle.size(), m_cases.size());
}

void TestExportInterop::logitsMatchHuggingFace_data()
{
    QTest::addColumn<QString>("name");
    for (const char* n :
         {"lora_peft", "lora_merged", "untied_lora_peft", "untied_lora_merged", "gemma_lora_peft",
          "gemma_lora_merged", "prompt_peft", "gemma_prompt_peft", "full_merged", "qlora_peft",
          "qlora_merged", "gemma_qlora_peft", "gemma_qlora_merged", "phi3_lora_peft",
          "phi3_lora_merged", "phi3_qlora_peft", "gpt2_lora_peft", "gpt2_lora_merged"})
        QTest::newRow(n) << QString::fromLatin1(n);
}

void TestExportInterop::logitsMatchHuggingFace()
{
    QFETCH(QString, name);
    const Case& c = m_cases.at(name.toStdString());
    const auto& report = m_oracle.at(name.toStdString());
    for (const auto& w : report.at("warnings"))
        qInfo("oracle warning: %s", w.get<std::string>().c_str());

    // PEFT reads every tensor and config key we wrote, and we wrote every tensor it expects.
    if (c.kind == "peft") {
        QVERIFY2(report.at("unknown_config_keys").empty(),
                 qPrintable(QStringLiteral("adapter_config.json keys PEFT does not know: ") +
                            joined(report.at("unknown_config_keys"))));
        QVERIFY2(report.at("missing_keys").empty(),
                 qPrintable(
                     QStringLiteral("tensors PEFT expects but adapter_model.safetensors lacks: ") +
                     joined(report.at("missing_keys"))));
        QVERIFY2(report.at("unexpected_keys").empty(),
                 qPrintable(QStringLiteral("tensors PEFT does not expect: ") +
                            joined(report.at("unexpected_keys"))));
        QVERIFY2(report.at("shape_mismatches").empty(),
                 qPrintable(joined(report.at("shape_mismatches"))));
    }
    if (name.endsWith(QStringLiteral("prompt_peft")))
        QCOMPARE(report.at("virtual_tokens").get<int>(), 8);  // prompt.num_tokens=8 above
    if (c.kind == "peft")
        checkTokenRows(c, report.at("token_rows"));

    auto file = tb::SafetensorsFile::open(path(name + QStringLiteral(".safetensors")));
    const tb::TensorInfo* info = file->find("logits");
    QVERIFY(info && info->dtype == tb::DType::F32);
    const auto* theirs = reinterpret_cast<const float*>(file->data(*info));

    // A QLoRA run's PEFT adapter goes with the original base; its merged folder is the quantised
    // base dequantised, so it matches the run as trained.
    const bool originalBase = name.endsWith(QStringLiteral("qlora_peft"));
    const std::vector<float> ours =
        tb::loadTunedModel(c.run, {"fp32", "cpu"}, !originalBase)->logits(c.ids);
    const std::vector<float> base = tb::Model::load(c.base, {"fp32", "cpu"})->logits(c.ids);
    QCOMPARE(static_cast<int64_t>(ours.size()), info->numel());
    QCOMPARE(base.size(), ours.size());

    const Comparison match = compare(ours, theirs, ours.size());
    const Comparison moved = compare(base, theirs, ours.size());
    // fp32: within 1e-4 relative to the largest logit.
    const double tolerance = 1e-4 * match.maxRef;
    qInfo("%s: max |ours - HF| %.3g, max |HF| %.3g, tolerance %.3g, max |base - HF| %.3g",
          qPrintable(name), match.maxDiff, match.maxRef, tolerance, moved.maxDiff);
    QVERIFY(match.maxRef > 0);
    QVERIFY2(match.maxDiff <= tolerance,
             qPrintable(QStringLiteral("max |diff| %1 vs max |logit| %2")
                            .arg(match.maxDiff)
                            .arg(match.maxRef)));
    // The comparison means something only when the tuned model differs from the base by far more
    // than that.
    QVERIFY2(
        moved.maxDiff > 100 * tolerance,
        qPrintable(
            QStringLiteral("tuned logits are within %1 of the base model's").arg(moved.maxDiff)));
}

void TestExportInterop::unsupportedFormatsFail()
{
    if (m_runs.empty())
        QSKIP("no runs (see initTestCase)");
    const std::string adapterMerged =
        exportError(m_runs.at("adapter"), "merged", path(QStringLiteral("bad/adapter")));
    QVERIFY2(adapterMerged.find("non-linear") != std::string::npos, adapterMerged.c_str());
    const std::string promptMerged =
        exportError(m_runs.at("prompt"), "merged", path(QStringLiteral("bad/prompt")));
    QVERIFY2(promptMerged.find("soft prompt is an input") != std::string::npos,
             promptMerged.c_str());
    const std::string fullPeft =
        exportError(m_runs.at("full"), "peft", path(QStringLiteral("bad/full")));
    QVERIFY2(fullPeft.find("no PEFT format") != std::string::npos, fullPeft.c_str());
    const std::string adapterPeft =
        exportError(m_runs.at("adapter"), "peft", path(QStringLiteral("bad/adapter_peft")));
    QVERIFY2(adapterPeft.find("no PEFT format") != std::string::npos, adapterPeft.c_str());
    const std::string promptRows =
        exportError(m_runs.at("prompt_rows"), "peft", path(QStringLiteral("bad/prompt_rows")));
    QVERIFY2(promptRows.find("trainable_tokens=[]") != std::string::npos, promptRows.c_str());
    // Nothing a loader would take for a model was left behind.
    for (const char* dir :
         {"bad/adapter", "bad/prompt", "bad/full", "bad/adapter_peft", "bad/prompt_rows"}) {
        QVERIFY(!QFileInfo::exists(
            m_dir.filePath(QString::fromLatin1(dir) + QStringLiteral("/model.safetensors"))));
        QVERIFY(!QFileInfo::exists(
            m_dir.filePath(QString::fromLatin1(dir) + QStringLiteral("/adapter_config.json"))));
    }
}

QTEST_GUILESS_MAIN(TestExportInterop)
#include "test_export_interop.moc"
