// TrainConfig: round trip through toJson, one case per validation rule (the message names the key),
// overrides, relative paths, and learning-rate schedules against closed-form values.
#include "eval/suite.h"
#include "memory/estimator.h"
#include "model/config.h"
#include "train/loss_scaler.h"
#include "train/schedule.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <set>

#include "test_util.h"

using nlohmann::json;

namespace {

// The smallest valid config: model and data.train_file.
json minimal()
{
    return {{"model", "/models/tiny"}, {"data", {{"train_file", "/data/train.jsonl"}}}};
}

// A config with every key set to a non-default value.
json full()
{
    return json::parse(R"({
      "name": "exp1", "model": "/models/tiny", "output_dir": "/runs", "method": "adapter",
      "quant": "nf4", "quant_double": true, "quant_head": false,
      "objective": "sft",
      "preference": {"beta": 2.0, "label_smoothing": 0.1, "gamma": 1.5, "sft_weight": 0.25,
                     "reference": "precomputed",
                     "layout": "hh-rlhf"},
      "batch_size": 4, "grad_accum": 3, "max_steps": 120, "epochs": 2, "precision": "bf16",
      "device": "cuda:1", "gradient_checkpointing": true, "loss": "chunked", "loss_chunk_tokens": 512, "eval_every": 10, "log_every": 5,
      "eval": {"generate_every": 25, "sample": 12, "metrics": ["exact_match", "bleu"],
               "max_new_tokens": 48},
      "dist": {"zero": 2, "timeout_s": 90, "bucket_mb": 8},
      "save_every": 20, "keep_checkpoints": 3, "seed": 18446744073709551615,
      "spike_factor": 3.5, "spike_window": 7,
      "lora": {"rank": 4, "alpha": 8.5, "dropout": 0.05, "targets": ["q_proj", "k_proj"],
               "rslora": true},
      "adapter": {"kind": "pfeiffer", "size": 32, "reduction_factor": 8, "activation": "gelu"},
      "prompt": {"num_tokens": 5, "init_text": "Tell a story"},
      "partial": {"trainable_blocks": 2, "modules": ["lm_head", "norms"]},
      "trainable_tokens": [2, "<|im_end|>"],
      "data": {"train_file": "/d/train.jsonl", "val_file": "/d/val.jsonl",
               "general_file": "/d/general.jsonl", "val_ratio": 0.2, "format": "messages",
               "chat_template": "chatml", "loss_on_responses_only": false, "packing": true,
               "group_by_length": false, "max_length": 64, "train_on": "last"},
      "optim": {"optimizer": "sgd", "lr": 0.0003, "weight_decay": 0.01, "beta1": 0.8,
                "beta2": 0.95, "eps": 1e-6, "momentum": 0.9, "l2": 0.001, "schedule": "linear",
                "warmup_steps": 7, "warmup_ratio": 0.1, "min_lr": 1e-5, "clip_norm": 0.5}
    })");
}

// Expects parseTrainConfig to throw tb::Error whose message contains every fragment.
void expectError(const json& j, const std::vector<std::string>& fragments)
{
    try {
        tb::parseTrainConfig(j, "run.json");
    } catch (const tb::Error& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.rfind("run.json: ", 0) == 0, msg.c_str());
        for (const auto& f : fragments)
            QVERIFY2(msg.find(f) != std::string::npos, ("'" + f + "' not in: " + msg).c_str());
        return;
    }
    QFAIL(("no error raised for " + j.dump()).c_str());
}

// minimal() with one override applied ("lora.rank=0").
json with(const std::string& override)
{
    json j = minimal();
    tb::applyOverride(j, override);
    return j;
}

void writeText(const std::string& path, const std::string& text)
{
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    tb::writeFileAtomic(path, text);
}

}  // namespace

class TestTrainConfig : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void defaults();
    void fullRoundTrip();
    void unknownKeys();
    void wrongTypes();
    void ranges();
    void ranges_data();
    void enumerations();
    void enumNames();
    void requiredKeys();
    void packingRules();
    void aliasesAndLists();
    void trainableTokens();
    void overrides();
    void relativePaths();
    void loadErrors();
    void scheduleClosedForms();
    void scheduleWarmupRatio();
    void plannedStepsArithmetic();
    void storeSnapshots();
    void lossScalerRules();
    void lossScalerState();
    void bundledExamples();

private:
    QTemporaryDir m_dir;
};

void TestTrainConfig::defaults()
{
    const tb::TrainConfig c = tb::parseTrainConfig(minimal(), "run.json");
    const tb::TrainConfig d;
    QCOMPARE(c.model, std::string("/models/tiny"));
    QCOMPARE(c.data.trainFile, std::string("/data/train.jsonl"));
    QVERIFY(c.method == tb::Method::Lora);
    QVERIFY(c.lora == d.lora);
    QVERIFY(c.optim == d.optim);
    QCOMPARE(c.batchSize, d.batchSize);
    QCOMPARE(c.spikeFactor, d.spikeFactor);
    QCOMPARE(c.sourcePath, std::string("run.json"));
    // null means "use the default"
    json j = minimal();
    j["lora"] = {{"rank", nullptr}};
    QCOMPARE(tb::parseTrainConfig(j, "run.json").lora.rank, d.lora.rank);
}

void TestTrainConfig::fullRoundTrip()
{
    const tb::TrainConfig c = tb::parseTrainConfig(full(), "/cfg/run.json");
    QCOMPARE(c.name, std::string("exp1"));
    QVERIFY(c.method == tb::Method::Adapter);
    QVERIFY(c.quant.kind == tb::QuantKind::Nf4 && c.quant.doubleQuant && !c.quant.head);
    QCOMPARE(c.seed, UINT64_MAX);
    QCOMPARE(c.device, std::string("cuda:1"));
    QCOMPARE(c.lora.targets, (std::vector<std::string>{"q_proj", "k_proj"}));
    QCOMPARE(c.adapter.reductionFactor, 8);
    QCOMPARE(c.prompt.initText, std::string("Tell a story"));
    QCOMPARE(c.partial.modules, (std::vector<std::string>{"lm_head", "norms"}));
    QCOMPARE(c.data.generalFile, std::string("/d/general.jsonl"));
    QCOMPARE(c.data.maxLength, 64);
    QCOMPARE(c.optim.eps, 1e-6);
    QCOMPARE(c.optim.warmupSteps, int64_t(7));
    QCOMPARE(c.loss, tb::LossKind::Chunked);
    QCOMPARE(c.lossChunkTokens, 512);
    QCOMPARE(c.eval.generateEvery, int64_t(25));
    QCOMPARE(c.eval.metrics, (std::vector<std::string>{"exact_match", "bleu"}));
    QVERIFY(c.objective == tb::Objective::Sft);
    QCOMPARE(c.preference.beta, 2.0);
    QCOMPARE(c.preference.labelSmoothing, 0.1);
    QCOMPARE(c.preference.gamma, 1.5);
    QVERIFY(c.preference.reference == tb::ReferenceKind::Precomputed);
    QVERIFY(c.preference.layout == tb::PairLayout::HhRlhf);

    // toJson is the full resolved config: every key of full() is there with the same value, and
    // parsing it again (also through text, as run.json is) gives the same config.
    const json out = tb::toJson(c);
    QCOMPARE(out, full());
    QVERIFY(tb::parseTrainConfig(out, c.sourcePath) == c);
    QVERIFY(tb::parseTrainConfig(json::parse(out.dump(2)), c.sourcePath) == c);
    const tb::TrainConfig m = tb::parseTrainConfig(minimal(), "run.json");
    QVERIFY(tb::parseTrainConfig(tb::toJson(m), "run.json") == m);
    QCOMPARE(tb::toJson(m).size(), full().size());
    // Every objective round-trips (pair objectives refuse packing, which full() sets).
    for (const char* objective : {"dpo", "ipo", "simpo", "orpo", "reward"}) {
        json pairRun = minimal();
        pairRun["objective"] = objective;
        const tb::TrainConfig p = tb::parseTrainConfig(pairRun, "run.json");
        QCOMPARE(std::string(tb::objectiveName(p.objective)), std::string(objective));
        QVERIFY(tb::parseTrainConfig(tb::toJson(p), "run.json") == p);
    }
    QCOMPARE(tb::toJson(m)["optim"].size(), full()["optim"].size());
}

void TestTrainConfig::storeSnapshots()
{
    // Data from a dataset store: store + snapshot ids, paths resolved against the config, round
    // trip.
    json j = minimal();
    j["data"] = {
        {"store", "project.tbstore"}, {"snapshot", "train-v2"}, {"val_snapshot", "validation-v1"}};
    const tb::TrainConfig c = tb::parseTrainConfig(j, "/work/runs/run.json");
    QCOMPARE(c.data.store, std::string("/work/runs/project.tbstore"));
    QCOMPARE(c.data.snapshot, std::string("train-v2"));
    QCOMPARE(c.data.valSnapshot, std::string("validation-v1"));
    QVERIFY(c.data.trainFile.empty());
    QVERIFY(tb::parseTrainConfig(tb::toJson(c), "/work/runs/run.json") == c);

    j["data"] = {{"store", "project.tbstore"}};
    expectError(j, {"'data.snapshot'", "is required with 'store'"});
    j["data"] = {{"store", "p.tbstore"}, {"snapshot", "train-v1"}, {"train_file", "t.jsonl"}};
    expectError(j, {"'data.train_file'", "cannot be combined with 'store'"});
    j["data"] = {{"snapshot", "train-v1"}, {"train_file", "t.jsonl"}};
    expectError(j, {"'data.store'", "is required for snapshots"});
}

void TestTrainConfig::unknownKeys()
{
    json j = minimal();
    j["learning_rate"] = 1;
    expectError(
        j, {"unknown key 'learning_rate'", "allowed keys of the top level", "batch_size", "optim"});
    j = minimal();
    j["lora"] = {{"rnak", 4}};
    expectError(j, {"unknown key 'lora.rnak'", "did you mean 'lora.rank'", "allowed keys of 'lora'",
                    "rank, alpha, dropout, targets, rslora"});
    j = minimal();
    j["data"]["trainfile"] = "x";
    expectError(j, {"unknown key 'data.trainfile'", "train_file", "max_length"});
    j = minimal();
    j["optim"] = {{"warmup", 3}};
    expectError(j, {"unknown key 'optim.warmup'", "warmup_steps"});
    for (const char* section : {"adapter", "prompt", "partial"}) {
        j = minimal();
        j[section] = {{"bogus", 1}};
        expectError(j, {std::string("unknown key '") + section + ".bogus'"});
    }
}

void TestTrainConfig::wrongTypes()
{
    expectError(with("lora.rank=\"4\""),
                {"key 'lora.rank'", "must be an integer", "got string \"4\""});
    expectError(with("lora.rank=4.5"), {"key 'lora.rank'", "must be an integer", "got number 4.5"});
    expectError(with("optim.lr=fast"), {"key 'optim.lr'", "must be a number", "got string"});
    expectError(with("data.packing=1"),
                {"key 'data.packing'", "must be true or false", "got number 1"});
    expectError(with("name=[1]"), {"key 'name'", "must be a string", "got array"});
    expectError(with("lora=3"), {"key 'lora'", "must be an object", "got number 3"});
    expectError(with("lora.targets={}"), {"key 'lora.targets'", "array of strings"});
    expectError(with("lora.targets=[\"q_proj\",2]"), {"key 'lora.targets'", "item 1"});
    expectError(with("seed=-1"), {"key 'seed'", ">= 0"});
    expectError(with("seed=1.5"), {"key 'seed'", "must be an integer"});
    expectError(json::array(), {"must be a JSON object"});
    // An integral float is accepted as an integer.
    QCOMPARE(tb::parseTrainConfig(with("lora.rank=4.0"), "run.json").lora.rank, 4);
}

void TestTrainConfig::trainableTokens()
{
    // Default and "auto": the model's stop tokens; [] none; a list of ids and token texts.
    QVERIFY(tb::parseTrainConfig(minimal(), "run.json").trainableTokens.automatic);
    QVERIFY(tb::parseTrainConfig(with("trainable_tokens=auto"), "run.json").trainableTokens ==
            tb::TrainableTokensOptions{});
    const auto none = tb::parseTrainConfig(with("trainable_tokens=[]"), "run.json");
    QVERIFY(!none.trainableTokens.automatic && none.trainableTokens.tokens.empty());
    QCOMPARE(tb::toJson(none)["trainable_tokens"], json::array());
    const auto listed =
        tb::parseTrainConfig(with("trainable_tokens=[\"</s>\", 7]"), "run.json").trainableTokens;
    QVERIFY(!listed.automatic);
    QCOMPARE(listed.tokens.size(), size_t(2));
    QVERIFY((listed.tokens[0] == tb::TokenRef{-1, "</s>"}));
    QVERIFY((listed.tokens[1] == tb::TokenRef{7, ""}));
    QCOMPARE(tb::toJson(tb::parseTrainConfig(minimal(), "run.json"))["trainable_tokens"],
             json("auto"));
    // Bad values name the key and the item.
    expectError(with("trainable_tokens=eos"),
                {"key 'trainable_tokens'", "\"auto\" or an array", "got string \"eos\""});
    expectError(with("trainable_tokens={}"), {"key 'trainable_tokens'", "got object"});
    expectError(with("trainable_tokens=[2, -1]"),
                {"key 'trainable_tokens'", "item 1", "token id", "got number -1"});
    expectError(with("trainable_tokens=[\"\"]"), {"key 'trainable_tokens'", "item 0"});
    expectError(with("trainable_tokens=[1.5]"), {"key 'trainable_tokens'", "item 0"});
}

void TestTrainConfig::ranges_data()
{
    QTest::addColumn<QString>("override");
    QTest::addColumn<QString>("fragment");
    auto row = [](const char* o, const char* f) {
        QTest::newRow(o) << QString::fromUtf8(o) << QString::fromUtf8(f);
    };
    row("lora.rank=0", "key 'lora.rank' must be >= 1 (got 0)");
    row("lora.alpha=0", "key 'lora.alpha' must be > 0 (got 0");
    row("lora.dropout=1", "key 'lora.dropout' must be in [0, 1) (got 1");
    row("lora.dropout=-0.1", "key 'lora.dropout' must be in [0, 1)");
    row("batch_size=0", "key 'batch_size' must be >= 1 (got 0)");
    row("grad_accum=0", "key 'grad_accum' must be >= 1 (got 0)");
    row("max_steps=-1", "key 'max_steps' must be >= 0 (got -1)");
    row("epochs=0", "key 'epochs' must be >= 1");
    row("eval_every=-5", "key 'eval_every' must be >= 0");
    row("eval.generate_every=-1", "key 'eval.generate_every' must be >= 0");
    row("eval.sample=0", "key 'eval.sample' must be >= 1");
    row("eval.max_new_tokens=0", "key 'eval.max_new_tokens' must be >= 1");
    row("eval.metrics=[\"blue\"]", "key 'eval.metrics' items must be among exact_match | f1");
    row("log_every=0", "key 'log_every' must be >= 1");
    row("save_every=-1", "key 'save_every' must be >= 0");
    row("keep_checkpoints=-1", "key 'keep_checkpoints' must be >= 0 (got -1)");
    row("dist.zero=3", "key 'dist.zero' 3 is not offered: ZeRO-3 shards the weights themselves");
    row("dist.zero=4", "key 'dist.zero' must be 0, 1 or 2 (got 4)");
    row("dist.timeout_s=0", "key 'dist.timeout_s' must be >= 1 (got 0)");
    row("spike_factor=1", "key 'spike_factor' must be 0 (off) or > 1 (got 1");
    row("spike_factor=-2", "key 'spike_factor' must be 0 (off) or > 1");
    row("spike_window=0", "key 'spike_window' must be >= 1");
    row("optim.lr=0", "key 'optim.lr' must be > 0 (got 0");
    row("optim.lr=-1e-3", "key 'optim.lr' must be > 0");
    row("optim.min_lr=-1e-6", "key 'optim.min_lr' must be >= 0");
    row("optim.min_lr=0.01", "key 'optim.min_lr' must be <= optim.lr");
    row("optim.warmup_ratio=1", "key 'optim.warmup_ratio' must be in [0, 1)");
    row("optim.warmup_steps=-1", "key 'optim.warmup_steps' must be >= 0");
    row("optim.beta1=1", "key 'optim.beta1' must be in [0, 1)");
    row("optim.beta2=1.5", "key 'optim.beta2' must be in [0, 1)");
    row("optim.eps=0", "key 'optim.eps' must be > 0");
    row("optim.weight_decay=-0.1", "key 'optim.weight_decay' must be >= 0");
    row("optim.momentum=1", "key 'optim.momentum' must be in [0, 1)");
    row("optim.l2=-1", "key 'optim.l2' must be >= 0");
    row("optim.clip_norm=-1", "key 'optim.clip_norm' must be >= 0");
    row("data.max_length=7", "key 'data.max_length' must be >= 8 (got 7)");
    row("data.val_ratio=1", "key 'data.val_ratio' must be in [0, 1)");
    row("prompt.num_tokens=0", "key 'prompt.num_tokens' must be >= 1");
    row("partial.trainable_blocks=-1", "key 'partial.trainable_blocks' must be >= 0");
    row("adapter.reduction_factor=0", "key 'adapter.reduction_factor' must be >= 1");
    row("adapter.size=-1", "key 'adapter.size' must be >= 0");
    row("lora.rank=3000000000", "key 'lora.rank' must be <= 65536");
    row("adapter.size=100000000", "key 'adapter.size' must be <= 1048576");
    row("name=a/b", "key 'name' must be a non-empty folder name");
    row("output_dir=\"\"", "key 'output_dir' must not be empty");
}

void TestTrainConfig::ranges()
{
    QFETCH(QString, override);
    QFETCH(QString, fragment);
    expectError(with(override.toStdString()), {fragment.toStdString()});
}

void TestTrainConfig::enumerations()
{
    expectError(with("method=qlora"),
                {"key 'method'", "full | partial | lora | adapter | prompt", "got 'qlora'"});
    expectError(with("precision=fp8"), {"key 'precision'", "fp32 | bf16 | fp16"});
    expectError(with("device=gpu"), {"key 'device'", "cpu | cuda | auto | cuda:N", "got 'gpu'"});
    expectError(with("device=cuda:x"), {"key 'device'"});
    expectError(with("adapter.kind=lora"), {"key 'adapter.kind'", "houlsby | pfeiffer"});
    expectError(with("adapter.activation=swish"),
                {"key 'adapter.activation'", "relu | gelu | silu | tanh"});
    expectError(with("data.format=csv"),
                {"key 'data.format'", "auto | alpaca | messages | prompt_completion | text"});
    expectError(with("data.chat_template=zephyr"),
                {"key 'data.chat_template'", "chatml | llama3 | inst"});
    expectError(with("optim.optimizer=adam"), {"key 'optim.optimizer'", "adamw | sgd"});
    expectError(with("optim.schedule=step"),
                {"key 'optim.schedule'", "constant | linear | cosine"});
    expectError(with("partial.modules=head"),
                {"key 'partial.modules'", "embeddings | lm_head | norms", "got 'head'"});
    // method partial with nothing to train
    json j = with("method=partial");
    tb::applyOverride(j, "partial.trainable_blocks=0");
    expectError(j, {"key 'partial.trainable_blocks'", "train nothing"});

    for (const char* device : {"cpu", "cuda", "auto", "cuda:0", "cuda:12"})
        QCOMPARE(tb::parseTrainConfig(with(std::string("device=") + device), "run.json").device,
                 std::string(device));
    for (const char* method : {"full", "partial", "lora", "adapter", "prompt"})
        QCOMPARE(
            std::string(tb::methodName(
                tb::parseTrainConfig(with(std::string("method=") + method), "run.json").method)),
            std::string(method));
}

void TestTrainConfig::enumNames()
{
    // Each closed choice: its name reads back as its value; unknown names are nullopt.
    for (auto p : {tb::Precision::Fp32, tb::Precision::Bf16, tb::Precision::Fp16})
        QCOMPARE(tb::parsePrecision(tb::precisionName(p)), std::optional(p));
    for (auto l : {tb::LossKind::Full, tb::LossKind::Chunked})
        QCOMPARE(tb::parseLossKind(tb::lossKindName(l)), std::optional(l));
    for (auto o : {tb::OptimizerKind::AdamW, tb::OptimizerKind::Sgd})
        QCOMPARE(tb::parseOptimizerKind(tb::optimizerKindName(o)), std::optional(o));
    for (auto s : {tb::ScheduleKind::Constant, tb::ScheduleKind::Linear, tb::ScheduleKind::Cosine})
        QCOMPARE(tb::parseScheduleKind(tb::scheduleKindName(s)), std::optional(s));
    for (auto k : {tb::AdapterKind::Houlsby, tb::AdapterKind::Pfeiffer})
        QCOMPARE(tb::parseAdapterKind(tb::adapterKindName(k)), std::optional(k));
    for (auto a : {tb::AdapterActivation::Relu, tb::AdapterActivation::Gelu,
                   tb::AdapterActivation::Silu, tb::AdapterActivation::Tanh})
        QCOMPARE(tb::parseAdapterActivation(tb::adapterActivationName(a)), std::optional(a));
    for (auto m : {tb::Method::Full, tb::Method::Partial, tb::Method::Lora, tb::Method::Adapter,
                   tb::Method::Prompt})
        QCOMPARE(tb::parseMethod(tb::methodName(m)), std::optional(m));
    QVERIFY(!tb::parsePrecision("bf16-mixed"));
    QVERIFY(!tb::parseOptimizerKind("sgd-momentum"));
    QVERIFY(!tb::parseMethod("qlora"));
    QCOMPARE(std::string(tb::chatTemplateChoiceName(std::nullopt)), std::string("model"));
    // run.json files from before the model's own templates wrote "auto" for it.
    tb::TrainConfig legacy = tb::parseTrainConfig(
        [] {
            json j = minimal();
            j["data"]["chat_template"] = "auto";
            return j;
        }(),
        "run.json");
    QVERIFY(!legacy.data.chatTemplate);
    for (auto on : {tb::TrainOn::All, tb::TrainOn::Last})
        QCOMPARE(tb::parseTrainOn(tb::trainOnName(on)), std::optional(on));
    QCOMPARE(std::string(tb::chatTemplateChoiceName(tb::ChatTemplateFamily::Llama3)),
             std::string("llama3"));

    // A config reads each name into its value and run.json writes the same name back.
    const tb::TrainConfig d = tb::parseTrainConfig(minimal(), "run.json");
    QCOMPARE(d.precision, tb::Precision::Fp32);
    QCOMPARE(d.loss, tb::LossKind::Full);
    QCOMPARE(d.optim.optimizer, tb::OptimizerKind::AdamW);
    QCOMPARE(d.optim.schedule, tb::ScheduleKind::Cosine);
    QCOMPARE(d.adapter.kind, tb::AdapterKind::Houlsby);
    QCOMPARE(d.adapter.activation, tb::AdapterActivation::Relu);
    QCOMPARE(d.data.format, tb::ExampleFormat::Auto);
    QVERIFY(!d.data.chatTemplate.has_value());  // auto
    QCOMPARE(tb::toJson(d)["data"]["chat_template"], json("model"));
    const auto read = [](const std::string& override) {
        return tb::parseTrainConfig(with(override), "run.json");
    };
    QCOMPARE(read("precision=fp16").precision, tb::Precision::Fp16);
    QCOMPARE(read("optim.optimizer=sgd").optim.optimizer, tb::OptimizerKind::Sgd);
    QCOMPARE(read("data.format=prompt_completion").data.format,
             tb::ExampleFormat::PromptCompletion);
    QCOMPARE(read("data.chat_template=inst").data.chatTemplate,
             std::optional(tb::ChatTemplateFamily::Inst));
    QCOMPARE(read("adapter.activation=silu").adapter.activation, tb::AdapterActivation::Silu);
    QCOMPARE(tb::toJson(read("adapter.kind=pfeiffer"))["adapter"]["kind"], json("pfeiffer"));
    // Aliases the parse functions know are still not admitted by a config.
    expectError(with("data.format=chat"), {"key 'data.format'", "got 'chat'"});
    expectError(with("data.chat_template=mistral"), {"key 'data.chat_template'", "got 'mistral'"});
}

void TestTrainConfig::requiredKeys()
{
    json j = minimal();
    j.erase("model");
    expectError(j, {"key 'model' is required"});
    j = minimal();
    j["data"].erase("train_file");
    expectError(j, {"key 'data.train_file' is required"});
    j = minimal();
    j.erase("data");
    expectError(j, {"key 'data.train_file' is required"});
    expectError(with("model=\"\""), {"key 'model' is required"});
}

// data.packing and data.group_by_length: parsed and written back; packing refused with a soft
// prompt and with grouping, naming the key.
void TestTrainConfig::packingRules()
{
    QVERIFY(!tb::parseTrainConfig(minimal(), "run.json").data.groupByLength);
    const tb::TrainConfig grouped =
        tb::parseTrainConfig(with("data.group_by_length=true"), "run.json");
    QVERIFY(grouped.data.groupByLength);
    QCOMPARE(tb::toJson(grouped)["data"]["group_by_length"], json(true));
    QVERIFY(tb::parseTrainConfig(tb::toJson(grouped), "run.json") == grouped);
    expectError(with("data.group_by_length=\"yes\""),
                {"key 'data.group_by_length'", "must be true or false"});
    json j = with("data.packing=true");
    tb::applyOverride(j, "data.group_by_length=true");
    expectError(j, {"key 'data.group_by_length'", "cannot be combined with 'packing'"});
    j = with("data.packing=true");
    tb::applyOverride(j, "method=prompt");
    expectError(j, {"key 'data.packing'", "method 'prompt'", "soft prompt"});
    tb::applyOverride(j, "data.packing=false");
    QVERIFY(tb::parseTrainConfig(j, "run.json").method == tb::Method::Prompt);
    QVERIFY(tb::parseTrainConfig(with("data.packing=true"), "run.json").data.packing);
}

void TestTrainConfig::aliasesAndLists()
{
    json j = minimal();
    j["lr"] = 5e-4;
    QCOMPARE(tb::parseTrainConfig(j, "run.json").optim.lr, 5e-4);
    // min_lr is checked against the aliased lr, not the default
    j["lr"] = 0.05;
    j["optim"] = {{"min_lr", 0.01}};
    QCOMPARE(tb::parseTrainConfig(j, "run.json").optim.minLr, 0.01);
    j["lr"] = 0.001;
    expectError(j, {"key 'optim.min_lr' must be <= optim.lr"});
    j["optim"] = {{"lr", 1e-3}};
    expectError(j, {"'lr' and 'optim.lr' are both set"});
    j = minimal();
    j["lr"] = 0;
    expectError(j, {"key 'lr' must be > 0"});

    // targets: array, or a comma-separated string (spaces and blanks dropped)
    QCOMPARE(
        tb::parseTrainConfig(with("lora.targets=q_proj, v_proj,,o_proj"), "run.json").lora.targets,
        (std::vector<std::string>{"q_proj", "v_proj", "o_proj"}));
    QCOMPARE(tb::parseTrainConfig(with("lora.targets=c_attn"), "run.json").lora.targets,
             (std::vector<std::string>{"c_attn"}));
    QCOMPARE(
        tb::parseTrainConfig(with("partial.modules=embeddings,norms"), "run.json").partial.modules,
        (std::vector<std::string>{"embeddings", "norms"}));
}

void TestTrainConfig::overrides()
{
    json j = minimal();
    tb::applyOverride(j, "lora.rank=4");                   // nested, integer
    tb::applyOverride(j, "optim.lr=2e-4");                 // nested object created, number
    tb::applyOverride(j, "data.packing=true");             // boolean
    tb::applyOverride(j, "name=my run");                   // not JSON: a string
    tb::applyOverride(j, "optim.schedule=linear");         // not JSON: a string
    tb::applyOverride(j, "data.chat_template=\"plain\"");  // a JSON string
    tb::applyOverride(j, "lora.targets=[\"q_proj\",\"o_proj\"]");
    tb::applyOverride(j, "prompt.init_text=a=b");  // only the first '=' splits
    tb::applyOverride(j, "a.b.c=1");               // deep paths are created
    QCOMPARE(j["lora"]["rank"], json(4));
    QVERIFY(j["lora"]["rank"].is_number_integer());
    QCOMPARE(j["optim"]["lr"], json(2e-4));
    QCOMPARE(j["data"]["packing"], json(true));
    QCOMPARE(j["data"]["train_file"], json("/data/train.jsonl"));  // siblings kept
    QCOMPARE(j["name"], json("my run"));
    QCOMPARE(j["prompt"]["init_text"], json("a=b"));
    QCOMPARE(j["a"]["b"]["c"], json(1));
    j.erase("a");
    const tb::TrainConfig c = tb::parseTrainConfig(j, "run.json");
    QCOMPARE(c.lora.rank, 4);
    QCOMPARE(c.optim.lr, 2e-4);
    QCOMPARE(c.optim.schedule, tb::ScheduleKind::Linear);
    QCOMPARE(c.data.chatTemplate, std::optional(tb::ChatTemplateFamily::Plain));
    QCOMPARE(c.lora.targets, (std::vector<std::string>{"q_proj", "o_proj"}));

    // "lr" goes to optim.lr, so it can override a file that sets optim.lr
    json k = minimal();
    k["optim"] = {{"lr", 1e-3}};
    tb::applyOverride(k, "lr=3e-4");
    QCOMPARE(tb::parseTrainConfig(k, "run.json").optim.lr, 3e-4);

    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::applyOverride(j, "lora.rank"));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::applyOverride(j, "=4"));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::applyOverride(j, "lora..rank=4"));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::applyOverride(j, "name.first=4"));  // name is a string
    try {
        tb::applyOverride(j, "lora.rank");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("key=value") != std::string::npos);
    }
}

void TestTrainConfig::relativePaths()
{
    namespace fs = std::filesystem;
    const std::string root = fs::path(m_dir.path().toStdString()).lexically_normal().string();
    const std::string cfgDir = root + "/configs";
    writeText(cfgDir + "/data/train.jsonl", "{\"text\": \"hi\"}\n");
    writeText(cfgDir + "/data/val.jsonl", "{\"text\": \"hi\"}\n");
    writeText(cfgDir + "/run.json", R"({"model": "../models/tiny", "output_dir": "out",
        "data": {"train_file": "data/train.jsonl", "val_file": "./data/val.jsonl",
                 "general_file": "/abs/general.jsonl"}})");
    // general_file does not exist: loading names it
    try {
        tb::loadTrainConfig(cfgDir + "/run.json");
        QFAIL("missing general_file not reported");
    } catch (const tb::Error& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find("key 'data.general_file': file not found: /abs/general.jsonl") !=
                     std::string::npos,
                 msg.c_str());
    }
    const tb::TrainConfig c = tb::loadTrainConfig(cfgDir + "/run.json", {"data.general_file=\"\""});
    QCOMPARE(c.model, root + "/models/tiny");
    QCOMPARE(c.outputDir, cfgDir + "/out");
    QCOMPARE(c.data.trainFile, cfgDir + "/data/train.jsonl");
    QCOMPARE(c.data.valFile, cfgDir + "/data/val.jsonl");
    QCOMPARE(c.data.generalFile, std::string());
    QCOMPARE(c.sourcePath, cfgDir + "/run.json");
    // run.json written to another folder and read back resolves to the same paths
    writeText(root + "/elsewhere/run.json", tb::toJson(c).dump(2));
    QVERIFY(tb::loadTrainConfig(root + "/elsewhere/run.json").data.trainFile == c.data.trainFile);
    // A model's config.json stands for its folder (not read as weights).
    writeText(root + "/models/tiny/config.json", "{}");
    // A path given as an override is relative to the working folder (where it was typed).
    // (The working folder comes back however the checks end: the later tests use it.)
    struct Restore {
        QString before = QDir::currentPath();
        ~Restore() { QDir::setCurrent(before); }
    } restore;
    QVERIFY(QDir::setCurrent(QString::fromStdString(root)));
    QCOMPARE(tb::loadTrainConfig(cfgDir + "/run.json",
                                 {"data.general_file=\"\"", "model=\"models/tiny/config.json\""})
                 .model,
             root + "/models/tiny");
    QCOMPARE(
        tb::loadTrainConfig(cfgDir + "/run.json", {"data.general_file=\"\"", "output_dir=runs"})
            .outputDir,
        root + "/runs");
    // ... also inside a whole data object.
    writeText(root + "/typed.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n");
    QCOMPARE(tb::loadTrainConfig(cfgDir + "/run.json", {"data={\"train_file\": \"typed.jsonl\"}"})
                 .data.trainFile,
             root + "/typed.jsonl");
    QVERIFY(QDir::setCurrent(restore.before));

    // a missing train_file is reported with the key name
    writeText(cfgDir + "/missing.json", R"({"model": "m", "data": {"train_file": "nope.jsonl"}})");
    try {
        tb::loadTrainConfig(cfgDir + "/missing.json");
        QFAIL("missing train_file not reported");
    } catch (const tb::Error& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find(cfgDir + "/missing.json: key 'data.train_file': file not found: " +
                          cfgDir + "/nope.jsonl") != std::string::npos,
                 msg.c_str());
    }
    // overrides are applied before validation, with the config path in messages
    try {
        tb::loadTrainConfig(cfgDir + "/run.json", {"lora.rank=0"});
        QFAIL("override not validated");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find(cfgDir +
                                            "/run.json: key 'lora.rank' must be >= 1 (got 0)") !=
                     std::string::npos,
                 e.what());
    }
}

void TestTrainConfig::loadErrors()
{
    const std::string dir = m_dir.path().toStdString();
    writeText(dir + "/bad.json", "{\"model\": ");
    try {
        tb::loadTrainConfig(dir + "/bad.json");
        QFAIL("invalid JSON accepted");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find(dir + "/bad.json: invalid JSON") == 0, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::loadTrainConfig(dir + "/absent.json"));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::loadTrainConfig(dir));
    // A key given twice in one object (hand-edited, the first rank forgotten below): refused by
    // its path, not the last one kept without a word. The same name in two objects is fine.
    writeText(dir + "/twice.json",
              R"({"model": "m", "method": "lora", "optim": {"lr": 0.1},
                  "lora": {"rank": 8, "alpha": 16, "targets": ["q_proj"], "rank": 4},
                  "data": {"train_file": "t.jsonl"}})");
    const std::string error = tbtest::errorOf([&] { tb::loadTrainConfig(dir + "/twice.json"); });
    QVERIFY2(error.find(dir + "/twice.json: key 'lora.rank' is given twice") == 0, error.c_str());
    // A config file naming a metric twice is refused (the evaluation would refuse the list and
    // the run skip every generation evaluation); a run.json written before that check still
    // loads, each metric kept once.
    writeText(dir + "/metrics.json",
              R"({"model": "m", "data": {"train_file": "t.jsonl"},
                  "eval": {"metrics": ["rougeL", "bleu", "rougeL"]}})");
    const std::string twice = tbtest::errorOf([&] { tb::loadTrainConfig(dir + "/metrics.json"); });
    QVERIFY2(twice == dir + "/metrics.json: key 'eval.metrics' names 'rougeL' twice",
             twice.c_str());
    nlohmann::json run = minimal();
    run["eval"] = {{"metrics", {"rougeL", "bleu", "rougeL"}}};
    QCOMPARE(tb::parseTrainConfig(run, "run.json").eval.metrics,
             (std::vector<std::string>{"rougeL", "bleu"}));
    QCOMPARE(tb::repeatedJsonKey(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})"),
             std::string());
    QCOMPARE(tb::repeatedJsonKey(R"({"c": [{"x": 1, "y": 2, "x": 3}]})"), std::string("c.x"));
    QCOMPARE(tb::repeatedJsonKey(R"({"a": 1, "a": 1})"), std::string("a"));
    QCOMPARE(tb::repeatedJsonKey("{\"a\": "), std::string());  // not JSON: the parser says so
}

void TestTrainConfig::scheduleClosedForms()
{
    tb::OptimOptions o;
    o.lr = 1e-3;
    o.minLr = 1e-4;
    o.warmupSteps = 10;
    const int64_t total = 110;  // 100 decay steps after warmup
    const double tol = 1e-15;

    for (tb::ScheduleKind schedule :
         {tb::ScheduleKind::Constant, tb::ScheduleKind::Linear, tb::ScheduleKind::Cosine}) {
        o.schedule = schedule;
        // warmup: lr / W, 2 lr / W, ..., lr at s = W - 1
        QVERIFY(std::fabs(tb::learningRateAt(o, 0, total) - 1e-3 / 10) < tol);
        QVERIFY(std::fabs(tb::learningRateAt(o, 4, total) - 5e-3 / 10) < tol);
        QVERIFY(std::fabs(tb::learningRateAt(o, 9, total) - 1e-3) < tol);
        // first step after warmup is the peak (p = 0)
        QVERIFY(std::fabs(tb::learningRateAt(o, 10, total) - 1e-3) < tol);
        const std::vector<double> plan = tb::plannedSchedule(o, total);
        QCOMPARE(plan.size(), size_t(total));
        for (int64_t s = 0; s < total; ++s)
            QCOMPARE(plan[s], tb::learningRateAt(o, s, total));
    }

    o.schedule = tb::ScheduleKind::Constant;
    QCOMPARE(tb::learningRateAt(o, 109, total), 1e-3);
    QCOMPARE(tb::learningRateAt(o, 500, total), 1e-3);

    o.schedule = tb::ScheduleKind::Linear;
    // at the end (s = T - 1): min_lr + (lr - min_lr) / (T - W)
    QVERIFY(std::fabs(tb::learningRateAt(o, 109, total) - (1e-4 + 9e-4 / 100)) < tol);
    QVERIFY(std::fabs(tb::learningRateAt(o, 60, total) - (1e-4 + 9e-4 * 0.5)) < tol);
    QVERIFY(std::fabs(tb::learningRateAt(o, 110, total) - 1e-4) < tol);  // p clamps to 1
    QVERIFY(std::fabs(tb::learningRateAt(o, 1000, total) - 1e-4) < tol);

    o.schedule = tb::ScheduleKind::Cosine;
    // midpoint after warmup: (lr + min_lr) / 2
    QVERIFY(std::fabs(tb::learningRateAt(o, 60, total) - (1e-3 + 1e-4) / 2) < tol);
    // quarter: min + (lr - min) (1 + cos(pi / 4)) / 2
    QVERIFY(std::fabs(tb::learningRateAt(o, 35, total) -
                      (1e-4 + 9e-4 * 0.5 * (1 + std::sqrt(0.5)))) < tol);
    QVERIFY(std::fabs(tb::learningRateAt(o, 110, total) - 1e-4) < tol);
    // decreasing after warmup
    const std::vector<double> plan = tb::plannedSchedule(o, total);
    for (int64_t s = 11; s < total; ++s)
        QVERIFY(plan[s] < plan[s - 1]);

    // no warmup: step 0 is the peak; a single-step run is at the peak
    o.warmupSteps = 0;
    QCOMPARE(tb::learningRateAt(o, 0, 50), 1e-3);
    QCOMPARE(tb::plannedSchedule(o, 1), std::vector<double>{1e-3});
    QVERIFY(tb::plannedSchedule(o, 0).empty());
    // warmup longer than the run: still ramping at the last step
    o.warmupSteps = 20;
    QVERIFY(std::fabs(tb::learningRateAt(o, 9, 10) - 1e-3 * 10 / 20) < tol);
}

void TestTrainConfig::scheduleWarmupRatio()
{
    tb::OptimOptions o;
    o.lr = 2e-3;
    o.warmupRatio = 0.1;
    QCOMPARE(tb::warmupStepsFor(o, 100), int64_t(10));
    QCOMPARE(tb::warmupStepsFor(o, 25), int64_t(3));  // round(2.5) = 3
    QCOMPARE(tb::warmupStepsFor(o, 24), int64_t(2));  // round(2.4)
    QCOMPARE(tb::warmupStepsFor(o, 4), int64_t(0));
    o.warmupSteps = 7;  // explicit steps win over the ratio
    QCOMPARE(tb::warmupStepsFor(o, 100), int64_t(7));
    o.warmupSteps = 0;
    QVERIFY(std::fabs(tb::learningRateAt(o, 0, 100) - 2e-3 / 10) < 1e-15);
    o.schedule = tb::ScheduleKind::Linear;
    QVERIFY(std::fabs(tb::learningRateAt(o, 99, 100) - 2e-3 / 90) < 1e-15);
}

void TestTrainConfig::plannedStepsArithmetic()
{
    tb::TrainConfig c;
    c.batchSize = 8;
    c.gradAccum = 2;
    c.epochs = 3;
    QCOMPARE(tb::plannedSteps(c, 160), int64_t(3 * 10));  // 160 / 16 = 10 per epoch
    QCOMPARE(tb::plannedSteps(c, 161), int64_t(3 * 11));  // ceil(161 / 16) = 11
    QCOMPARE(tb::plannedSteps(c, 1), int64_t(3));
    QCOMPARE(tb::plannedSteps(c, 0), int64_t(1));  // at least one step
    c.maxSteps = 42;
    QCOMPARE(tb::plannedSteps(c, 161), int64_t(42));
}

// fp16 dynamic loss scaling: halve and skip on overflow, double after growthInterval finite steps
// in a row (an overflow restarts the count), and give up at the floor instead of skipping forever.
void TestTrainConfig::lossScalerRules()
{
    using Outcome = tb::DynamicLossScaler::Outcome;
    tb::DynamicLossScaler defaults;
    QCOMPARE(defaults.scale(), 65536.0);

    tb::DynamicLossScaler s(tb::LossScalerOptions{1024.0, 2.0, 0.5, 3, 1.0});
    QVERIFY(s.update(true) == Outcome::Applied);
    QVERIFY(s.update(true) == Outcome::Applied);
    QCOMPARE(s.scale(), 1024.0);  // two good steps: not yet
    QVERIFY(s.update(false) == Outcome::Skipped);
    QCOMPARE(s.scale(), 512.0);
    QCOMPARE(s.goodSteps(), int64_t{0});
    for (int i = 0; i < 2; ++i)
        QVERIFY(s.update(true) == Outcome::Applied);
    QCOMPARE(s.scale(), 512.0);  // the overflow restarted the count
    QVERIFY(s.update(true) == Outcome::Applied);
    QCOMPARE(s.scale(), 1024.0);  // third good step in a row
    for (int i = 0; i < 6; ++i)
        s.update(true);
    QCOMPARE(s.scale(), 4096.0);  // 1024 * 2^(6/3)

    // 4096 -> 1 takes 12 backoffs; the 13th overflow at the floor ends the run.
    for (int i = 0; i < 12; ++i)
        QVERIFY(s.update(false) == Outcome::Skipped);
    QCOMPARE(s.scale(), 1.0);
    QVERIFY(s.update(false) == Outcome::Exhausted);
    QCOMPARE(s.skippedSteps(), int64_t{14});
    QVERIFY(s.update(true) == Outcome::Applied);  // a later finite step still applies
}

// Checkpointed state restores the count toward the next growth (exact resume), and an older run's
// bare number restores the scale.
void TestTrainConfig::lossScalerState()
{
    tb::LossScalerOptions options{256.0, 2.0, 0.5, 4, 1.0};
    tb::DynamicLossScaler a(options);
    a.update(true);
    a.update(false);
    a.update(true);
    a.update(true);
    const json state = json::parse(a.state().dump());
    tb::DynamicLossScaler b(options);
    b.restore(state);
    QCOMPARE(b.scale(), 128.0);
    QCOMPARE(b.goodSteps(), int64_t{2});
    for (int i = 0; i < 2; ++i) {
        a.update(true);
        b.update(true);
    }
    QCOMPARE(a.scale(), 256.0);
    QCOMPARE(b.scale(), a.scale());

    tb::DynamicLossScaler old(options);
    old.restore(json(2048.0));
    QCOMPARE(old.scale(), 2048.0);
    QCOMPARE(old.goodSteps(), int64_t{0});
}

namespace {

// A pair file in TRL's standard conversational layout, checked row by row: a user prompt, one
// assistant turn each for chosen and rejected, non-empty and different.
std::vector<json> readPairs(const std::string& path)
{
    std::ifstream in(path);
    std::vector<json> rows;
    std::set<std::string> prompts;
    for (std::string line; std::getline(in, line);) {
        const json row = json::parse(line);
        const std::string where = path + ":" + std::to_string(rows.size() + 1);
        if (row.size() != 3 || row.at("prompt").size() != 1 || row.at("chosen").size() != 1 ||
            row.at("rejected").size() != 1)
            throw std::runtime_error(where + ": not prompt + chosen + rejected, one turn each");
        const std::string prompt = row["prompt"][0].at("content").get<std::string>();
        const std::string chosen = row["chosen"][0].at("content").get<std::string>();
        const std::string rejected = row["rejected"][0].at("content").get<std::string>();
        if (row["prompt"][0].at("role") != "user" || row["chosen"][0].at("role") != "assistant" ||
            row["rejected"][0].at("role") != "assistant" || prompt.empty() || chosen.empty() ||
            chosen == rejected || !prompts.insert(prompt).second)
            throw std::runtime_error(where +
                                     ": bad roles, empty, equal answers or repeated prompt");
        rows.push_back(row);
    }
    return rows;
}

std::string turn(const json& row, const char* key)
{
    return row.at(key)[0].at("content").get<std::string>();
}

}  // namespace

// Every run config in datasets/examples parses with its files present, and the memory planner
// accepts it; the preference examples' pair files are TRL's standard layout, and the tiny-pref
// rule suite's check separates every chosen answer from every rejected one.
void TestTrainConfig::bundledExamples()
{
    const std::filesystem::path dir = TB_SOURCE_DIR "/datasets/examples";
    std::map<std::string, tb::Objective> objectives;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".json")
            continue;
        const std::string stem = entry.path().stem().string();
        tb::TrainConfig c;
        try {
            c = tb::loadTrainConfig(entry.path().string());
        } catch (const tb::Error& e) {
            QFAIL(qPrintable(QString::fromStdString(stem + ": " + e.what())));
        }
        QCOMPARE(c.name, stem);
        objectives[stem] = c.objective;
        for (const std::string& f : {c.model, c.data.trainFile, c.data.valFile})
            QVERIFY2(std::filesystem::exists(f), (stem + ": " + f).c_str());
        auto o = tb::estimateOptionsFor(c, c.data.maxLength);
        const auto e = tb::estimateMemory(tb::loadModelConfig(c.model), c, o);
        QVERIFY2(e.total > 0, stem.c_str());
        if (!tb::trainsOnPairs(c.objective))
            continue;
        QCOMPARE(e.sequences, 2 * int64_t(c.batchSize));
        QVERIFY(c.preference.layout == tb::PairLayout::Standard);
        for (const std::string& f : {c.data.trainFile, c.data.valFile}) {
            try {
                QVERIFY(!readPairs(f).empty());
            } catch (const std::exception& e) {
                QFAIL(e.what());
            }
        }
    }
    const std::map<std::string, tb::Objective> expected = {{"sft-pref-tiny", tb::Objective::Sft},
                                                           {"dpo-tiny", tb::Objective::Dpo},
                                                           {"simpo-tiny", tb::Objective::Simpo},
                                                           {"orpo-tiny", tb::Objective::Orpo},
                                                           {"reward-tiny", tb::Objective::Reward}};
    for (const auto& [name, objective] : expected) {
        QVERIFY2(objectives.count(name), name.c_str());
        QVERIFY2(objectives[name] == objective, name.c_str());
    }

    const std::string pref = TB_SOURCE_DIR "/datasets/tiny-pref/";
    const auto train = readPairs(pref + "train.jsonl");
    const auto val = readPairs(pref + "val.jsonl");
    QCOMPARE(train.size(), size_t(400));
    QCOMPARE(val.size(), size_t(80));
    const auto suite = tb::eval::readSuite(pref + "rule-suite.jsonl");
    QCOMPARE(suite.size(), val.size());
    for (size_t i = 0; i < suite.size(); ++i) {
        const auto& pair = val[i];
        QCOMPARE(suite[i].prompt.size(), size_t(1));
        QCOMPARE(suite[i].prompt[0].content, turn(pair, "prompt"));
        const auto chosen = tb::eval::checkAnswer(suite[i], turn(pair, "chosen"), 10, true);
        const auto rejected = tb::eval::checkAnswer(suite[i], turn(pair, "rejected"), 10, true);
        QVERIFY2(chosen.passed, turn(pair, "chosen").c_str());
        QVERIFY2(!rejected.passed, turn(pair, "rejected").c_str());
        // The rule is the only difference: the same story before the closing sentence.
        const std::string c = turn(pair, "chosen"), r = turn(pair, "rejected");
        QCOMPARE(c.substr(0, c.size() - std::string(" The end.").size()),
                 r.substr(0, c.size() - std::string(" The end.").size()));
    }
    // The SFT baseline is the training prompts with their chosen answers, row for row.
    std::ifstream sft(pref + "sft.jsonl");
    std::string line;
    size_t rows = 0;
    for (; std::getline(sft, line); ++rows) {
        QVERIFY(rows < train.size());
        const json messages = json::parse(line).at("messages");
        QCOMPARE(messages.size(), size_t(2));
        QCOMPARE(messages[0].at("content").get<std::string>(), turn(train[rows], "prompt"));
        QCOMPARE(messages[1].at("role").get<std::string>(), std::string("assistant"));
        QCOMPARE(messages[1].at("content").get<std::string>(), turn(train[rows], "chosen"));
    }
    QCOMPARE(rows, train.size());
}

QTEST_GUILESS_MAIN(TestTrainConfig)
#include "test_train_config.moc"
