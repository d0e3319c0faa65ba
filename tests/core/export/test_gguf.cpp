// GGUF writer: the byte layout of a tiny hand-made file parsed back by an independent reader
// written here from the format description, Q8_0 blocks against hand arithmetic, and the cases a
// GGUF export refuses.
#include "export/gguf.h"
#include "export/gguf_quant.h"
#include "export/gguf_vocab.h"
#include "model/config.h"
#include "train/train_config.h"
#include "util/error.h"
#include "util/file_util.h"

#include <QtCore/qfloat16.h>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

namespace {

// A minimal GGUF v3 reader, independent of core's: enough for the types the writer emits.
struct Reader {
    std::string bytes;
    size_t pos = 0;
    template <typename T> T get()
    {
        if (pos + sizeof(T) > bytes.size())
            throw std::runtime_error("truncated");
        T v;
        std::memcpy(&v, bytes.data() + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    std::string str()
    {
        const auto n = get<uint64_t>();
        if (pos + n > bytes.size())
            throw std::runtime_error("truncated string");
        std::string s = bytes.substr(pos, n);
        pos += n;
        return s;
    }
};

std::string readAll(const QString& path)
{
    std::ifstream in(path.toStdString(), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string floats(const std::vector<float>& v)
{
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const tb::Error& e) {
        return e.what();
    }
    return {};
}

// Little-endian bytes of a hand-made GGUF header.
struct Bytes {
    std::string b;
    template <typename T> Bytes& put(T v)
    {
        b.append(reinterpret_cast<const char*>(&v), sizeof v);
        return *this;
    }
    Bytes& str(const std::string& text)
    {
        put(uint64_t(text.size()));
        b += text;
        return *this;
    }
};

void writeText(const QString& path, const char* text)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

}  // namespace

class TestGguf : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void byteLayout();
    void headerReaderRefusesHostileSizes();
    void badTensorLeavesNoFile();
    void unwritablePath();
    void q8_0Blocks();
    void refusedModels();
    void bpePreTokenizerNames();
    void bpeVocabulary();
};

// GGUF headers written byte by byte with sizes chosen to wrap 64-bit arithmetic or to lie about
// their types: readGgufSummary names the file and the key or tensor, and reads nothing past the
// end.
void TestGguf::headerReaderRefusesHostileSizes()
{
    QTemporaryDir dir;
    // header(tensors, key/values) + `body`: the key/values and tensor infos as raw bytes.
    auto file = [&](const char* name, uint64_t tensors, uint64_t kvs, const Bytes& body) {
        Bytes f;
        f.b = "GGUF";
        f.put(uint32_t(3)).put(tensors).put(kvs);
        f.b += body.b;
        f.b += std::string(64, '\0');  // some data
        const std::string path = dir.filePath(QString::fromLatin1(name)).toStdString();
        std::ofstream(path, std::ios::binary) << f.b;
        return path;
    };
    // One F32 tensor "t" with `dims` at `offset`, after an optional alignment key/value.
    auto tensor = [](Bytes b, const std::vector<uint64_t>& dims, uint64_t offset) {
        b.str("t").put(uint32_t(dims.size()));
        for (uint64_t d : dims)
            b.put(d);
        return b.put(uint32_t(0)).put(offset);
    };
    struct Case {
        const char* name;
        std::string path;
        std::string expected;
    };
    const Case cases[] = {
        {"string-alignment.gguf",
         file("string-alignment.gguf", 0, 1,
              Bytes().str("general.alignment").put(uint32_t(8)).str("abc")),
         "key 'general.alignment' is abc, where GGUF needs a power of two"},
        {"negative-alignment.gguf",
         file("negative-alignment.gguf", 0, 1,
              Bytes().str("general.alignment").put(uint32_t(5)).put(int32_t(-8))),
         "key 'general.alignment' is -8"},
        {"odd-alignment.gguf",
         file("odd-alignment.gguf", 0, 1,
              Bytes().str("general.alignment").put(uint32_t(4)).put(uint32_t(24))),
         "key 'general.alignment' is 24"},
        {"wrapping-dims.gguf",
         file("wrapping-dims.gguf", 1, 0, tensor({}, {1ull << 32, 1ull << 32}, 0)),
         "tensor 't' ends past the end of the file"},
        {"wrapping-offset.gguf", file("wrapping-offset.gguf", 1, 0, tensor({}, {4}, ~uint64_t(31))),
         "tensor 't' ends past the end of the file"},
        {"huge-dim.gguf", file("huge-dim.gguf", 1, 0, tensor({}, {~uint64_t(0)}, 0)),
         "tensor 't' has dimension 18446744073709551615 (too large)"},
        {"huge-array.gguf",
         file("huge-array.gguf", 0, 1,
              Bytes().str("k").put(uint32_t(9)).put(uint32_t(10)).put(uint64_t(1) << 62)),
         "truncated"},
        {"zero-dim.gguf", file("zero-dim.gguf", 1, 0, tensor({}, {4, 0}, 0)),
         "tensor 't' has a dimension of 0"},
        {"unknown-type.gguf",
         file("unknown-type.gguf", 1, 0,
              Bytes()
                  .str("t")
                  .put(uint32_t(1))
                  .put(uint64_t(4))
                  .put(uint32_t(999))
                  .put(uint64_t(0))),
         "tensor 't' has type 999, which is no ggml tensor type"},
        {"overlap.gguf",
         file("overlap.gguf", 2, 0,
              Bytes()
                  .str("a")
                  .put(uint32_t(1))
                  .put(uint64_t(8))
                  .put(uint32_t(0))
                  .put(uint64_t(0))
                  .str("b")
                  .put(uint32_t(1))
                  .put(uint64_t(4))
                  .put(uint32_t(0))
                  .put(uint64_t(0))),
         "tensors 'a' and 'b' overlap in the data section"},
    };
    for (const Case& c : cases) {
        const std::string e = errorOf([&] { tb::readGgufSummary(c.path); });
        QVERIFY2(e.find(c.path + ": ") == 0 && e.find(c.expected) != std::string::npos,
                 qPrintable(QString::fromLatin1(c.name) + QStringLiteral(": ") +
                            QString::fromStdString(e)));
    }
    // The same tensor with sizes that fit is read.
    const auto fine = tb::readGgufSummary(file("fine.gguf", 1, 0, tensor({}, {4}, 0)));
    QCOMPARE(fine.tensors.size(), size_t(1));
    QCOMPARE(fine.tensors[0].dims, (std::vector<int64_t>{4}));
}

void TestGguf::byteLayout()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("t.gguf"));
    using V = tb::GgufValue;
    const std::vector<tb::GgufKeyValue> kv = {
        {"general.alignment", V::u32(32)},
        {"k.u8", V::u8(200)},
        {"k.i8", V::i8(-5)},
        {"k.u16", V::u16(60000)},
        {"k.i16", V::i16(-30000)},
        {"k.i32", V::i32(-123456)},
        {"k.f32", V::f32(0.25f)},
        {"k.bool", V::boolean(true)},
        {"k.str", V::string("héllo")},
        {"k.u64", V::u64(1ull << 40)},
        {"k.i64", V::i64(-(1ll << 40))},
        {"k.f64", V::f64(-2.5)},
        {"k.strs", V::strings({"a", "", "▁b"})},
        {"k.f32s", V::f32s({1.5f, -2.0f})},
        {"k.i32s", V::i32s({1, 6, -3})},
    };
    // a: [2, 3] f32 (row-major); b: [5] f16 -- a's 24 bytes force 8 bytes of padding before b.
    const std::vector<float> a = {1, 2, 3, 4, 5, 6};
    const std::string bBytes(10, '\x3c');
    const std::vector<tb::GgufTensor> tensors = {
        {"a", tb::GgufTensorType::F32, {2, 3}, [&] { return floats(a); }},
        {"b", tb::GgufTensorType::F16, {5}, [&] { return bBytes; }},
    };
    tb::writeGguf(path.toStdString(), kv, tensors);

    Reader r{readAll(path)};
    QCOMPARE(r.bytes.substr(0, 4), std::string("GGUF"));
    r.pos = 4;
    QCOMPARE(r.get<uint32_t>(), 3u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(2));
    QCOMPARE(r.get<uint64_t>(), uint64_t(kv.size()));
    auto key = [&](const char* name, uint32_t type) {
        QCOMPARE(r.str(), std::string(name));
        QCOMPARE(r.get<uint32_t>(), type);
    };
    key("general.alignment", 4);
    QCOMPARE(r.get<uint32_t>(), 32u);
    key("k.u8", 0);
    QCOMPARE(r.get<uint8_t>(), uint8_t(200));
    key("k.i8", 1);
    QCOMPARE(r.get<int8_t>(), int8_t(-5));
    key("k.u16", 2);
    QCOMPARE(r.get<uint16_t>(), uint16_t(60000));
    key("k.i16", 3);
    QCOMPARE(r.get<int16_t>(), int16_t(-30000));
    key("k.i32", 5);
    QCOMPARE(r.get<int32_t>(), -123456);
    key("k.f32", 6);
    QCOMPARE(r.get<float>(), 0.25f);
    key("k.bool", 7);
    QCOMPARE(r.get<uint8_t>(), uint8_t(1));
    key("k.str", 8);
    QCOMPARE(r.str(), std::string("héllo"));
    key("k.u64", 10);
    QCOMPARE(r.get<uint64_t>(), uint64_t(1) << 40);
    key("k.i64", 11);
    QCOMPARE(r.get<int64_t>(), -(int64_t(1) << 40));
    key("k.f64", 12);
    QCOMPARE(r.get<double>(), -2.5);
    key("k.strs", 9);
    QCOMPARE(r.get<uint32_t>(), 8u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(3));
    QCOMPARE(r.str(), std::string("a"));
    QCOMPARE(r.str(), std::string());
    QCOMPARE(r.str(), std::string("▁b"));
    key("k.f32s", 9);
    QCOMPARE(r.get<uint32_t>(), 6u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(2));
    QCOMPARE(r.get<float>(), 1.5f);
    QCOMPARE(r.get<float>(), -2.0f);
    key("k.i32s", 9);
    QCOMPARE(r.get<uint32_t>(), 5u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(3));
    QCOMPARE(r.get<int32_t>(), 1);
    QCOMPARE(r.get<int32_t>(), 6);
    QCOMPARE(r.get<int32_t>(), -3);

    // Tensor infos: dims reversed (fastest-varying first), type, offset relative to the data
    // section.
    QCOMPARE(r.str(), std::string("a"));
    QCOMPARE(r.get<uint32_t>(), 2u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(3));
    QCOMPARE(r.get<uint64_t>(), uint64_t(2));
    QCOMPARE(r.get<uint32_t>(), 0u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(0));
    QCOMPARE(r.str(), std::string("b"));
    QCOMPARE(r.get<uint32_t>(), 1u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(5));
    QCOMPARE(r.get<uint32_t>(), 1u);
    QCOMPARE(r.get<uint64_t>(), uint64_t(32));

    // Zero padding up to the aligned data section; tensor a, padding, b; nothing after b.
    const size_t data = (r.pos + 31) / 32 * 32;
    QCOMPARE(r.bytes.substr(r.pos, data - r.pos), std::string(data - r.pos, '\0'));
    QCOMPARE(r.bytes.substr(data, 24), floats(a));
    QCOMPARE(r.bytes.substr(data + 24, 8), std::string(8, '\0'));
    QCOMPARE(r.bytes.substr(data + 32), bBytes);

    // core's reader agrees.
    const tb::GgufSummary s = tb::readGgufSummary(path.toStdString());
    QCOMPARE(s.version, 3u);
    QCOMPARE(s.dataOffset, uint64_t(data));
    QCOMPARE(s.fileSize, uint64_t(r.bytes.size()));
    QCOMPARE(s.metadata.at("k.str"), std::string("héllo"));
    QCOMPARE(s.metadata.at("k.i64"), std::string("-1099511627776"));
    QCOMPARE(s.tensors.size(), size_t(2));
    QCOMPARE(s.tensors[1].dims, std::vector<int64_t>({5}));
    QCOMPARE(s.tensors[1].offset, uint64_t(32));

    // A truncated copy is refused with the file named.
    const QString cut = dir.filePath(QStringLiteral("cut.gguf"));
    {
        std::ofstream out(cut.toStdString(), std::ios::binary);
        out << r.bytes.substr(0, r.bytes.size() - 4);
    }
    const std::string e = errorOf([&] { tb::readGgufSummary(cut.toStdString()); });
    QVERIFY2(e.find("cut.gguf") != std::string::npos && e.find("'b'") != std::string::npos,
             e.c_str());
}

void TestGguf::badTensorLeavesNoFile()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.gguf"));
    const std::string e = errorOf([&] {
        tb::writeGguf(path.toStdString(), {{"general.alignment", tb::GgufValue::u32(32)}},
                      {{"w", tb::GgufTensorType::F32, {4}, [] { return std::string(8, '\0'); }}});
    });
    QVERIFY2(e.find("'w'") != std::string::npos && e.find("16") != std::string::npos, e.c_str());
    // Neither the file nor its temp file is left behind.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList());
}

// Q8_0 as ggml's reference defines it: d = max|x| / 127 stored fp16, q = round(x / d) half away
// from zero.
void TestGguf::q8_0Blocks()
{
    std::vector<float> x(64);
    for (int j = 0; j < 32; ++j)
        x[j] = (j - 16) * 0.25f;  // max |x| = 4 at j = 0
    // Block 2: d = 127 / 127 = 1, so the halves show the rounding.
    for (int j = 0; j < 32; ++j)
        x[32 + j] = 0.0f;
    x[32] = 127.0f;
    x[33] = 2.5f;
    x[34] = -2.5f;
    x[35] = 0.5f;
    x[36] = -0.49f;
    const std::string q = tb::quantizeQ8_0(x.data(), 64);
    QCOMPARE(q.size(), size_t(68));
    auto scaleOf = [&](int block) {
        uint16_t bits;
        std::memcpy(&bits, q.data() + block * 34, 2);
        return bits;
    };
    auto value = [&](int block, int j) {
        return int(static_cast<int8_t>(q[size_t(block * 34 + 2 + j)]));
    };
    const qfloat16 d1(4.0f / 127.0f);
    uint16_t d1bits;
    std::memcpy(&d1bits, &d1, 2);
    QCOMPARE(scaleOf(0), d1bits);
    QCOMPARE(value(0, 0), -127);
    QCOMPARE(value(0, 16), 0);
    QCOMPARE(value(0, 17), 8);    // 0.25 * 127 / 4 = 7.94
    QCOMPARE(value(0, 18), 16);   // 15.875
    QCOMPARE(value(0, 31), 119);  // 3.75 * 31.75 = 119.06
    const qfloat16 one(1.0f);
    uint16_t oneBits;
    std::memcpy(&oneBits, &one, 2);
    QCOMPARE(scaleOf(1), oneBits);
    QCOMPARE(value(1, 0), 127);
    QCOMPARE(value(1, 1), 3);  // 2.5 rounds away from zero
    QCOMPARE(value(1, 2), -3);
    QCOMPARE(value(1, 3), 1);
    QCOMPARE(value(1, 4), 0);
    // An all-zero block stores d = 0 and zeros.
    std::vector<float> zeros(32, 0.0f);
    QCOMPARE(tb::quantizeQ8_0(zeros.data(), 32), std::string(34, '\0'));
    // Back to floats: within half a step of each weight.
    std::vector<float> back(64);
    tb::dequantizeQ8_0(q, back.data(), 64);
    for (int j = 0; j < 32; ++j)
        QVERIFY(std::abs(back[j] - x[j]) <= 0.5f * 4.0f / 127.0f * 1.001f);
    QCOMPARE(back[33], 3.0f);
    // Whole blocks only: a length that is not, and a tensor whose rows are not, are refused by
    // name.
    QVERIFY(errorOf([&] { tb::quantizeQ8_0(x.data(), 40); }).find("32") != std::string::npos);
    QTemporaryDir dir;
    const std::string e = errorOf([&] {
        tb::writeGguf(dir.filePath(QStringLiteral("q.gguf")).toStdString(), {},
                      {{"blk.0.ffn_down.weight", tb::GgufTensorType::Q8_0, {2, 48}, [] {
                            return std::string();
                        }}});
    });
    QVERIFY2(e.find("'blk.0.ffn_down.weight'") != std::string::npos &&
                 e.find("48") != std::string::npos,
             e.c_str());
}

void TestGguf::unwritablePath()
{
    QTemporaryDir dir;
    writeText(dir.filePath(QStringLiteral("plain")), "x");
    // A folder that cannot exist: its parent is a file.
    const std::string path = dir.filePath(QStringLiteral("plain/sub/m.gguf")).toStdString();
    const std::string e = errorOf([&] { tb::writeGguf(path, {}, {}); });
    QVERIFY2(e.find(path) != std::string::npos, e.c_str());
}

void TestGguf::refusedModels()
{
    QTemporaryDir dir;
    // A GPT-2 with the exact-erf GELU: llama.cpp's gpt2 graph has the tanh one (the activation is
    // the problem, not the missing weights).
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("gpt2")));
    writeText(dir.filePath(QStringLiteral("gpt2/config.json")),
              R"({"model_type": "gpt2", "vocab_size": 64, "n_embd": 8, "n_layer": 1, "n_head": 2,
                  "n_positions": 16, "activation_function": "gelu"})");
    tb::TrainConfig run;
    run.method = tb::Method::Lora;
    run.model = dir.filePath(QStringLiteral("gpt2")).toStdString();
    std::string e = errorOf([&] { tb::checkGgufExportable(run); });
    QVERIFY2(e.find("tanh GELU") != std::string::npos && e.find("'gelu'") != std::string::npos,
             e.c_str());

    // Bottleneck adapters and soft prompts have no merged form.
    run.model = TB_SOURCE_DIR "/datasets/models/stories260k";
    run.method = tb::Method::Adapter;
    e = errorOf([&] { tb::checkGgufExportable(run); });
    QVERIFY2(e.find("adapter run cannot be written as GGUF") != std::string::npos, e.c_str());
    run.method = tb::Method::Prompt;
    e = errorOf([&] { tb::checkGgufExportable(run); });
    QVERIFY2(e.find("soft prompt") != std::string::npos, e.c_str());
    run.method = tb::Method::Full;
    QCOMPARE(errorOf([&] { tb::checkGgufExportable(run); }), std::string());

    // Rope scaling: llama3's goes into the file (rope_freqs); linear is refused by name.
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("linear")));
    auto config = nlohmann::json::parse(
        tb::readFile(TB_SOURCE_DIR "/datasets/models/stories260k/config.json"));
    config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
    writeText(dir.filePath(QStringLiteral("linear/config.json")), config.dump().c_str());
    QFile::copy(QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k/tokenizer.model"),
                dir.filePath(QStringLiteral("linear/tokenizer.model")));
    run.model = dir.filePath(QStringLiteral("linear")).toStdString();
    e = errorOf([&] { tb::checkGgufExportable(run); });
    QVERIFY2(e.find("llama3 rope scaling") != std::string::npos &&
                 e.find("'linear'") != std::string::npos,
             e.c_str());
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 8192}};
    writeText(dir.filePath(QStringLiteral("linear/config.json")), config.dump().c_str());
    QCOMPARE(errorOf([&] { tb::checkGgufExportable(run); }), std::string());

    // A llama whose tokenizer is a BPE tokenizer.json.
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("bpe")));
    QFile::copy(QStringLiteral(TB_SOURCE_DIR "/datasets/models/stories260k/config.json"),
                dir.filePath(QStringLiteral("bpe/config.json")));
    writeText(dir.filePath(QStringLiteral("bpe/tokenizer.json")), "{}");
    run.model = dir.filePath(QStringLiteral("bpe")).toStdString();
    e = errorOf([&] { tb::checkGgufExportable(run); });
    QVERIFY2(e.find("byte-level BPE") != std::string::npos &&
                 e.find("tokenizer.json") != std::string::npos,
             e.c_str());
}

namespace {

// A byte-level BPE tokenizer.json around the given pre_tokenizer and normalizer (JSON text).
std::string bpeJson(const std::string& preTokenizer, const std::string& normalizer = "null")
{
    return R"({"normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + preTokenizer +
           R"(, "added_tokens": [{"id": 6, "content": "<|end|>", "special": true},
                                  {"id": 8, "content": " hi", "special": false}],
              "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3,
                        "\u0120a": 4, "\u0120ab": 5, "<|end|>": 6},
                        "merges": ["a b", ["\u0120", "a"], "\u0120a b"]}})";
}

std::string splitThenByteLevel(const std::string& regex)
{
    return R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": )" +
           nlohmann::json(regex).dump() +
           R"(}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel",
              "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})";
}

const char* const kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace

void TestGguf::bpePreTokenizerNames()
{
    QTemporaryDir dir;
    auto nameOf = [&](const std::string& text) {
        const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
        writeText(path, text.c_str());
        std::string name;
        const std::string e = errorOf([&] { name = tb::ggufPreTokenizerName(path.toStdString()); });
        return e.empty() ? name : "error: " + e;
    };
    QCOMPARE(tb::ggufPreTokenizerName(TB_SOURCE_DIR "/tests/data/tokenizers/gpt2/tokenizer.json"),
             std::string("gpt-2"));
    QCOMPARE(nameOf(bpeJson(splitThenByteLevel(kLlama3))), std::string("llama-bpe"));
    QCOMPARE(nameOf(bpeJson(splitThenByteLevel(kQwen2), R"({"type": "NFC"})")),
             std::string("qwen2"));
    // Anything llama.cpp would split differently is refused, naming the file and the reason.
    std::string e = nameOf(bpeJson(splitThenByteLevel(R"(\p{L}+|\p{N}+)")));
    QVERIFY2(e.find("pre_tokenizer is not one llama.cpp knows") != std::string::npos &&
                 e.find("tokenizer.json") != std::string::npos,
             e.c_str());
    e = nameOf(bpeJson(R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})"));
    QVERIFY2(e.find("pre_tokenizer is not one") != std::string::npos, e.c_str());
    e = nameOf(bpeJson(R"({"type": "Metaspace"})"));
    QVERIFY2(e.find("pre_tokenizer is not one") != std::string::npos, e.c_str());
    e = nameOf(bpeJson(splitThenByteLevel(kLlama3), R"({"type": "NFKC"})"));
    QVERIFY2(e.find("normalizer 'NFKC'") != std::string::npos, e.c_str());
    e = nameOf(R"({"model": {"type": "Unigram"}})");
    QVERIFY2(e.find("byte-level BPE") != std::string::npos, e.c_str());
}

void TestGguf::bpeVocabulary()
{
    QTemporaryDir dir;
    writeText(dir.filePath(QStringLiteral("tokenizer.json")),
              bpeJson(splitThenByteLevel(kLlama3)).c_str());
    writeText(dir.filePath(QStringLiteral("tokenizer_config.json")),
              R"({"eos_token": "<|end|>", "chat_template": "{{ x }}"})");
    tb::ModelConfig c;
    c.vocabSize = 10;  // id 7 is a gap, 9 a row beyond the tokenizer
    const tb::GgufVocab v = tb::readGgufVocab(dir.path().toStdString(), c);
    QCOMPARE(v.model, std::string("gpt2"));
    QCOMPARE(v.pre, std::string("llama-bpe"));
    QCOMPARE(v.tokens, (std::vector<std::string>{"a", "b", "ab", "\u0120", "\u0120a", "\u0120ab",
                                                 "<|end|>", "[PAD7]", " hi", "[PAD9]"}));
    QCOMPARE(v.types, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 3, 5, 4, 5}));
    QCOMPARE(v.merges, (std::vector<std::string>{"a b", "\u0120 a", "\u0120a b"}));
    QVERIFY(v.scores.empty());
    QCOMPARE(v.eos, int64_t(6));
    QCOMPARE(v.bos, int64_t(-1));
    QVERIFY(!v.addBos);
    QCOMPARE(v.chatTemplate, std::string("{{ x }}"));

    c.vocabSize = 8;  // " hi" (id 8) does not fit
    const std::string e = errorOf([&] { tb::readGgufVocab(dir.path().toStdString(), c); });
    QVERIFY2(e.find("token id 8") != std::string::npos &&
                 e.find("vocab_size is 8") != std::string::npos,
             e.c_str());
}

QTEST_GUILESS_MAIN(TestGguf)
#include "test_gguf.moc"
