// Interop: runs trained here and exported as GGUF load in llama.cpp and in transformers (through
// the gguf package) with the logits and greedy choices of our tuned model, the metadata llama.cpp
// reads and the vocabulary intact (sentencepiece for stories260k; byte-level BPE tokenizer.json for
// a random Llama with a Llama-3-style tokenizer and a random Qwen2 with biases); methods a merged
// model cannot hold are refused.
#include "export/export.h"
#include "export/gguf.h"
#include "model/config.h"
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
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

namespace {

const char* const kSentence =
    "Once upon a time, a little girl named Lily found a big red ball in the park.";
constexpr size_t kTokens = 12;
const std::vector<std::string> kTexts = {"Once upon a time, there was a dog.",
                                         "Tom said: \"Hi  Mia!\"\n42 cats, 7 hats."};
// For the BPE tokenizers: digits, contractions, accents, CJK, emoji, a special token and newlines.
// (The Llama-3-style tokenizer's non-special added token " there" is left out: transformers' GGUF
// tokenizer re-spells it in the byte alphabet and so never matches it whole, as llama.cpp would.)
const std::vector<std::string> kBpeTexts = {"Once upon a time, a dog ran. It's 2024, we'll see!",
                                            "Tom said: \"Hi  Mia!\"\n\n42 cats,   7 hats.",
                                            "Les \u00e9l\u00e8ves ont \u00e9tudi\u00e9 le "
                                            "fran\u00e7ais. \u4f60\u597d\u4e16\u754c \U0001F600",
                                            "def f(x):\n    return x**2  # squares"};

// Tolerance on max |ours - GGUF in transformers|. f32 stores our weights exactly: 1e-4 absolute
// (the LoRA run differs only by merged-vs-unmerged rounding, the rms eps by its f32 rounding). f16
// keeps 11 significant bits of each weight, bf16 8, Q8_0 about 8 per block of 32 (and llama.cpp
// also rounds the activations to Q8_0 for those matmuls): relative to the largest |logit|. Measured
// on these runs: f32 1.4e-5 (lora) and 0 (full); f16 7e-4, bf16 4e-3 and q8_0 1.8e-2 of the largest
// logit.
double toleranceFor(const std::string& dtype, double maxLogit)
{
    if (dtype == "q8_0")
        return 3e-2 * maxLogit;
    return dtype == "f32" ? 1e-4 : dtype == "f16" ? 3e-3 * maxLogit : 1e-2 * maxLogit;
}

// llama.cpp's own arithmetic on top: its CPU GELU (GPT-2's activation, Gemma's gate) reads an fp16
// table, which moves the logits by about 2e-4 of the largest (measured: GPT-2 1.8e-3 of 9.4);
// llama-style models use SiLU, computed in f32.
double llamaCppToleranceFor(const std::string& dtype, double maxLogit, bool gelu)
{
    return std::max(toleranceFor(dtype, maxLogit), gelu ? 1e-3 * maxLogit : 0.0);
}

bool usesGelu(const std::string& model)
{
    const tb::Architecture a = tb::loadModelConfig(model).architecture;
    return a == tb::Architecture::Gpt2 || a == tb::Architecture::Gemma3;
}

// LoRA on all seven projections of a Llama-layout block.
const char* const kAllProjections =
    "lora.targets=[\"q_proj\",\"k_proj\",\"v_proj\",\"o_proj\",\"gate_proj\",\"up_proj\","
    "\"down_proj\"]";

// The test sentence under `model`'s tokenizer (BOS where it adds one), cut to kTokens.
std::vector<int32_t> promptIds(const std::string& model)
{
    std::vector<int32_t> ids = tb::loadTokenizer(model)->encode(kSentence, true);
    ids.resize(std::min(ids.size(), kTokens));
    return ids;
}

QByteArray runOracle(const QStringList& args, QString* error)
{
    return tbtest::runOracleScript(QStringLiteral("gguf_oracle.py"), args, error);
}

// Runs run(options) for a GGUF export to `out`; returns the refusal ("" when it exported).
template <class Export> std::string ggufRefusal(const std::string& out, Export run)
{
    try {
        tb::ExportOptions o;
        o.format = "gguf";
        o.outDir = out;
        run(o);
    } catch (const tb::Error& e) {
        return e.what();
    }
    return {};
}

std::string exportError(const std::string& runDir, const std::string& out)
{
    return ggufRefusal(out, [&](const tb::ExportOptions& o) { tb::exportRun(runDir, o); });
}

// Copies the model folder `from` to `to` with config.json's `key` set to `value`, converts it to
// GGUF at `out` and returns the refusal ("" when it exported).
std::string modelExportError(const std::string& from, const std::string& to, const char* key,
                             const nlohmann::json& value, const std::string& out)
{
    std::filesystem::create_directories(to);
    for (const auto& entry : std::filesystem::directory_iterator(from))
        std::filesystem::copy(entry.path(), to + "/" + entry.path().filename().string());
    nlohmann::json config = nlohmann::json::parse(std::ifstream(to + "/config.json"));
    config[key] = value;
    std::ofstream(to + "/config.json") << config.dump();
    return ggufRefusal(out, [&](const tb::ExportOptions& o) { tb::exportModelGguf(to, o); });
}

}  // namespace

class TestGgufInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void logitsMatchTransformers_data();
    void logitsMatchTransformers();
    void metadataAndVocabulary();
    void tokenizerMatchesSentencePiece();
    void bpeMetadataAndVocabulary_data();
    void bpeMetadataAndVocabulary();
    void llamaCppRunsTheExport_data();
    void llamaCppRunsTheExport();
    void llamaCppAppliesTheLoraAdapter_data();
    void llamaCppAppliesTheLoraAdapter();
    void gemma3Metadata();
    void unsupportedMethodsFail();

private:
    std::string train(const char* example, const std::string& name,
                      std::vector<std::string> overrides);
    std::string path(const QString& relative) const
    {
        return m_dir.filePath(relative).toStdString();
    }

    struct Case {
        Case() = default;
        Case(std::string run_, std::string dtype_, std::string file_, tb::ExportReport report_,
             std::string base_, std::vector<int32_t> ids_, bool bpe_ = false)
            : run(std::move(run_)), dtype(std::move(dtype_)), file(std::move(file_)),
              report(std::move(report_)), base(std::move(base_)), ids(std::move(ids_)), bpe(bpe_)
        {
        }
        std::string run;
        std::string dtype;
        std::string file;
        tb::ExportReport report;
        std::string base;          // the run's base model
        std::vector<int32_t> ids;  // the prompt whose logits are compared
        bool bpe = false;          // tokenizer.json (else tokenizer.model)
        std::string adapter;       // LoRA runs: the gguf-lora export of the run ...
        std::string adapterBase;   // ... and the gguf-base export it applies to
        tb::ExportReport adapterReport;
    };
    QTemporaryDir m_dir;
    const std::string m_stories = TB_SOURCE_DIR "/datasets/models/stories260k";
    std::map<std::string, std::string> m_runs;
    std::map<std::string, Case> m_cases;
    std::vector<int32_t> m_ids;
    nlohmann::json m_oracle;
    QString m_trainErrors;
};

std::string TestGgufInterop::train(const char* example, const std::string& name,
                                   std::vector<std::string> overrides)
{
    return tbtest::trainTinyRun(path(QStringLiteral("runs")), example, name, std::move(overrides),
                                &m_trainErrors);
}

void TestGgufInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    QVERIFY(m_dir.isValid());
    // stories260k ties its head to the embedding; an untied copy makes the export write
    // output.weight.
    QString error;
    const std::string untied = path(QStringLiteral("untied"));
    runOracle({QStringLiteral("make-untied"), QString::fromStdString(m_stories),
               QString::fromStdString(untied)},
              &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_runs["lora"] = train("lora", "lora", {"lr=0.01", kAllProjections});
    m_runs["rslora"] = train("lora", "rslora", {"lr=0.01", "lora.rslora=true", "lora.rank=4"});
    m_runs["full"] = train("full", "full", {"lr=0.01"});
    m_runs["untied"] = train("full", "untied", {"lr=0.01", "model=" + untied});
    m_runs["untied_lora"] = train("lora", "untied-lora",
                                  {"lr=0.01", "model=" + untied,
                                   "lora.targets=[\"q_proj\",\"k_proj\",\"v_proj\",\"o_proj\","
                                   "\"gate_proj\",\"up_proj\",\"down_proj\",\"lm_head\"]"});
    // Without LoRA on its head, the untied copy trains its stop token's rows in token_embd and in
    // output (trainable_tokens: auto), as every LoRA run here does in its tied embedding.
    m_runs["untied_rows"] = train("lora", "untied-rows", {"lr=0.01", "model=" + untied});
    m_runs["adapter"] = train("adapter", "adapter", {"max_steps=1"});
    m_runs["prompt"] = train("prompt", "prompt", {"max_steps=1", "prompt.num_tokens=4"});
    QVERIFY2(m_trainErrors.isEmpty(), qPrintable(m_trainErrors));

    m_ids = promptIds(m_stories);
    QCOMPARE(m_ids.size(), kTokens);
    m_ids[6] = 2;  // an EOS inside: its trained row of token_embd is looked up too

    m_cases["lora_f32"] = {m_runs["lora"], "f32", path(QStringLiteral("gguf/lora-f32.gguf")), {},
                           m_stories,      m_ids};
    m_cases["lora_f16"] = {m_runs["lora"], "f16", path(QStringLiteral("gguf/lora-f16.gguf")), {},
                           m_stories,      m_ids};
    m_cases["lora_bf16"] = {m_runs["lora"], "bf16", path(QStringLiteral("gguf/lora-bf16.gguf")), {},
                            m_stories,      m_ids};
    m_cases["lora_q8_0"] = {m_runs["lora"], "q8_0", path(QStringLiteral("gguf/lora-q8_0.gguf")), {},
                            m_stories,      m_ids};
    m_cases["full_f32"] = {m_runs["full"], "f32", path(QStringLiteral("gguf/full-f32.gguf")), {},
                           m_stories,      m_ids};
    m_cases["rslora_f32"] = {
        m_runs["rslora"], "f32", path(QStringLiteral("gguf/rslora-f32.gguf")), {},
        m_stories,        m_ids};
    m_cases["untied_f16"] = {
        m_runs["untied"], "f16", path(QStringLiteral("gguf/untied-f16.gguf")), {}, untied, m_ids};
    m_cases["untied_lora_f32"] = {m_runs["untied_lora"],
                                  "f32",
                                  path(QStringLiteral("gguf/untied-lora-f32.gguf")),
                                  {},
                                  untied,
                                  m_ids};
    m_cases["untied_rows_f32"] = {m_runs["untied_rows"],
                                  "f32",
                                  path(QStringLiteral("gguf/untied-rows-f32.gguf")),
                                  {},
                                  untied,
                                  m_ids};

    // Byte-level BPE: random models around trained Llama-3-style and Qwen2-style tokenizers, tuned
    // with LoRA on every projection (qwen2's q/k/v biases and qwen3's q/k norms stay as they are
    // and must be written; llama31's rope scaling must reach llama.cpp).
    const std::string bpeDir = path(QStringLiteral("bpe"));
    runOracle({QStringLiteral("make-bpe"), QString::fromStdString(bpeDir)}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    for (const char* name : {"llama3", "qwen2", "llama31", "qwen3", "smollm3"}) {
        const std::string model = bpeDir + "/" + name;
        const std::string run =
            train("lora", std::string("lora-") + name,
                  {"lr=0.01", "model=" + model, "data.chat_template=plain", kAllProjections});
        QVERIFY2(m_trainErrors.isEmpty(), qPrintable(m_trainErrors));
        const std::vector<int32_t> ids = promptIds(model);
        QCOMPARE(ids.size(), kTokens);
        Case c{run, "f32", path(QString::fromLatin1("gguf/%1-f32.gguf").arg(QLatin1String(name))),
               {},  model, ids,
               true};
        m_cases[std::string(name) + "_f32"] = c;
    }

    // GPT-2: a random model around the real GPT-2 tokenizer, LoRA on its three Conv1D projections.
    {
        const std::string model = path(QStringLiteral("gpt2"));
        runOracle({QStringLiteral("make-gpt2"),
                   QStringLiteral(TB_SOURCE_DIR "/tests/data/tokenizers/gpt2"),
                   QString::fromStdString(model)},
                  &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const std::string run = train("lora", "lora-gpt2",
                                      {"lr=0.01", "model=" + model, "data.chat_template=plain",
                                       "lora.targets=[\"c_attn\",\"c_proj\",\"c_fc\"]"});
        QVERIFY2(m_trainErrors.isEmpty(), qPrintable(m_trainErrors));
        const std::vector<int32_t> ids = promptIds(model);
        QCOMPARE(ids.size(), kTokens);
        m_cases["gpt2_f32"] =
            Case{run, "f32", path(QStringLiteral("gguf/gpt2-f32.gguf")), {}, model, ids, true};
    }

    // Gemma 3: a random text model whose sliding layers, local rotary base and linearly scaled full
    // layer are not llama.cpp's defaults (the file must say them), with norm weights drawn (the
    // file holds 1 + weight), around the bundled tokenizer without its dummy prefix (Gemma's has
    // none), tuned with LoRA on every projection.
    {
        const std::string model = path(QStringLiteral("gemma3"));
        runOracle({QStringLiteral("make-gemma3"), QString::fromStdString(m_stories),
                   QString::fromStdString(model)},
                  &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const std::string run =
            train("lora", "lora-gemma3", {"lr=0.01", "model=" + model, kAllProjections});
        QVERIFY2(m_trainErrors.isEmpty(), qPrintable(m_trainErrors));
        const std::vector<int32_t> ids = promptIds(model);
        QCOMPARE(ids.size(), kTokens);
        m_cases["gemma3_f32"] =
            Case{run, "f32", path(QStringLiteral("gguf/gemma3-f32.gguf")), {}, model, ids};
    }

    // Phi-3: fused q/k/v and gate/up, half of each head rotating, LongRoPE whose long factors and
    // attention factor llama.cpp takes for its context of 64 (past the original 4, as ours do),
    // around the bundled tokenizer, tuned with LoRA on its four projections.
    {
        const std::string model = path(QStringLiteral("phi3"));
        runOracle({QStringLiteral("make-phi3"), QString::fromStdString(m_stories),
                   QString::fromStdString(model)},
                  &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        // Named without "phi3": llama.cpp gives a model whose general.name holds "phi-3" or "phi3"
        // Phi-3's token attributes, and stops on a vocabulary without <|endoftext|>, as the bundled
        // one is.
        const std::string run =
            train("lora", "lora-p3",
                  {"lr=0.01", "model=" + model,
                   "lora.targets=[\"qkv_proj\",\"o_proj\",\"gate_up_proj\",\"down_proj\"]"});
        QVERIFY2(m_trainErrors.isEmpty(), qPrintable(m_trainErrors));
        const std::vector<int32_t> ids = promptIds(model);
        QCOMPARE(ids.size(), kTokens);
        m_cases["phi3_f32"] =
            Case{run, "f32", path(QStringLiteral("gguf/phi3-f32.gguf")), {}, model, ids};
    }

    // LoRA runs also go out as a llama.cpp adapter plus the base model it applies to.
    for (const char* name :
         {"lora_f32", "rslora_f32", "untied_lora_f32", "untied_rows_f32", "llama3_f32", "qwen2_f32",
          "llama31_f32", "qwen3_f32", "smollm3_f32", "gpt2_f32", "gemma3_f32", "phi3_f32"}) {
        Case& c = m_cases.at(name);
        c.adapter = path(QString::fromLatin1("gguf/%1-adapter.gguf").arg(QLatin1String(name)));
        c.adapterBase = path(QString::fromLatin1("gguf/%1-base.gguf").arg(QLatin1String(name)));
    }

    nlohmann::json cases = nlohmann::json::array();
    for (auto& [name, c] : m_cases) {
        tb::ExportOptions o;
        o.format = "gguf";
        o.outDir = c.file;
        o.dtype = c.dtype;
        try {
            c.report = tb::exportRun(c.run, o);
        } catch (const tb::Error& e) {
            QFAIL(qPrintable(QStringLiteral("export %1: %2")
                                 .arg(QString::fromStdString(name), QString::fromUtf8(e.what()))));
        }
        nlohmann::json item = {{"name", name}, {"gguf", c.file}, {"ids", c.ids}};
        if (c.dtype == "q8_0")
            item["quant_reference"] = m_cases.at("lora_f32").file;  // the same run in f32
        if (!c.adapter.empty()) {
            tb::ExportOptions a;
            a.dtype = c.dtype;
            try {
                a.format = "gguf-lora";
                a.outDir = c.adapter;
                c.adapterReport = tb::exportRun(c.run, a);
                a.format = "gguf-base";
                a.outDir = c.adapterBase;
                tb::exportRun(c.run, a);
            } catch (const tb::Error& e) {
                QFAIL(qPrintable(QStringLiteral("export %1 as %2: %3")
                                     .arg(QString::fromStdString(name),
                                          QString::fromStdString(a.format),
                                          QString::fromUtf8(e.what()))));
            }
            item["adapter"] = c.adapter;
            item["adapter_base"] = c.adapterBase;
        }
        if (c.bpe) {
            item["tokenizer_json"] = c.base + "/tokenizer.json";
            item["texts"] = kBpeTexts;
        } else {
            item["sp_model"] = c.base + "/tokenizer.model";
            item["texts"] = kTexts;
        }
        cases.push_back(item);
    }
    const std::string casesFile = path(QStringLiteral("cases.json"));
    std::ofstream(casesFile) << cases.dump();
    const QByteArray out = runOracle(
        {QStringLiteral("check"), QString::fromStdString(casesFile), m_dir.path()}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_oracle = nlohmann::json::parse(out.toStdString());
    QCOMPARE(m_oracle.size(), m_cases.size());
}

void TestGgufInterop::logitsMatchTransformers_data()
{
    QTest::addColumn<QString>("name");
    for (const char* n : {"lora_f32", "lora_f16", "lora_bf16", "lora_q8_0", "rslora_f32",
                          "full_f32", "untied_f16", "untied_lora_f32", "untied_rows_f32",
                          "llama3_f32", "qwen2_f32", "qwen3_f32", "gpt2_f32", "gemma3_f32"})
        QTest::newRow(n) << QString::fromLatin1(n);
}

void TestGgufInterop::logitsMatchTransformers()
{
    QFETCH(QString, name);
    const Case& c = m_cases.at(name.toStdString());
    for (const auto& w : m_oracle.at(name.toStdString()).at("warnings"))
        qInfo("oracle warning: %s", w.get<std::string>().c_str());
    auto file = tb::SafetensorsFile::open(path(name + QStringLiteral(".safetensors")));
    const tb::TensorInfo* info = file->find("logits");
    QVERIFY(info && info->dtype == tb::DType::F32);
    const auto* theirs = reinterpret_cast<const float*>(file->data(*info));

    const std::vector<float> ours = tb::loadTunedModel(c.run)->logits(c.ids);
    const std::vector<float> base = tb::Model::load(c.base, {"fp32", "cpu"})->logits(c.ids);
    QCOMPARE(static_cast<int64_t>(ours.size()), info->numel());
    double diff = 0, moved = 0, ref = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        diff = std::max(diff, std::abs(double(ours[i]) - theirs[i]));
        moved = std::max(moved, std::abs(double(base[i]) - theirs[i]));
        ref = std::max(ref, std::abs(double(theirs[i])));
    }
    const double tolerance = toleranceFor(c.dtype, ref);
    qInfo("%s: max |ours - GGUF in transformers| %.3g, max |logit| %.3g, tolerance %.3g, "
          "max |base - GGUF| %.3g, %lld bytes",
          qPrintable(name), diff, ref, tolerance, moved, static_cast<long long>(c.report.bytes));
    QVERIFY(ref > 0);
    QVERIFY2(diff <= tolerance,
             qPrintable(QStringLiteral("max |diff| %1 > %2").arg(diff).arg(tolerance)));
    // Meaningful only when the tuned model is far from the base: much farther than the export is
    // from it (a quantised file is 1-2 % of the largest logit away).
    QVERIFY2(moved > 10 * std::max(diff, 1e-4),
             qPrintable(QStringLiteral("tuned logits within %1 of the base model's").arg(moved)));
}

void TestGgufInterop::metadataAndVocabulary()
{
    const tb::ModelConfig config = tb::loadModelConfig(m_stories);
    for (const auto& [name, c] : m_cases) {
        const tb::Architecture arch = tb::loadModelConfig(c.base).architecture;
        if (c.bpe || arch == tb::Architecture::Gemma3 || arch == tb::Architecture::Phi3)
            continue;  // bpeMetadataAndVocabulary, gemma3Metadata, llamaCppRunsTheExport
        const auto& r = m_oracle.at(name);
        const auto& md = r.at("metadata");
        QCOMPARE(md.at("general.architecture").get<std::string>(), std::string("llama"));
        QCOMPARE(md.at("general.alignment").get<int64_t>(), 32);
        QCOMPARE(md.at("general.file_type").get<int64_t>(), c.dtype == "f32"    ? 0
                                                            : c.dtype == "f16"  ? 1
                                                            : c.dtype == "q8_0" ? 7
                                                                                : 32);
        QCOMPARE(md.at("llama.block_count").get<int64_t>(), config.numLayers);
        QCOMPARE(md.at("llama.embedding_length").get<int64_t>(), config.hiddenSize);
        QCOMPARE(md.at("llama.feed_forward_length").get<int64_t>(), config.intermediateSize);
        QCOMPARE(md.at("llama.context_length").get<int64_t>(), config.maxPositions);
        QCOMPARE(md.at("llama.attention.head_count").get<int64_t>(), config.numHeads);
        QCOMPARE(md.at("llama.attention.head_count_kv").get<int64_t>(), config.numKvHeads);
        QCOMPARE(md.at("llama.rope.dimension_count").get<int64_t>(), config.headDim);
        QCOMPARE(md.at("llama.vocab_size").get<int64_t>(), config.vocabSize);
        QVERIFY(std::abs(md.at("llama.rope.freq_base").get<double>() - config.ropeTheta) < 1e-3);
        QVERIFY(std::abs(md.at("llama.attention.layer_norm_rms_epsilon").get<double>() -
                         config.normEps) < 1e-10);
        QCOMPARE(md.at("tokenizer.ggml.model").get<std::string>(), std::string("llama"));
        QCOMPARE(md.at("tokenizer.ggml.bos_token_id").get<int64_t>(), 1);
        QCOMPARE(md.at("tokenizer.ggml.eos_token_id").get<int64_t>(), 2);
        QCOMPARE(md.at("tokenizer.ggml.unknown_token_id").get<int64_t>(), 0);
        QCOMPARE(md.at("tokenizer.ggml.add_bos_token").get<bool>(), true);
        QCOMPARE(md.at("tokenizer.ggml.add_space_prefix").get<bool>(), true);
        QCOMPARE(r.at("vocab_size").get<int64_t>(), config.vocabSize);
        QVERIFY2(r.at("pieces_match").get<bool>() && r.at("types_match").get<bool>(),
                 qPrintable(QStringLiteral("%1: first differing token %2")
                                .arg(QString::fromStdString(name))
                                .arg(r.at("first_mismatch").get<int>())));
        QVERIFY(r.at("scores_match").get<bool>());

        // Tensors: llama.cpp's names, dims fastest-first, norms f32, matrices in the chosen dtype;
        // a tied head is left out and transformers ties it back.
        const auto& tensors = r.at("tensors");
        const bool tied = c.base == m_stories;
        const int matrixType = c.dtype == "f32"    ? 0
                               : c.dtype == "f16"  ? 1
                               : c.dtype == "q8_0" ? 8
                                                   : 30;
        QCOMPARE(static_cast<int64_t>(tensors.size()), 2 + 9 * config.numLayers + (tied ? 0 : 1));
        QCOMPARE(c.report.tensors, static_cast<int64_t>(tensors.size()));
        QCOMPARE(tensors.contains("output.weight"), !tied);
        QCOMPARE(r.at("tie_word_embeddings").get<bool>(), tied);
        if (!tied) {
            QCOMPARE(tensors.at("output.weight").at("shape"),
                     nlohmann::json({config.hiddenSize, config.vocabSize}));
            QCOMPARE(tensors.at("output.weight").at("type").get<int>(), matrixType);
        }
        const auto& embd = tensors.at("token_embd.weight");
        QCOMPARE(embd.at("shape"), nlohmann::json({config.hiddenSize, config.vocabSize}));
        QCOMPARE(embd.at("type").get<int>(), matrixType);
        QCOMPARE(tensors.at("output_norm.weight").at("type").get<int>(), 0);
        QCOMPARE(tensors.at("blk.0.attn_norm.weight").at("type").get<int>(), 0);
        QCOMPARE(tensors.at("blk.0.attn_k.weight").at("shape"),
                 nlohmann::json({config.hiddenSize, config.numKvHeads * config.headDim}));
        QCOMPARE(tensors.at("blk.0.ffn_down.weight").at("shape"),
                 nlohmann::json({config.intermediateSize, config.hiddenSize}));
        // Q8_0 needs rows of whole 32-weight blocks: ffn_down's rows of 172 stay f16 (and are
        // reported).
        const bool downKept = c.dtype == "q8_0" && config.intermediateSize % 32 != 0;
        QCOMPARE(tensors.at("blk.0.ffn_down.weight").at("type").get<int>(),
                 downKept ? 1 : matrixType);
        QCOMPARE(static_cast<int64_t>(c.report.warnings.size()),
                 downKept ? config.numLayers : int64_t(0));
        if (c.dtype == "q8_0") {
            // What Q8_0 costs, measured on the run's validation set: the fp32 side is the trainer's
            // own last evaluation (metrics.jsonl), and the round trip moves the loss, a little.
            double valLoss = -1;
            std::ifstream metrics(c.run + "/metrics.jsonl");
            for (std::string line; std::getline(metrics, line);) {
                const auto row = nlohmann::json::parse(line);
                if (row.value("type", "") == "eval" && row.contains("val_loss") &&
                    row["val_loss"].is_number())
                    valLoss = row["val_loss"].get<double>();
            }
            qInfo("q8_0: loss %.6f fp32 -> %.6f Q8_0 on %lld tokens; the run's last val_loss %.6f",
                  c.report.lossFp32, c.report.lossQuantized,
                  static_cast<long long>(c.report.lossTokens), valLoss);
            QVERIFY(c.report.lossTokens > 0);
            QVERIFY2(std::abs(c.report.lossFp32 - valLoss) < 1e-4,
                     qPrintable(QString::number(valLoss)));
            QVERIFY(c.report.lossQuantized != c.report.lossFp32);
            QVERIFY(std::abs(c.report.lossQuantized - c.report.lossFp32) <
                    0.05 * c.report.lossFp32);
            QVERIFY2(r.at("quant_differ").empty(), r.at("quant_differ").dump().c_str());
            QCOMPARE(r.at("quant_same").get<int64_t>(),
                     1 + 6 * config.numLayers);  // embedding + 6 per block
            QCOMPARE(static_cast<int64_t>(r.at("quant_kept").size()), config.numLayers);
        }
        QCOMPARE(tensors.at("blk.4.ffn_gate.weight").at("type").get<int>(), matrixType);

        // Our own reader agrees with the gguf package.
        const tb::GgufSummary s = tb::readGgufSummary(c.file);
        QCOMPARE(static_cast<int64_t>(s.tensors.size()), static_cast<int64_t>(tensors.size()));
        QCOMPARE(static_cast<int64_t>(s.fileSize), c.report.bytes);
        QCOMPARE(s.metadata.at("llama.block_count"), std::to_string(config.numLayers));
    }
}

void TestGgufInterop::tokenizerMatchesSentencePiece()
{
    const auto ours = tb::loadTokenizer(m_stories);
    const auto& r = m_oracle.at("lora_f32");
    for (size_t i = 0; i < kTexts.size(); ++i) {
        const auto gguf = r.at("gguf_ids").at(i).get<std::vector<int32_t>>();
        const auto sp = r.at("sp_ids").at(i).get<std::vector<int32_t>>();
        QCOMPARE(gguf, sp);
        QCOMPARE(gguf, ours->encode(kTexts[i], true));
    }
}

void TestGgufInterop::bpeMetadataAndVocabulary_data()
{
    QTest::addColumn<QString>("name");
    for (const char* n : {"llama3", "qwen2", "llama31", "qwen3", "smollm3", "gpt2"})
        QTest::newRow(n) << QString::fromLatin1(n);
}

void TestGgufInterop::bpeMetadataAndVocabulary()
{
    QFETCH(QString, name);
    // The qwen tokenizer has no BOS and ties the head; qwen2 adds q/k/v biases, qwen3 q/k norms;
    // llama31 carries Llama 3's rope scaling as rope_freqs; smollm3 (llama3's tokenizer, tied) is
    // llama.cpp's own architecture.
    const bool qwen2 = name.startsWith(QStringLiteral("qwen"));
    const bool smol = name == QStringLiteral("smollm3");
    const bool qwen3 = name == QStringLiteral("qwen3");
    const bool scaled = name == QStringLiteral("llama31");
    const bool gpt2 = name == QStringLiteral("gpt2");
    const Case& c = m_cases.at(name.toStdString() + "_f32");
    const auto& r = m_oracle.at(name.toStdString() + "_f32");
    const auto& md = r.at("metadata");
    const tb::ModelConfig config = tb::loadModelConfig(c.base);
    const auto ours = tb::loadTokenizer(c.base);
    const std::string arch = gpt2    ? "gpt2"
                             : qwen3 ? "qwen3"
                             : qwen2 ? "qwen2"
                             : smol  ? "smollm3"
                                     : "llama";
    QCOMPARE(md.at("general.architecture").get<std::string>(), arch);
    QCOMPARE(md.at(arch + ".block_count").get<int64_t>(), config.numLayers);
    if (gpt2) {  // learned positions, LayerNorm: no rotary or KV-head keys
        QVERIFY(!md.contains("gpt2.rope.dimension_count"));
        QVERIFY(std::abs(md.at("gpt2.attention.layer_norm_epsilon").get<double>() -
                         config.normEps) < 1e-10);
    } else {
        QCOMPARE(md.at(arch + ".attention.head_count_kv").get<int64_t>(), config.numKvHeads);
    }
    QCOMPARE(md.at(arch + ".vocab_size").get<int64_t>(), config.vocabSize);
    QCOMPARE(md.at("tokenizer.ggml.model").get<std::string>(), std::string("gpt2"));
    QCOMPARE(md.at("tokenizer.ggml.pre").get<std::string>(), std::string(gpt2    ? "gpt-2"
                                                                         : qwen2 ? "qwen2"
                                                                                 : "llama-bpe"));
    QCOMPARE(md.at("tokenizer.ggml.eos_token_id").get<int64_t>(), int64_t(*ours->eosId()));
    QCOMPARE(md.contains("tokenizer.ggml.bos_token_id"), !qwen2);
    if (!qwen2)
        QCOMPARE(md.at("tokenizer.ggml.bos_token_id").get<int64_t>(), int64_t(*ours->bosId()));
    QCOMPARE(md.at("tokenizer.ggml.add_bos_token").get<bool>(), !qwen2 && !gpt2);
    QVERIFY(!md.contains("tokenizer.ggml.scores"));
    QCOMPARE(r.at("vocab_size").get<int64_t>(), config.vocabSize);
    QCOMPARE(int64_t(ours->vocabSize()), config.vocabSize);
    QVERIFY2(
        r.at("pieces_match").get<bool>() && r.at("types_match").get<bool>(),
        qPrintable(
            QStringLiteral("first differing token %1").arg(r.at("first_mismatch").get<int>())));
    QVERIFY(r.at("merges_match").get<bool>());
    QVERIFY(r.at("merges").get<int>() > 100);

    // Tensors: qwen2 adds f32 q/k/v biases and ties its head, qwen3 q/k norms; the Llamas have an
    // output.weight, and llama31 rope_freqs, llama.cpp converter's divisors of the rotary
    // frequencies.
    const auto& tensors = r.at("tensors");
    const int64_t perBlock = gpt2 ? 12 : qwen3 ? 11 : qwen2 ? 12 : 9;
    const bool tied = qwen2 || gpt2 || smol;
    QCOMPARE(static_cast<int64_t>(tensors.size()),
             (gpt2 ? 4 : 2) + perBlock * config.numLayers + (tied ? 0 : 1) + (scaled ? 1 : 0));
    QCOMPARE(r.at("tie_word_embeddings").get<bool>(), tied);
    if (gpt2) {  // Conv1D weights written as nn.Linear's [out, in]: stored [in, out]
        QCOMPARE(tensors.at("blk.0.attn_qkv.weight").at("shape"),
                 nlohmann::json({config.hiddenSize, 3 * config.hiddenSize}));
        QCOMPARE(tensors.at("blk.0.ffn_down.weight").at("shape"),
                 nlohmann::json({config.intermediateSize, config.hiddenSize}));
        QCOMPARE(tensors.at("position_embd.weight").at("shape"),
                 nlohmann::json({config.hiddenSize, config.maxPositions}));
        QCOMPARE(tensors.at("output_norm.bias").at("type").get<int>(), 0);
    }
    QCOMPARE(tensors.contains("rope_freqs.weight"), scaled);
    if (scaled) {
        QCOMPARE(tensors.at("rope_freqs.weight").at("shape"), nlohmann::json({config.headDim / 2}));
        // head_dim 8 at theta 500000: wavelengths 6.3, 167, 4450 and 118000 against 8192 / 4 and
        // 8192 / 1.
        const auto factors = r.at("rope_freqs").get<std::vector<double>>();
        QCOMPARE(factors.size(), size_t(4));
        QCOMPARE(factors[0], 1.0);
        QCOMPARE(factors[1], 1.0);
        QVERIFY(factors[2] > 1.0 && factors[2] < 8.0);
        QCOMPARE(factors[3], 8.0);
    }
    if (qwen3) {
        // Attention wider than the model (8 heads x 16 > 64): the file says so in key/value_length.
        QVERIFY(config.headDim * config.numHeads != config.hiddenSize);
        QCOMPARE(md.at("qwen3.attention.key_length").get<int64_t>(), config.headDim);
        QCOMPARE(md.at("qwen3.attention.value_length").get<int64_t>(), config.headDim);
        QCOMPARE(tensors.at("blk.0.attn_q.weight").at("shape"),
                 nlohmann::json({config.hiddenSize, config.numHeads * config.headDim}));
        QCOMPARE(tensors.at("blk.1.attn_q_norm.weight").at("shape"),
                 nlohmann::json({config.headDim}));
        QCOMPARE(tensors.at("blk.1.attn_k_norm.weight").at("type").get<int>(), 0);
        QVERIFY(!tensors.contains("blk.1.attn_q.bias"));
    } else if (qwen2) {
        QCOMPARE(tensors.at("blk.1.attn_q.bias").at("shape"), nlohmann::json({config.hiddenSize}));
        QCOMPARE(tensors.at("blk.1.attn_k.bias").at("shape"),
                 nlohmann::json({config.numKvHeads * config.headDim}));
        QCOMPARE(tensors.at("blk.1.attn_v.bias").at("type").get<int>(), 0);
    }

    // The tokenizer transformers builds from the file encodes like HF tokenizers on tokenizer.json
    // and like ours (smollm3: transformers cannot read the file; llama.cpp's ids are checked in
    // llamaCppRunsTheExport).
    for (size_t i = 0; i < kBpeTexts.size(); ++i) {
        const auto hf = r.at("hf_ids").at(i).get<std::vector<int32_t>>();
        if (!smol)
            QCOMPARE(r.at("gguf_ids").at(i).get<std::vector<int32_t>>(), hf);
        QCOMPARE(ours->encode(kBpeTexts[i], true), hf);
    }
    if (smol) {
        // llama.cpp's smollm3 leaves out the rotary embedding of every fourth layer, no others.
        QVERIFY(!config.layerRotates(3) && !config.layerRotates(7) && config.layerRotates(4));
        const std::string error =
            modelExportError(c.base, path(QStringLiteral("smollm3-nope")), "no_rope_layers",
                             {1, 0, 1, 0, 1, 0, 1, 0}, path(QStringLiteral("bad/smollm3.gguf")));
        QVERIFY2(error.find("leaves it out of layer 1") != std::string::npos, error.c_str());
    }
}

void TestGgufInterop::llamaCppRunsTheExport_data()
{
    logitsMatchTransformers_data();
    // transformers' GGUF reader drops rope_freqs (Llama 3's rope scaling) and has no smollm3:
    // llama.cpp is the reference.
    QTest::newRow("llama31_f32") << QStringLiteral("llama31_f32");
    QTest::newRow("smollm3_f32") << QStringLiteral("smollm3_f32");
    QTest::newRow("phi3_f32") << QStringLiteral("phi3_f32");  // its LongRoPE factors too
}

// llama.cpp itself loads each export: its logits for the prompt equal our tuned model's, every
// token of its greedy continuation is our model's greedy pick as well (teacher-forced through our
// model, ties within the tolerance allowed), and its tokenizer, built from the file's vocabulary
// alone, encodes as ours does.
void TestGgufInterop::llamaCppRunsTheExport()
{
    QFETCH(QString, name);
    const Case& c = m_cases.at(name.toStdString());
    const auto& r = m_oracle.at(name.toStdString());
    const std::string modelType = tb::loadModelConfig(c.base).modelType;
    QCOMPARE(r.at("llama_cpp_arch").get<std::string>(),
             modelType == "qwen2" || modelType == "qwen3" || modelType == "gpt2" ||
                     modelType == "smollm3" || modelType == "phi3"
                 ? modelType
             : modelType == "gemma3_text" ? std::string("gemma3")
                                          : std::string("llama"));
    if (modelType == "phi3") {
        // The one difference left (no window here): llama.cpp picks LongRoPE's factors by its
        // context size, which the export says.
        QCOMPARE(c.report.warnings.size(), size_t(1));
        QVERIFY2(c.report.warnings[0].find("LongRoPE factors once") != std::string::npos,
                 c.report.warnings[0].c_str());
        // Half of each head rotates; LongRoPE as llama.cpp's converter writes it.
        const tb::ModelConfig config = tb::loadModelConfig(c.base);
        const auto& md = r.at("metadata");
        QCOMPARE(md.at("phi3.rope.dimension_count").get<int64_t>(), config.headDim / 2);
        QCOMPARE(md.at("phi3.rope.scaling.original_context_length").get<int64_t>(), int64_t(4));
        QVERIFY(std::abs(md.at("phi3.rope.scaling.attn_factor").get<double>() -
                         config.ropeScaling.attentionFactor) < 1e-6);
        for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"})
            QCOMPARE(r.at("tensors").at(t).at("shape"), nlohmann::json({config.headDim / 4}));
        QCOMPARE(r.at("tensors").at("blk.0.attn_qkv.weight").at("shape"),
                 nlohmann::json({config.hiddenSize,
                                 (config.numHeads + 2 * config.numKvHeads) * config.headDim}));
        QCOMPARE(r.at("tensors").at("blk.0.ffn_up.weight").at("shape"),
                 nlohmann::json({config.hiddenSize, 2 * config.intermediateSize}));
    }
    auto file = tb::SafetensorsFile::open(path(name + QStringLiteral(".safetensors")));
    const tb::TensorInfo* info = file->find("llama_cpp_logits");
    QVERIFY(info && info->dtype == tb::DType::F32);
    const auto* theirs = reinterpret_cast<const float*>(file->data(*info));
    const auto tuned = tb::loadTunedModel(c.run);
    const std::vector<float> ours = tuned->logits(c.ids);
    QCOMPARE(static_cast<int64_t>(ours.size()), info->numel());
    double diff = 0, ref = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        diff = std::max(diff, std::abs(double(ours[i]) - theirs[i]));
        ref = std::max(ref, std::abs(double(theirs[i])));
    }
    const double tolerance = llamaCppToleranceFor(c.dtype, ref, usesGelu(c.base));
    qInfo("%s: max |ours - llama.cpp| %.3g, max |logit| %.3g, tolerance %.3g", qPrintable(name),
          diff, ref, tolerance);
    QVERIFY(ref > 0);
    QVERIFY2(diff <= tolerance,
             qPrintable(QStringLiteral("max |diff| %1 > %2").arg(diff).arg(tolerance)));

    const auto greedy = r.at("llama_cpp_greedy").get<std::vector<int32_t>>();
    QCOMPARE(greedy.size(), size_t(16));
    std::vector<int32_t> forced = c.ids;
    forced.insert(forced.end(), greedy.begin(), greedy.end());
    const std::vector<float> all = tuned->logits(forced);
    const size_t vocab = ours.size() / c.ids.size();
    for (size_t k = 0; k < greedy.size(); ++k) {
        const float* row = all.data() + (c.ids.size() - 1 + k) * vocab;
        const float best = *std::max_element(row, row + vocab);
        QVERIFY2(best - row[greedy[k]] <= tolerance,
                 qPrintable(QStringLiteral(
                                "greedy token %1 (%2): llama.cpp's pick is %3 below our best logit")
                                .arg(k)
                                .arg(greedy[k])
                                .arg(best - row[greedy[k]])));
    }

    const auto tokenizer = tb::loadTokenizer(c.base);
    const auto& texts = c.bpe ? kBpeTexts : kTexts;
    const auto ids = r.at("llama_cpp_ids");
    QCOMPARE(ids.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i)
        QCOMPARE(ids.at(i).get<std::vector<int32_t>>(), tokenizer->encode(texts[i], true));
}

void TestGgufInterop::llamaCppAppliesTheLoraAdapter_data()
{
    QTest::addColumn<QString>("name");
    for (const char* n :
         {"lora_f32", "rslora_f32", "untied_lora_f32", "untied_rows_f32", "llama3_f32", "qwen2_f32",
          "llama31_f32", "qwen3_f32", "smollm3_f32", "gpt2_f32", "gemma3_f32", "phi3_f32"})
        QTest::newRow(n) << QString::fromLatin1(n);
}

// The gguf-lora adapter on the gguf-base file, in llama.cpp: the base file alone gives the base
// model's logits, and with the adapter the tuned (unmerged) model's; alpha carries our scaling
// (rsLoRA included), LoRA on an untied head adapts output.weight, and trainable token rows come as
// a pair for token_embd and one for output (a tied model's base file then holds output.weight).
void TestGgufInterop::llamaCppAppliesTheLoraAdapter()
{
    QFETCH(QString, name);
    const Case& c = m_cases.at(name.toStdString());
    auto file = tb::SafetensorsFile::open(path(name + QStringLiteral(".safetensors")));
    auto compare = [&](const char* tensor, const std::vector<float>& ours) {
        const tb::TensorInfo* info = file->find(tensor);
        if (!info || info->numel() != static_cast<int64_t>(ours.size()))
            return std::numeric_limits<double>::infinity();
        const auto* theirs = reinterpret_cast<const float*>(file->data(*info));
        double diff = 0;
        for (size_t i = 0; i < ours.size(); ++i)
            diff = std::max(diff, std::abs(double(ours[i]) - theirs[i]));
        return diff;
    };
    const std::vector<float> base = tb::Model::load(c.base, {"fp32", "cpu"})->logits(c.ids);
    const std::vector<float> tuned = tb::loadTunedModel(c.run)->logits(c.ids);
    const double baseDiff = compare("llama_cpp_base_logits", base);
    const double adapterDiff = compare("llama_cpp_adapter_logits", tuned);
    const double moved = compare("llama_cpp_adapter_logits", base);
    qInfo("%s: max |base - llama.cpp base| %.3g, max |tuned - llama.cpp base + adapter| %.3g, "
          "adapter moves "
          "the logits by %.3g; %lld adapter tensors, %lld bytes",
          qPrintable(name), baseDiff, adapterDiff, moved,
          static_cast<long long>(c.adapterReport.tensors),
          static_cast<long long>(c.adapterReport.bytes));
    double ref = 0;
    for (float v : base)
        ref = std::max(ref, std::abs(double(v)));
    const double tolerance = llamaCppToleranceFor(c.dtype, ref, usesGelu(c.base));
    QVERIFY2(baseDiff <= tolerance,
             qPrintable(QStringLiteral("%1 > %2").arg(baseDiff).arg(tolerance)));
    QVERIFY2(adapterDiff <= tolerance,
             qPrintable(QStringLiteral("%1 > %2").arg(adapterDiff).arg(tolerance)));
    QVERIFY2(moved > 1e-2, qPrintable(QString::number(moved)));

    // The adapter's own header: llama.cpp's keys, two factors per adapted weight, alpha = scaling x
    // rank.
    const tb::GgufSummary s = tb::readGgufSummary(c.adapter);
    QCOMPARE(s.metadata.at("general.type"), std::string("adapter"));
    QCOMPARE(s.metadata.at("adapter.type"), std::string("lora"));
    std::ifstream runJson(c.run + "/run.json");
    const auto info = nlohmann::json::parse(runJson);
    const tb::TrainConfig run = tb::parseTrainConfig(info.at("config"), c.run + "/run.json");
    const bool rows = !info.at("trainable_tokens").at("ids").empty();
    const double scaling = run.lora.rslora ? run.lora.alpha / std::sqrt(double(run.lora.rank))
                                           : run.lora.alpha / double(run.lora.rank);
    QCOMPARE(std::stod(s.metadata.at("adapter.lora.alpha")), scaling * run.lora.rank);
    QCOMPARE(static_cast<int64_t>(s.tensors.size()), c.adapterReport.tensors);
    const tb::ModelConfig config = tb::loadModelConfig(c.base);
    const bool head = std::find(run.lora.targets.begin(), run.lora.targets.end(), "lm_head") !=
                      run.lora.targets.end();
    const auto& targets = run.lora.targets;
    const bool gpt2 = config.architecture == tb::Architecture::Gpt2;
    // Per block, one layer per target name; GPT-2's "c_proj" names two (attention and MLP output).
    const int64_t perBlock =
        static_cast<int64_t>(targets.size()) - (head ? 1 : 0) +
        (gpt2 && std::find(targets.begin(), targets.end(), "c_proj") != targets.end() ? 1 : 0);
    QCOMPARE(c.adapterReport.tensors,
             2 * (perBlock * config.numLayers + (head ? 1 : 0)) + (rows ? 4 : 0));
    bool headAdapted = false, embeddingAdapted = false;
    for (const tb::GgufTensorInfo& t : s.tensors) {
        headAdapted = headAdapted || t.name == "output.weight.lora_b";
        embeddingAdapted = embeddingAdapted || t.name == "token_embd.weight.lora_a";
    }
    QCOMPARE(headAdapted, head || rows);
    QCOMPARE(embeddingAdapted, rows);
    QVERIFY(!head || !rows);  // LoRA on the head: its rows are LoRA's to learn
    QCOMPARE(rows, run.method == tb::Method::Lora && !head);
    for (const tb::GgufTensorInfo& t : s.tensors)
        if (t.name == "blk.0.attn_k.weight.lora_b")
            QCOMPARE(t.dims,
                     (std::vector<int64_t>{run.lora.rank, config.numKvHeads * config.headDim}));
}

// Gemma 3's file: what llama.cpp would otherwise assume (five of six layers sliding, a local base
// of 10,000, no scaling, a dummy prefix) is written out; four norms a block under llama.cpp's
// names; and a model whose attention scale llama.cpp cannot reproduce is refused.
void TestGgufInterop::gemma3Metadata()
{
    const Case& c = m_cases.at("gemma3_f32");
    const auto& r = m_oracle.at("gemma3_f32");
    const auto& md = r.at("metadata");
    const tb::ModelConfig config = tb::loadModelConfig(c.base);
    QCOMPARE(md.at("general.architecture").get<std::string>(), std::string("gemma3"));
    QCOMPARE(md.at("gemma3.attention.sliding_window").get<int64_t>(), int64_t(6));
    const auto pattern = r.at("sliding_window_pattern").get<std::vector<bool>>();
    QCOMPARE(pattern, (std::vector<bool>{true, false, true, true}));
    QCOMPARE(md.at("gemma3.rope.freq_base").get<double>(), 10000.0);
    QCOMPARE(md.at("gemma3.rope.freq_base_swa").get<double>(), 1000.0);
    QCOMPARE(md.at("gemma3.rope.scaling.type").get<std::string>(), std::string("linear"));
    QCOMPARE(md.at("gemma3.rope.scaling.factor").get<double>(), 2.0);
    QCOMPARE(md.at("gemma3.attention.key_length").get<int64_t>(), config.headDim);
    QCOMPARE(md.at("gemma3.attention.value_length").get<int64_t>(), config.headDim);
    QCOMPARE(md.at("tokenizer.ggml.model").get<std::string>(), std::string("llama"));
    QCOMPARE(md.at("tokenizer.ggml.add_space_prefix").get<bool>(), false);
    QVERIFY2(r.at("pieces_match").get<bool>() && r.at("types_match").get<bool>() &&
                 r.at("scores_match").get<bool>(),
             qPrintable(QString::number(r.at("first_mismatch").get<int64_t>())));
    // Without the dummy prefix the same text tokenizes otherwise: llama.cpp's ids (checked in
    // llamaCppRunsTheExport) depend on the flag.
    QVERIFY(tb::loadTokenizer(m_stories)->encode(kTexts[0], true) !=
            tb::loadTokenizer(c.base)->encode(kTexts[0], true));

    const auto& tensors = r.at("tensors");
    QCOMPARE(static_cast<int64_t>(tensors.size()), 2 + 13 * config.numLayers);  // tied head
    QVERIFY(!tensors.contains("output.weight"));
    for (const char* t :
         {"blk.0.attn_norm.weight", "blk.0.post_attention_norm.weight", "blk.0.ffn_norm.weight",
          "blk.0.post_ffw_norm.weight", "blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight"}) {
        QVERIFY2(tensors.contains(t), t);
        QCOMPARE(tensors.at(t).at("type").get<int>(), 0);
    }
    QCOMPARE(tensors.at("blk.3.attn_q.weight").at("shape"),
             nlohmann::json({config.hiddenSize, config.numHeads * config.headDim}));

    // llama.cpp scales scores by head_dim^-1/2 and has no key for query_pre_attn_scalar.
    const std::string out = path(QStringLiteral("bad/gemma3-scalar.gguf"));
    const std::string error = modelExportError(c.base, path(QStringLiteral("gemma3-scalar")),
                                               "query_pre_attn_scalar", 16, out);
    QVERIFY2(error.find("query_pre_attn_scalar 16") != std::string::npos, error.c_str());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
}

void TestGgufInterop::unsupportedMethodsFail()
{
    if (m_runs.empty())
        QSKIP("no runs (see initTestCase)");
    const std::string adapter =
        exportError(m_runs.at("adapter"), path(QStringLiteral("bad/a.gguf")));
    QVERIFY2(adapter.find("non-linear") != std::string::npos, adapter.c_str());
    const std::string prompt = exportError(m_runs.at("prompt"), path(QStringLiteral("bad/p.gguf")));
    QVERIFY2(prompt.find("soft prompt") != std::string::npos, prompt.c_str());
    tb::ExportOptions lora;
    lora.format = "gguf-lora";
    lora.outDir = path(QStringLiteral("bad/full-adapter.gguf"));
    try {
        tb::exportRun(m_runs.at("full"), lora);
        QFAIL("a full run exported as a LoRA adapter");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find("gguf-lora writes LoRA factors") != std::string::npos,
                 e.what());
    }
    QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("bad/full-adapter.gguf"))));
    lora.outDir = path(QStringLiteral("bad/q8-adapter.gguf"));
    lora.dtype = "q8_0";
    try {
        tb::exportRun(m_runs.at("lora"), lora);
        QFAIL("a LoRA adapter exported as Q8_0");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find("f32, f16 or bf16") != std::string::npos, e.what());
    }
    const std::string folder = exportError(m_runs.at("lora"), path(QStringLiteral("bad/folder")));
    QVERIFY2(folder.find("ending in .gguf") != std::string::npos, folder.c_str());
    QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("bad/a.gguf"))));
    QVERIFY(!QFileInfo::exists(m_dir.filePath(QStringLiteral("bad/p.gguf"))));
}

QTEST_GUILESS_MAIN(TestGgufInterop)
#include "test_gguf_interop.moc"
