// Models from config.json alone: the shipped catalog of real configs (each parses, its parameter
// count equals the published count of that model), catalog ids as model arguments (`tunebench
// estimate --model llama-3.1-8b`), and the
// checkpoint tensors computed from a config (names and shapes equal to real checkpoints' headers).
#include "../../ui/gpt2_folder.h"

#include "test_util.h"

#include "cli/cli.h"
#include "model/catalog.h"
#include "model/config.h"
#include "model/config_tree.h"
#include "model/safetensors.h"
#include "util/paths.h"

#include <QDir>
#include <QtTest>

#include <map>
#include <set>
#include <sstream>

namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

Shapes treeShapes(const tb::ModelConfig& config)
{
    Shapes out;
    for (const tb::ConfigTensor& t : tb::configTensors(config))
        out[out.count(t.name) ? "twice: " + t.name : t.name] = t.shape;  // every name once
    return out;
}

Shapes checkpointShapes(const std::string& dir)
{
    Shapes out;
    const tb::Checkpoint checkpoint = tb::Checkpoint::open(dir);
    for (const std::string& name : checkpoint.names())
        out[name] = checkpoint.find(name)->info->shape;
    return out;
}

}  // namespace

class TestConfigTree : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void catalogCounts_data();
    void catalogCounts();
    void catalogIndexMatchesFolders();
    void catalogIdsResolve();
    void estimateTakesCatalogIds();
    void treeEqualsCheckpoints();
    void treeFollowsTheArchitecture();
};

void TestConfigTree::catalogCounts_data()
{
    QTest::addColumn<QString>("id");
    QTest::addColumn<qint64>("published");
    // Where each figure comes from (every one also equals what transformers counts building the
    // config on the meta device: tests/interop/catalog_oracle.py):
    // - GPT-2: model.num_parameters() of the openai-community checkpoints (the figures KerasHub's
    //   GPT-2 presets publish; 124,439,808 is the well-known "124M").
    // - TinyLlama: model.num_parameters() of TinyLlama-1.1B-Chat-v1.0 (tests/data/configs).
    // - Llama 3.2 1B / 3B, 3.1 8B, Mistral 7B v0.3, Qwen3 4B / 8B, SmolLM2: the Hugging Face Hub's
    //   safetensors "total" of the repos (Llama and SmolLM2 read from their -Instruct repos, which
    //   have the base model's shapes).
    // - Llama 3.1 70B: the Hub's safetensors total of Llama-3.3-70B-Instruct, the same
    // architecture.
    // - Qwen2.5 0.5B ... 72B: HfApi.get_safetensors_metadata() of the -Instruct repos; 14B: the
    //   GGUF general.parameter_count of Qwen2.5-14B-Instruct.
    // - Gemma 3 270M / 1B: the count of the config as transformers builds it (catalog_oracle.py),
    //   the "268M" and "1B" Google gives the models (the embeddings alone are 168M and 302M).
    const std::pair<const char*, qint64> rows[] = {
        {"gpt2", 124439808},
        {"gpt2-medium", 354823168},
        {"gpt2-large", 774030080},
        {"gpt2-xl", 1557611200},
        {"smollm2-135m", 134515008},
        {"smollm2-360m", 361821120},
        {"smollm2-1.7b", 1711376384},
        {"tinyllama-1.1b", 1100048384},
        {"llama-3.2-1b", 1235814400},
        {"llama-3.2-3b", 3212749824},
        {"llama-3.1-8b", 8030261248},
        {"llama-3.1-70b", 70553706496},
        {"mistral-7b-v0.3", 7248023552},
        {"gemma-3-270m", 268098176},
        {"gemma-3-1b", 999885952},
        {"qwen2.5-0.5b", 494032768},
        {"qwen2.5-1.5b", 1543714304},
        {"qwen2.5-3b", 3085938688},
        {"qwen2.5-7b", 7615616512},
        {"qwen2.5-14b", 14770033664},
        {"qwen2.5-32b", 32763876352},
        {"qwen2.5-72b", 72706203648},
        {"qwen3-4b", 4022468096},
        {"qwen3-8b", 8190735360},
    };
    for (const auto& [id, count] : rows)
        QTest::newRow(id) << QString::fromLatin1(id) << count;
}

void TestConfigTree::catalogCounts()
{
    QFETCH(QString, id);
    QFETCH(qint64, published);
    const auto entry = tb::findCatalogModel(id.toStdString());
    QVERIFY(entry);
    const tb::ModelConfig config = tb::loadModelConfig(entry->configPath);
    QCOMPARE(config.sourcePath, entry->configPath);
    QCOMPARE(qint64(tb::parameterCount(config)), published);
    // The module tree from the config holds exactly those parameters.
    qint64 tree = 0;
    for (const tb::ConfigTensor& t : tb::configTensors(config))
        tree += t.numel();
    QCOMPARE(tree, published);
    QVERIFY(!entry->title.empty());
    QVERIFY(tbtest::contains(entry->repo, "/"));
}

void TestConfigTree::catalogIndexMatchesFolders()
{
    const auto catalog = tb::modelCatalog();
    QCOMPARE(int(catalog.size()), 24);
    std::set<std::string> listed;
    for (const auto& m : catalog) {
        QVERIFY2(listed.insert(m.id).second, m.id.c_str());
        // A few KB each: config.json only.
        QVERIFY(QFileInfo(QString::fromStdString(m.configPath)).size() < 8192);
    }
    const QDir dir(QString::fromStdString(tb::modelCatalogDir()));
    QCOMPARE(dir.path(), QString::fromStdString(tb::dataDir() + "/model-configs"));
    std::set<std::string> folders;
    for (const QString& f : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        folders.insert(f.toStdString());
        // Nothing but the config: no tokenizer, no weights.
        QCOMPARE(QDir(dir.filePath(f)).entryList(QDir::Files),
                 QStringList{QStringLiteral("config.json")});
    }
    QVERIFY(folders == listed);
}

void TestConfigTree::catalogIdsResolve()
{
    const auto m = tb::findCatalogModel("Llama-3.1-8B");  // ids match case-insensitively
    QVERIFY(m);
    QCOMPARE(m->id, std::string("llama-3.1-8b"));
    QCOMPARE(tb::resolveModelPath("llama-3.1-8b"), m->configPath);
    // An existing path stays as given, even when a catalog id has its name.
    const std::string bundled = tb::bundledModelDir();
    QCOMPARE(tb::resolveModelPath(bundled), bundled);
    QVERIFY(!tb::findCatalogModel("gpt5"));
    const std::string error = tbtest::errorOf([] { tb::resolveModelPath("gpt5"); });
    QVERIFY2(tbtest::contains(error, "gpt5: not found"), error.c_str());
    QVERIFY2(tbtest::contains(error, "qwen3-8b"), error.c_str());  // the ids it knows
}

void TestConfigTree::estimateTakesCatalogIds()
{
    auto cli = [](std::vector<std::string> argv, std::string* err) {
        std::ostringstream out, errors;
        const int status = tb::runCli(argv, out, errors);
        *err = errors.str();
        return std::make_pair(status, out.str());
    };
    std::string err;
    const auto [status, out] =
        cli({"estimate", "--model", "llama-3.1-8b", "--method", "full", "--json"}, &err);
    QVERIFY2(status == 0, err.c_str());
    QCOMPARE(nlohmann::json::parse(out).at("parameters").get<int64_t>(), int64_t(8030261248));
    const auto [bad, none] = cli({"estimate", "--model", "llama-9", "--method", "lora"}, &err);
    QVERIFY(bad != 0);
    QVERIFY(none.empty());
    QVERIFY2(tbtest::contains(err, "llama-9: not found") && tbtest::contains(err, "llama-3.1-8b"),
             err.c_str());
}

void TestConfigTree::treeEqualsCheckpoints()
{
    // The bundled Llama (tied head) and a transformers-layout GPT-2: every tensor of the header,
    // with its shape, and nothing else.
    const std::string bundled = tb::bundledModelDir();
    QVERIFY(treeShapes(tb::loadModelConfig(bundled)) == checkpointShapes(bundled));
    QTemporaryDir tmp;
    const QString gpt2 = tmp.filePath(QStringLiteral("gpt2"));
    QVERIFY(tbtest::writeRandomGpt2(gpt2));
    QVERIFY(treeShapes(tb::loadModelConfig(gpt2.toStdString())) ==
            checkpointShapes(gpt2.toStdString()));
}

void TestConfigTree::treeFollowsTheArchitecture()
{
    auto tree = [](const char* id) {
        return treeShapes(tb::loadModelConfig(tb::findCatalogModel(id)->configPath));
    };
    // Qwen3: per-head q/k norms, no attention biases, tied head (4B) or an untied one (8B).
    const Shapes qwen3 = tree("qwen3-4b");
    QVERIFY(qwen3.at("model.layers.35.self_attn.q_norm.weight") == std::vector<int64_t>{128});
    QVERIFY(qwen3.at("model.layers.0.self_attn.q_proj.weight") ==
            (std::vector<int64_t>{4096, 2560}));  // 32 heads x 128 > hidden: [out, in]
    QVERIFY(!qwen3.count("model.layers.0.self_attn.q_proj.bias"));
    QVERIFY(!qwen3.count("lm_head.weight"));
    QVERIFY(tree("qwen3-8b").at("lm_head.weight") == (std::vector<int64_t>{151936, 4096}));
    // Qwen2: q, k, v biases, none on o_proj; GQA k/v of 2 heads x 64.
    const Shapes qwen2 = tree("qwen2.5-0.5b");
    QVERIFY(qwen2.at("model.layers.0.self_attn.k_proj.bias") == std::vector<int64_t>{128});
    QVERIFY(!qwen2.count("model.layers.0.self_attn.o_proj.bias"));
    // GPT-2: Conv1D [in, out].
    QVERIFY(tree("gpt2-xl").at("transformer.h.47.mlp.c_fc.weight") ==
            (std::vector<int64_t>{1600, 6400}));
}

QTEST_GUILESS_MAIN(TestConfigTree)
#include "test_config_tree.moc"
