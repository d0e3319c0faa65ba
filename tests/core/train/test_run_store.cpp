// RunStore: checkpoint round trip, pruning, corrupt/incomplete checkpoints skipped with a warning,
// leftover temporary folders, metrics.jsonl append/read/truncate with torn lines, and SHA-256
// vectors.
#include "train/metrics.h"
#include "train/run_store.h"
#include "util/error.h"
#include "util/file_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string randomBytes(size_t n, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::string out(n, '\0');
    for (auto& c : out)
        c = static_cast<char>(rng() & 0xff);
    return out;
}

// A checkpoint with two tensor files whose bytes depend on the step.
tb::CheckpointData makeCheckpoint(int64_t step)
{
    tb::CheckpointData d;
    d.step = step;
    const uint32_t seed = static_cast<uint32_t>(step);
    d.tensorFiles.push_back(
        {"trainable",
         {{"layers.0.lora_a", tb::DType::F32, {4, 3}, randomBytes(48, seed)},
          {"layers.0.lora_b", tb::DType::BF16, {3, 4}, randomBytes(24, seed + 1000)}}});
    d.tensorFiles.push_back({"optimizer",
                             {{"exp_avg.0", tb::DType::F32, {5}, randomBytes(20, seed + 2000)},
                              {"step", tb::DType::I64, {}, randomBytes(8, seed + 3000)}}});
    d.state = {{"step", step}, {"rng", {1, 2, 3}}, {"data_position", step * 16}};
    return d;
}

void compareCheckpoint(const tb::CheckpointData& got, const tb::CheckpointData& want)
{
    QCOMPARE(got.step, want.step);
    QCOMPARE(got.state, want.state);
    QCOMPARE(got.tensorFiles.size(), want.tensorFiles.size());
    for (size_t f = 0; f < want.tensorFiles.size(); ++f) {
        QCOMPARE(got.tensorFiles[f].first, want.tensorFiles[f].first);
        const auto& a = got.tensorFiles[f].second;
        const auto& b = want.tensorFiles[f].second;
        QCOMPARE(a.size(), b.size());
        for (size_t t = 0; t < b.size(); ++t) {
            QCOMPARE(a[t].name, b[t].name);
            QVERIFY(a[t].dtype == b[t].dtype);
            QCOMPARE(a[t].shape, b[t].shape);
            QVERIFY(a[t].bytes == b[t].bytes);  // byte-identical
        }
    }
}

void appendRaw(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << bytes;
}

bool hasWarning(const tb::CheckpointLoad& load, const std::string& a, const std::string& b)
{
    for (const auto& w : load.warnings)
        if (w.find(a) != std::string::npos && w.find(b) != std::string::npos)
            return true;
    return false;
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sha256Vectors();
    void runInfo();
    void checkpointRoundTrip();
    void keepPruning();
    void corruptNewestSkipped();
    void missingManifestSkipped();
    void truncatedFileSkipped();
    void leftoverTmpFolder();
    void replaceSameStep();
    void badTensorFileNames();
    void metricsAppendReadTruncate();
    void metricsTornLastLine();
    void metricsBadMiddleLine();
    void metricsOfWrongTypesSkipped();

private:
    std::string freshDir(const char* name)
    {
        return m_dir.filePath(QString::fromUtf8(name)).toStdString();
    }
    QTemporaryDir m_dir;
};

void TestRunStore::sha256Vectors()
{
    // FIPS 180-4 examples, and a multi-block message crossing the 55/56-byte padding boundary.
    QCOMPARE(tb::sha256Hex("abc"),
             std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    QCOMPARE(tb::sha256Hex(""),
             std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(tb::sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    QCOMPARE(tb::sha256Hex(std::string(1000000, 'a')),
             std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    // the file variant agrees with the in-memory one, across its 1 MiB read chunks
    const std::string path = freshDir("sha.bin");
    const std::string bytes = randomBytes((1 << 20) + 12345, 7);
    tb::writeFileAtomic(path, bytes);
    QCOMPARE(tb::sha256File(path), tb::sha256Hex(bytes));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::sha256File(freshDir("absent.bin")));
}

void TestRunStore::runInfo()
{
    // Opening reads only: nothing is created until something is written.
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::RunStore(freshDir("info/run")).readRunInfo());
    QVERIFY(!tb::fileExists(freshDir("info/run")) && !tb::isDirectory(freshDir("info/run")));
    const tb::RunStore store = tb::RunStore::create(freshDir("info/run"));
    QVERIFY(tb::isDirectory(store.dir() + "/checkpoints"));
    // A run killed while it wrote its first file: the reason, and what to do instead.
    try {
        (void)store.readRunInfo();
        QFAIL("a run without run.json was read");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find("nothing to resume; start it again with tunebench "
                                            "train --config") != std::string::npos,
                 e.what());
    }
    const json info = {
        {"name", "run"}, {"config", {{"method", "lora"}}}, {"model_sha256", tb::sha256Hex("m")}};
    store.writeRunInfo(info);
    QCOMPARE(store.readRunInfo(), info);
    tb::writeFileAtomic(store.dir() + "/run.json", "{ nope");
    try {
        (void)store.readRunInfo();
        QFAIL("invalid run.json accepted");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find("run.json: invalid JSON") != std::string::npos,
                 e.what());
    }
}

void TestRunStore::checkpointRoundTrip()
{
    const tb::RunStore store(freshDir("rt"));
    QVERIFY(!store.loadLatestCheckpoint().has_value());
    QVERIFY(store.checkpointSteps().empty());

    const tb::CheckpointData saved = makeCheckpoint(40);
    const std::string folder = store.saveCheckpoint(saved, 2);
    QCOMPARE(folder, store.dir() + "/checkpoints/step-40");
    for (const char* f :
         {"trainable.safetensors", "optimizer.safetensors", "state.json", "manifest.json"})
        QVERIFY2(tb::fileExists(folder + "/" + f), f);

    // the manifest lists every file with its size and SHA-256, computed here independently
    const json manifest = json::parse(tb::readFile(folder + "/manifest.json"));
    QCOMPARE(manifest["step"], json(40));
    QCOMPARE(manifest["files"].size(), size_t(3));
    for (const auto& entry : manifest["files"]) {
        const std::string path = folder + "/" + entry["name"].get<std::string>();
        QCOMPARE(entry["size"].get<uint64_t>(), uint64_t(fs::file_size(path)));
        QCOMPARE(entry["sha256"].get<std::string>(), tb::sha256Hex(tb::readFile(path)));
    }
    // the tensor files are ordinary safetensors files
    auto file = tb::SafetensorsFile::open(folder + "/trainable.safetensors");
    QVERIFY(file->find("layers.0.lora_a") != nullptr);

    const auto load = store.loadLatestCheckpoint();
    QVERIFY(load.has_value());
    QCOMPARE(load->dir, folder);
    QVERIFY(load->warnings.empty());
    compareCheckpoint(load->data, saved);
    QCOMPARE(store.checkpointSteps(), std::vector<int64_t>{40});

    // An empty checkpoint (state only) round-trips as well.
    tb::CheckpointData empty;
    empty.step = 41;
    empty.state = json::object();
    store.saveCheckpoint(empty, 0);
    compareCheckpoint(store.loadLatestCheckpoint()->data, empty);
}

void TestRunStore::keepPruning()
{
    const tb::RunStore store(freshDir("keep"));
    for (int64_t step : {10, 20, 30, 40, 50})
        store.saveCheckpoint(makeCheckpoint(step), 3);
    QCOMPARE(store.checkpointSteps(), (std::vector<int64_t>{50, 40, 30}));
    QVERIFY(!tb::fileExists(store.dir() + "/checkpoints/step-20"));
    // keep <= 0 keeps all
    store.saveCheckpoint(makeCheckpoint(60), 0);
    QCOMPARE(store.checkpointSteps(), (std::vector<int64_t>{60, 50, 40, 30}));
    store.saveCheckpoint(makeCheckpoint(70), 1);
    QCOMPARE(store.checkpointSteps(), (std::vector<int64_t>{70}));
    // the checkpoint just written is always kept, even when newer ones exist (resumed from earlier)
    store.saveCheckpoint(makeCheckpoint(65), 1);
    QCOMPARE(store.checkpointSteps(), (std::vector<int64_t>{65}));
    compareCheckpoint(store.loadLatestCheckpoint()->data, makeCheckpoint(65));
}

void TestRunStore::corruptNewestSkipped()
{
    const tb::RunStore store(freshDir("corrupt"));
    store.saveCheckpoint(makeCheckpoint(10), 0);
    store.saveCheckpoint(makeCheckpoint(20), 0);
    // flip one byte in the newest checkpoint's tensor data (same size, different hash)
    const std::string path = store.dir() + "/checkpoints/step-20/optimizer.safetensors";
    std::string bytes = tb::readFile(path);
    bytes[bytes.size() - 3] ^= 0x01;
    tb::writeFileAtomic(path, bytes);

    const auto load = store.loadLatestCheckpoint();
    QVERIFY(load.has_value());
    QCOMPARE(load->dir, store.dir() + "/checkpoints/step-10");
    compareCheckpoint(load->data, makeCheckpoint(10));
    QCOMPARE(load->warnings.size(), size_t(1));
    QVERIFY2(hasWarning(*load, "checkpoints/step-20", "optimizer.safetensors SHA-256 mismatch"),
             load->warnings[0].c_str());
    QVERIFY(hasWarning(*load, "step-20", "skipped"));

    // corrupt the older one as well: nothing usable
    const std::string older = store.dir() + "/checkpoints/step-10/state.json";
    tb::writeFileAtomic(older, "{}");
    std::string skipped;
    QVERIFY(!store.loadLatestCheckpoint(&skipped).has_value());
    QVERIFY2(skipped.find("step-20") != std::string::npos &&
                 skipped.find("step-10") != std::string::npos,
             skipped.c_str());
}

void TestRunStore::missingManifestSkipped()
{
    const tb::RunStore store(freshDir("nomanifest"));
    store.saveCheckpoint(makeCheckpoint(5), 0);
    store.saveCheckpoint(makeCheckpoint(6), 0);
    fs::remove(store.dir() + "/checkpoints/step-6/manifest.json");
    QCOMPARE(store.checkpointSteps(), std::vector<int64_t>{5});  // incomplete: not listed
    const auto load = store.loadLatestCheckpoint();
    QVERIFY(load.has_value());
    QCOMPARE(load->data.step, int64_t(5));
    QVERIFY(hasWarning(*load, "checkpoints/step-6", "manifest.json missing"));
}

void TestRunStore::truncatedFileSkipped()
{
    const tb::RunStore store(freshDir("truncated"));
    store.saveCheckpoint(makeCheckpoint(1), 0);
    store.saveCheckpoint(makeCheckpoint(2), 0);
    const std::string path = store.dir() + "/checkpoints/step-2/trainable.safetensors";
    fs::resize_file(path, fs::file_size(path) - 4);
    auto load = store.loadLatestCheckpoint();
    QVERIFY(load.has_value() && load->data.step == 1);
    QVERIFY(hasWarning(*load, "step-2", "trainable.safetensors has"));
    // a file the manifest lists has gone
    fs::remove(path);
    load = store.loadLatestCheckpoint();
    QVERIFY(hasWarning(*load, "step-2", "trainable.safetensors missing"));
    // a manifest that is not JSON
    tb::writeFileAtomic(store.dir() + "/checkpoints/step-2/manifest.json", "{");
    load = store.loadLatestCheckpoint();
    QVERIFY(load.has_value() && load->data.step == 1);
    QVERIFY(hasWarning(*load, "step-2", "manifest.json is not a valid manifest"));
}

void TestRunStore::leftoverTmpFolder()
{
    const tb::RunStore store(freshDir("tmp"));
    store.saveCheckpoint(makeCheckpoint(10), 0);
    // a save killed half-way (pid 999999999 is not a running process), and one of this process
    const std::string dead = store.dir() + "/checkpoints/.step-20.tmp-999999999";
    const std::string own = store.dir() + "/checkpoints/.step-30.tmp-" + std::to_string(::getpid());
    for (const auto& d : {dead, own}) {
        fs::create_directories(d);
        tb::writeFileAtomic(d + "/trainable.safetensors", "partial");
    }
    // ignored by readers
    QCOMPARE(store.checkpointSteps(), std::vector<int64_t>{10});
    auto load = store.loadLatestCheckpoint();
    QVERIFY(load.has_value() && load->data.step == 10 && load->warnings.empty());
    // cleaned by the next save
    store.saveCheckpoint(makeCheckpoint(11), 0);
    QVERIFY(!fs::exists(dead));
    QVERIFY(!fs::exists(own));
    QCOMPARE(store.checkpointSteps(), (std::vector<int64_t>{11, 10}));
    // only step-N folders, steps, and no temporary folders remain
    for (const auto& entry : fs::directory_iterator(store.dir() + "/checkpoints"))
        QVERIFY2(entry.path().filename().string().rfind("step-", 0) == 0,
                 entry.path().string().c_str());
}

void TestRunStore::replaceSameStep()
{
    const tb::RunStore store(freshDir("replace"));
    store.saveCheckpoint(makeCheckpoint(8), 0);
    tb::CheckpointData again = makeCheckpoint(9);
    again.step = 8;
    store.saveCheckpoint(again, 0);
    QCOMPARE(store.checkpointSteps(), std::vector<int64_t>{8});
    compareCheckpoint(store.loadLatestCheckpoint()->data, again);
    for (const auto& entry : fs::directory_iterator(store.dir() + "/checkpoints"))
        QCOMPARE(entry.path().filename().string(), std::string("step-8"));
}

void TestRunStore::badTensorFileNames()
{
    const tb::RunStore store(freshDir("names"));
    for (const char* name : {"", "a/b", "state", "manifest", ".."}) {
        tb::CheckpointData d = makeCheckpoint(1);
        d.tensorFiles[0].first = name;
        QVERIFY_THROWS_EXCEPTION(tb::Error, store.saveCheckpoint(d, 0));
    }
    tb::CheckpointData twice = makeCheckpoint(1);
    twice.tensorFiles[1].first = twice.tensorFiles[0].first;
    QVERIFY_THROWS_EXCEPTION(tb::Error, store.saveCheckpoint(twice, 0));
    // a tensor whose bytes do not match its shape: nothing is left behind
    tb::CheckpointData bad = makeCheckpoint(2);
    bad.tensorFiles[0].second[0].bytes = "short";
    QVERIFY_THROWS_EXCEPTION(tb::Error, store.saveCheckpoint(bad, 0));
    QVERIFY(fs::is_empty(store.dir() + "/checkpoints"));
}

void TestRunStore::metricsAppendReadTruncate()
{
    const tb::RunStore store(freshDir("metrics"));
    QVERIFY(store.readMetrics().empty());
    store.truncateMetrics(3);  // nothing to do
    for (int step = 1; step <= 5; ++step)
        store.appendMetrics({{"step", step}, {"loss", 2.0 / step}, {"lr", 1e-3}});
    store.appendMetrics({{"event", "eval"}});  // no step: kept by truncation
    auto lines = store.readMetrics();
    QCOMPARE(lines.size(), size_t(6));
    QCOMPARE(lines[2]["step"], json(3));
    QCOMPARE(lines[2]["loss"].get<double>(), 2.0 / 3);
    // one line per record
    const std::string text = tb::readFile(store.dir() + "/metrics.jsonl");
    QCOMPARE(std::count(text.begin(), text.end(), '\n'), 6L);

    store.truncateMetrics(3);
    lines = store.readMetrics();
    QCOMPARE(lines.size(), size_t(4));
    QCOMPARE(lines[2]["step"], json(3));
    QCOMPARE(lines[3]["event"], json("eval"));
    store.appendMetrics({{"step", 4}, {"loss", 0.1}});
    QCOMPARE(store.readMetrics().back()["step"], json(4));
}

void TestRunStore::metricsTornLastLine()
{
    const tb::RunStore store(freshDir("torn"));
    const std::string path = store.dir() + "/metrics.jsonl";
    store.appendMetrics({{"step", 1}});
    store.appendMetrics({{"step", 2}});
    appendRaw(path, "{\"step\": 3, \"lo");  // killed mid-write
    auto lines = store.readMetrics();
    QCOMPARE(lines.size(), size_t(2));
    QCOMPARE(lines[1]["step"], json(2));
    // appending after the torn line cuts it off instead of gluing the next record to it
    store.appendMetrics({{"step", 3}});
    lines = store.readMetrics();
    QCOMPARE(lines.size(), size_t(3));
    QCOMPARE(lines[2]["step"], json(3));
    // a complete last record that lost only its newline is kept
    appendRaw(path, "{\"step\": 4}");
    store.appendMetrics({{"step", 5}});
    lines = store.readMetrics();
    QCOMPARE(lines.size(), size_t(5));
    QCOMPARE(lines[3]["step"], json(4));
    QCOMPARE(lines[4]["step"], json(5));
    // truncation drops the torn tail too
    appendRaw(path, "{\"st");
    store.truncateMetrics(100);
    QCOMPARE(store.readMetrics().size(), size_t(5));
    QVERIFY(tb::readFile(path).back() == '\n');
}

void TestRunStore::metricsBadMiddleLine()
{
    const tb::RunStore store(freshDir("middle"));
    const std::string path = store.dir() + "/metrics.jsonl";
    store.appendMetrics({{"step", 1}});
    appendRaw(path, "garbage\n\n");
    store.appendMetrics({{"step", 2}});
    try {
        (void)store.readMetrics();
        QFAIL("a bad line in the middle was accepted");
    } catch (const tb::Error& e) {
        QVERIFY2(std::string(e.what()).find(path + ":2:") != std::string::npos, e.what());
    }
}

void TestRunStore::metricsOfWrongTypesSkipped()
{
    // Valid JSON whose values do not fit their record: readRunMetrics keeps every other line and
    // names each skipped one by its line in the file (blank lines counted).
    const tb::RunStore store(freshDir("types"));
    const std::string path = store.dir() + "/metrics.jsonl";
    store.appendMetrics({{"type", "step"}, {"step", 1}, {"loss", 2.5}});
    appendRaw(path, "\n{\"type\": \"step\", \"step\": \"5\", \"loss\": 1}\n42\n");
    appendRaw(path, "{\"type\": \"eval\", \"step\": 2, \"val_loss\": \"low\"}\n");
    store.appendMetrics({{"note", "no type"}});
    store.appendMetrics({{"type", "step"}, {"step", 2}, {"loss", 2.0}});
    store.appendMetrics({{"type", "eval"}, {"step", 2}, {"val_loss", 1.9}});
    const tb::RunMetrics m = tb::readRunMetrics(store.dir());
    QCOMPARE(m.steps.size(), size_t(2));
    QCOMPARE(m.steps[0].loss, 2.5);
    QCOMPARE(m.steps[1].step, int64_t(2));
    QCOMPARE(m.evals.size(), size_t(1));
    QCOMPARE(m.evals[0].valLoss.value_or(0), 1.9);
    QCOMPARE(m.warnings.size(), size_t(3));
    const std::pair<int, const char*> expected[] = {{3, "type must be number, but is string"},
                                                    {4, "not a JSON object"},
                                                    {5, "type must be number, but is string"}};
    for (size_t i = 0; i < 3; ++i) {
        const std::string& w = m.warnings[i];
        const std::string where = path + ":" + std::to_string(expected[i].first) + ": ";
        QVERIFY2(w.find(where) == 0 && w.find(expected[i].second) != std::string::npos &&
                     w.ends_with("; line skipped"),
                 w.c_str());
    }
}

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_run_store.moc"
