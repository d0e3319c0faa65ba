// safetensors: round trip, strict header validation with clear messages, shards, and a mutation
// test.
#include "model/safetensors.h"
#include "util/error.h"
#include "util/file_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <random>

namespace {

std::string floatBytes(const std::vector<float>& v)
{
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

// A safetensors image with a hand-written header (for lying headers).
std::string rawFile(const std::string& header, size_t dataBytes)
{
    std::string out(8, '\0');
    uint64_t len = header.size();
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
    return out + header + std::string(dataBytes, '\x01');
}

// Expects parsing to throw tb::Error whose message contains every fragment.
void expectError(const std::string& bytes, const std::vector<std::string>& fragments)
{
    try {
        tb::parseSafetensorsHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                   "bad.safetensors");
    } catch (const tb::Error& e) {
        const std::string msg = e.what();
        for (const auto& f : fragments)
            QVERIFY2(msg.find(f) != std::string::npos,
                     qPrintable(QString::fromStdString("'" + f + "' not in: " + msg)));
        return;
    }
    QFAIL("no error raised");
}

}  // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTrip();
    void lyingHeaders();
    void truncatedAndMissingFiles();
    void shardedCheckpoint();
    void mutationNeverCrashes();

private:
    QTemporaryDir m_dir;
};

void TestSafetensors::roundTrip()
{
    const std::string path = m_dir.filePath(QStringLiteral("rt.safetensors")).toStdString();
    std::vector<float> a{1.5f, -2.25f, 3.0f, 0.0f, 7.0f, 8.0f};
    std::string bf16{'\x80', '\x3f', '\x00', '\x40'};  // 1.0, 2.0 in bfloat16
    tb::writeSafetensors(
        path, {{"a", tb::DType::F32, {2, 3}, floatBytes(a)}, {"b", tb::DType::BF16, {2}, bf16}},
        {{"format", "pt"}});
    auto file = tb::SafetensorsFile::open(path);
    QCOMPARE(file->header().metadata.at("format"), std::string("pt"));
    QCOMPARE(file->header().dataOffset % 8, uint64_t(0));
    const tb::TensorInfo* ta = file->find("a");
    QVERIFY(ta);
    QCOMPARE(ta->shape, (std::vector<int64_t>{2, 3}));
    QCOMPARE(std::memcmp(file->data(*ta), a.data(), 24), 0);
    const tb::TensorInfo* tbf = file->find("b");
    QVERIFY(tbf && tbf->dtype == tb::DType::BF16);
    QCOMPARE(std::string(reinterpret_cast<const char*>(file->data(*tbf)), 4), bf16);
    QVERIFY(file->find("missing") == nullptr);

    // The writer refuses bytes that do not match the shape.
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::writeSafetensors(path, {{"x", tb::DType::F32, {3}, "abc"}}));
}

void TestSafetensors::lyingHeaders()
{
    const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    tb::parseSafetensorsHeader(reinterpret_cast<const uint8_t*>(rawFile(ok, 8).data()),
                               rawFile(ok, 8).size(), "ok");

    expectError(std::string(4, '\0'), {"bad.safetensors", "shorter than the 8-byte"});
    std::string huge(8, '\xff');
    expectError(huge + "{}", {"bad.safetensors", "exceeds the 100 MiB bound"});
    std::string past = rawFile("{}", 0);
    past[0] = 100;
    expectError(past, {"runs past the end"});
    expectError(rawFile("{not json", 0), {"bad.safetensors", "not valid JSON"});
    expectError(rawFile("[1,2]", 0), {"not a JSON object"});
    expectError(rawFile(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8),
                {"'w'", "unknown dtype 'F33'"});
    expectError(rawFile(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                {"'w'", "shape x dtype size is 12 bytes", "span 8 bytes"});
    expectError(rawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 8),
                {"'w'", "run past the end"});
    expectError(rawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
                {"'w'", "end before they begin"});
    expectError(rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        12),
                {"'a'", "'b'", "overlap"});
    expectError(rawFile(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                {"'w'", "non-negative"});
    expectError(rawFile(R"({"w":{"dtype":"F32","shape":[2]}})", 8), {"'w'", "data_offsets"});
    expectError(
        rawFile(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", 8),
        {"'w'", "large"});
}

void TestSafetensors::truncatedAndMissingFiles()
{
    const std::string path = m_dir.filePath(QStringLiteral("t.safetensors")).toStdString();
    std::vector<float> v(64, 1.0f);
    tb::writeSafetensors(path, {{"w", tb::DType::F32, {64}, floatBytes(v)}});
    std::string bytes = tb::readFile(path);
    const std::string cut = m_dir.filePath(QStringLiteral("cut.safetensors")).toStdString();
    tb::writeFileAtomic(cut, bytes.substr(0, bytes.size() - 10));
    try {
        tb::SafetensorsFile::open(cut);
        QFAIL("truncated file accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("cut.safetensors") != std::string::npos);
        QVERIFY(std::string(e.what()).find("truncated") != std::string::npos);
    }
    try {
        tb::SafetensorsFile::open(m_dir.filePath(QStringLiteral("nope.safetensors")).toStdString());
        QFAIL("missing file accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("nope.safetensors: cannot open") != std::string::npos);
    }
    const std::string empty = m_dir.filePath(QStringLiteral("empty")).toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(empty)));
    try {
        tb::Checkpoint::open(empty);
        QFAIL("folder without weights accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("no model.safetensors") != std::string::npos);
    }
}

void TestSafetensors::shardedCheckpoint()
{
    const QString dir = m_dir.filePath(QStringLiteral("sharded"));
    QVERIFY(QDir().mkpath(dir));
    const std::string d = dir.toStdString();
    std::vector<float> v(4, 2.0f);
    tb::writeSafetensors(d + "/model-00001-of-00002.safetensors",
                         {{"a", tb::DType::F32, {4}, floatBytes(v)}});
    tb::writeSafetensors(d + "/model-00002-of-00002.safetensors",
                         {{"b", tb::DType::F32, {4}, floatBytes(v)}});
    nlohmann::json index = {
        {"metadata", {{"total_size", 32}}},
        {"weight_map",
         {{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}}}};
    tb::writeFileAtomic(d + "/model.safetensors.index.json", index.dump());
    auto ckpt = tb::Checkpoint::open(d);
    QVERIFY(ckpt.find("a") && ckpt.find("b"));
    QCOMPARE(ckpt.names().size(), size_t(2));

    // An index entry whose tensor is not in the named shard.
    index["weight_map"]["c"] = "model-00002-of-00002.safetensors";
    tb::writeFileAtomic(d + "/model.safetensors.index.json", index.dump());
    try {
        tb::Checkpoint::open(d);
        QFAIL("missing indexed tensor accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("'c'") != std::string::npos);
    }
    // A shard file that does not exist.
    index["weight_map"]["c"] = "model-00003-of-00002.safetensors";
    tb::writeFileAtomic(d + "/model.safetensors.index.json", index.dump());
    try {
        tb::Checkpoint::open(d);
        QFAIL("missing shard accepted");
    } catch (const tb::Error& e) {
        QVERIFY(std::string(e.what()).find("model-00003-of-00002.safetensors") !=
                std::string::npos);
    }
    tb::writeFileAtomic(d + "/model.safetensors.index.json", "{\"weight_map\": 3}");
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::Checkpoint::open(d));
}

// Random mutations of a valid file: every outcome is either a clean tb::Error or a header whose
// tensors all lie inside the data section without overlapping.
void TestSafetensors::mutationNeverCrashes()
{
    const std::string path = m_dir.filePath(QStringLiteral("m.safetensors")).toStdString();
    std::vector<float> v(6, 0.5f);
    tb::writeSafetensors(path,
                         {{"a.weight", tb::DType::F32, {2, 3}, floatBytes(v)},
                          {"b", tb::DType::F16, {4}, std::string(8, '\x3c')},
                          {"c", tb::DType::BF16, {2, 2}, std::string(8, '\x3f')}},
                         {{"format", "pt"}});
    const std::string original = tb::readFile(path);
    std::mt19937 rng(20261129);
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 20000; ++iter) {
        std::string m = original;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            switch (rng() % 6) {
            case 0:
                m[rng() % m.size()] = static_cast<char>(rng());
                break;  // random byte
            case 1:
                m.resize(rng() % (m.size() + 1));
                break;  // truncate
            case 2:
                if (!m.empty())
                    m[rng() % std::min<size_t>(8, m.size())] = static_cast<char>(rng());
                break;  // length
            case 3: {   // digit in the JSON
                size_t pos = 8 + rng() % (m.size() > 8 ? m.size() - 8 : 1);
                if (pos < m.size() && std::isdigit(static_cast<unsigned char>(m[pos])))
                    m[pos] = static_cast<char>('0' + rng() % 10);
                break;
            }
            case 4:
                m.insert(rng() % (m.size() + 1), 1, "{}[],:\"0"[rng() % 8]);
                break;  // JSON punctuation
            default:
                if (!m.empty())
                    m.erase(rng() % m.size(), 1);
                break;  // delete a byte
            }
            if (m.empty())
                break;
        }
        try {
            auto h = tb::parseSafetensorsHeader(reinterpret_cast<const uint8_t*>(m.data()),
                                                m.size(), "fuzz");
            for (size_t i = 0; i < h.tensors.size(); ++i) {
                const auto& t = h.tensors[i];
                QVERIFY(t.end <= m.size() - h.dataOffset);
                QCOMPARE(t.end - t.begin,
                         static_cast<uint64_t>(t.numel()) * tb::dtypeSize(t.dtype));
                if (i > 0)
                    QVERIFY(t.begin >= h.tensors[i - 1].end);
            }
            ++accepted;
        } catch (const tb::Error&) {
            ++rejected;
        }
    }
    qInfo("mutations: %d accepted, %d rejected with a message", accepted, rejected);
    QVERIFY(rejected > 1000);
}

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
