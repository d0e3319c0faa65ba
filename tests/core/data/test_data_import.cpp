// Dataset import and chunking: format detection and normalisation, rejected rows with their lines
// and reasons, CSV/TSV quoting and column mapping, whole-file errors, bounded memory on a 50 MB
// line, chunker invariants with the stories260k tokenizer, and record helpers against the training
// reader.
#include "data/ingest/chunker.h"
#include "data/ingest/example_file.h"
#include "data/ingest/import.h"
#include "data/record.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

#include <QtTest>

#include "test_util.h"

#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>

using nlohmann::json;
using tb::ImportedRecord;
using tb::ImportFormat;
using tb::ImportSummary;

namespace {

using tbtest::contains;
using tbtest::writeText;

const std::string kModel = TB_SOURCE_DIR "/datasets/models/stories260k";
const std::string kTiny = TB_SOURCE_DIR "/datasets/tiny";

struct Imported {
    ImportSummary summary;
    std::vector<ImportedRecord> records;
};

Imported importAll(const std::string& path, const tb::ImportOptions& options = {})
{
    Imported out;
    out.summary = tb::importFile(path, options,
                                 [&](ImportedRecord&& r) { out.records.push_back(std::move(r)); });
    return out;
}

// The tb::Error message of importing `path`, or "" when it imports.
std::string importError(const std::string& path, const tb::ImportOptions& options = {})
{
    try {
        tb::importFile(path, options, [](ImportedRecord&&) {});
    } catch (const tb::Error& e) {
        return e.what();
    }
    return "";
}

// Peak resident memory of this process so far, bytes.
int64_t peakRss()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

bool isSpaceByte(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

}  // namespace

class TestDataImport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void formatNames();
    void recordValidation();
    void recordTexts();
    void detectsAlpacaKeepsExtraKeys();
    void detectsChat();
    void detectsShareGpt();
    void detectsPromptCompletionAndText();
    void explicitFormat();
    void rejectsBadRows();
    void rejectsNonUtf8Row();
    void oversizeLine();
    void jsonArrayInJsonl();
    void jsonArrayInJson();
    void fileErrors();
    void progressAndCancel();
    void csvQuoting();
    void tsvAndDelimiter();
    void csvColumnMapping();
    void chunkerOptions();
    void chunkerInvariants();
    void chunkerPrefersParagraphs();
    void chunkerHardCut();
    void importsDocument();
    void recordToExampleMatchesTrainingReader();

private:
    std::unique_ptr<tb::Tokenizer> m_tok;
    QTemporaryDir m_dir;
};

void TestDataImport::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_tok = tb::loadTokenizer(kModel);
}

void TestDataImport::formatNames()
{
    const std::vector<std::pair<ImportFormat, std::string>> names = {
        {ImportFormat::Auto, "auto"},
        {ImportFormat::Alpaca, "alpaca"},
        {ImportFormat::Chat, "chat"},
        {ImportFormat::ShareGpt, "sharegpt"},
        {ImportFormat::PromptCompletion, "prompt-completion"},
        {ImportFormat::Text, "text"},
        {ImportFormat::Csv, "csv"},
        {ImportFormat::Documents, "documents"}};
    for (const auto& [format, name] : names) {
        QCOMPARE(std::string(tb::importFormatName(format)), name);
        QCOMPARE(tb::parseImportFormat(name), std::optional(format));
    }
    QVERIFY(!tb::parseImportFormat("xml").has_value());
    QVERIFY(tb::isRecordKind("prompt-completion"));
    QVERIFY(!tb::isRecordKind("sharegpt"));
}

void TestDataImport::recordValidation()
{
    auto reason = [](const char* kind, const char* fields) {
        return tb::validateRecord(kind, json::parse(fields)).value_or("");
    };
    QCOMPARE(reason("alpaca", R"({"instruction": "a", "output": "b", "label": 3})"), std::string());
    QCOMPARE(reason("alpaca", R"({"instruction": "a", "input": null, "output": "b"})"),
             std::string());
    QCOMPARE(reason("alpaca", R"({"instruction": "a"})"), std::string("missing field \"output\""));
    QCOMPARE(reason("alpaca", R"({"instruction": "a", "input": 4, "output": "b"})"),
             std::string("field \"input\" is a number, expected a string"));
    QCOMPARE(reason("alpaca", R"({"instruction": "", "output": "b"})"),
             std::string("field \"instruction\" is empty"));
    QCOMPARE(reason("chat", R"({"messages": []})"), std::string("empty conversation"));
    QCOMPARE(reason("chat", R"({"messages": [{"role": "user", "content": "a"},
                                             {"role": "assistant", "content": "b"},
                                             {"role": "bot", "content": "c"}]})"),
             std::string("messages[2].role is \"bot\"; expected system, user or assistant"));
    QCOMPARE(reason("chat", R"({"messages": [{"role": "user", "content": "a"}]})"),
             std::string("no assistant turn (nothing to train on)"));
    QCOMPARE(reason("chat", R"({"messages": [{"role": "user", "content": 5}]})"),
             std::string("messages[0].content is a number, expected a string"));
    QCOMPARE(reason("chat", R"({"messages": "hi"})"),
             std::string("field \"messages\" is a string, expected an array"));
    QCOMPARE(reason("chat", R"({"messages": [{"role": "system", "content": ""},
                                             {"role": "user", "content": "a"},
                                             {"role": "assistant", "content": "b"}]})"),
             std::string());
    QCOMPARE(reason("prompt-completion", R"({"prompt": "a"})"),
             std::string("missing field \"completion\""));
    QCOMPARE(reason("text", R"({"text": ["a"]})"),
             std::string("field \"text\" is an array, expected a string"));
    QVERIFY(contains(reason("poem", R"({})"), "unknown record kind \"poem\""));
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::recordToExample("alpaca", json::parse(R"({"output": "b"})")));
}

void TestDataImport::recordTexts()
{
    using Pairs = std::vector<std::pair<std::string, std::string>>;
    const json alpaca =
        json::parse(R"({"instruction": "Add.", "input": "1 2", "output": "3", "id": 7})");
    QCOMPARE(tb::recordFieldTexts("alpaca", alpaca),
             (Pairs{{"instruction", "Add."}, {"input", "1 2"}, {"output", "3"}}));
    QCOMPARE(tb::recordText("alpaca", alpaca), std::string("Add.\n1 2\n3"));
    const json noInput = json::parse(R"({"instruction": "Add.", "input": "", "output": "3"})");
    QCOMPARE(tb::recordFieldTexts("alpaca", noInput),
             (Pairs{{"instruction", "Add."}, {"output", "3"}}));

    const json chat = json::parse(R"({"messages": [{"role": "system", "content": "S"},
        {"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "U2"}, {"role": "assistant", "content": "A2"}]})");
    QCOMPARE(tb::recordFieldTexts("chat", chat),
             (Pairs{{"system", "S"}, {"user", "U1\nU2"}, {"assistant", "A1\nA2"}}));
    QCOMPARE(tb::recordText("chat", chat), std::string("S\nU1\nA1\nU2\nA2"));  // conversation order

    QCOMPARE(tb::recordFieldTexts("prompt-completion",
                                  json::parse(R"({"prompt": "P", "completion": "C"})")),
             (Pairs{{"prompt", "P"}, {"completion", "C"}}));
    QCOMPARE(tb::recordText("text", json::parse(R"({"text": "T", "label": "x"})")),
             std::string("T"));

    const tb::Example ex = tb::recordToExample("chat", chat);
    QCOMPARE(ex.messages.size(), size_t(5));
    QCOMPARE(ex.messages[3].content, std::string("U2"));
    const tb::Example text = tb::recordToExample("text", json::parse(R"({"text": "T"})"));
    QVERIFY(text.plainText);
    QCOMPARE(text.messages[0].role, std::string("assistant"));
}

void TestDataImport::detectsAlpacaKeepsExtraKeys()
{
    const std::string path = writeText(
        m_dir, "alpaca.jsonl",
        R"({"instruction": "Say hi.", "output": "Hi!", "label": "greeting"})"
        "\n\n"
        R"({"instruction": "Add.", "input": "1 2", "output": "3", "label": "math", "id": 9})"
        "\r\n");
    const Imported got = importAll(path);
    QCOMPARE(got.summary.format, ImportFormat::Alpaca);
    QCOMPARE(got.summary.imported, int64_t(2));
    QVERIFY(got.summary.rejected.empty());
    QCOMPARE(got.records.size(), size_t(2));
    QCOMPARE(got.records[0].kind, std::string("alpaca"));
    QCOMPARE(got.records[0].fields["label"], json("greeting"));
    QCOMPARE(got.records[0].line, int64_t(1));
    QCOMPARE(got.records[0].byteOffset, int64_t(0));
    QCOMPARE(got.records[0].chunkIndex, -1);
    QCOMPARE(got.records[1].line, int64_t(3));  // the blank line 2 is skipped but counted
    const std::string firstLine =
        R"({"instruction": "Say hi.", "output": "Hi!", "label": "greeting"})";
    QCOMPARE(got.records[1].byteOffset, int64_t(firstLine.size() + 2));
    QCOMPARE(got.records[1].fields["id"], json(9));
    QCOMPARE(got.records[1].fields["input"], json("1 2"));
}

void TestDataImport::detectsChat()
{
    const std::string path = writeText(
        m_dir, "chat.jsonl",
        R"({"messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"},)"
        R"( {"role": "assistant", "content": "Hello"}], "category": "smalltalk"})"
        "\n"
        R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},)"
        R"( {"role": "bot", "content": "c"}]})"
        "\n"
        R"({"messages": []})"
        "\n");
    const Imported got = importAll(path);
    QCOMPARE(got.summary.format, ImportFormat::Chat);
    QCOMPARE(got.records.size(), size_t(1));
    QCOMPARE(got.records[0].kind, std::string("chat"));
    QCOMPARE(got.records[0].fields["messages"].size(), size_t(3));
    QCOMPARE(got.records[0].fields["category"], json("smalltalk"));
    QCOMPARE(got.summary.rejected.size(), size_t(2));
    QCOMPARE(got.summary.rejected[0].line, int64_t(2));
    QCOMPARE(got.summary.rejected[0].reason,
             std::string("messages[2].role is \"bot\"; expected system, user or assistant"));
    QCOMPARE(got.summary.rejected[1].line, int64_t(3));
    QCOMPARE(got.summary.rejected[1].reason, std::string("empty conversation"));

    // A row nested 100,000 levels deep (200 KB) is rejected by its line; the rows around it stay.
    const std::string deep = writeText(m_dir, "deep.jsonl",
                                       R"({"instruction": "a", "output": "b"})"
                                       "\n"
                                       R"({"instruction": "x", "output": "y", "extra": )" +
                                           std::string(100000, '[') + std::string(100000, ']') +
                                           "}\n"
                                           R"({"instruction": "c", "output": "d"})"
                                           "\n");
    const Imported kept = importAll(deep);
    QCOMPARE(kept.records.size(), size_t(2));
    QCOMPARE(kept.summary.rejected.size(), size_t(1));
    QCOMPARE(kept.summary.rejected[0].line, int64_t(2));
    QCOMPARE(kept.summary.rejected[0].reason, std::string("JSON nested deeper than 512 levels"));
}

void TestDataImport::detectsShareGpt()
{
    const std::string path = writeText(
        m_dir, "sharegpt.jsonl",
        R"({"id": "a1", "conversations": [{"from": "system", "value": "Be brief."},)"
        R"( {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]})"
        "\n"
        R"({"conversations": [{"from": "human", "value": "x"}, {"from": "bot", "value": "y"}]})"
        "\n"
        R"({"conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": 3}]})"
        "\n");
    const Imported got = importAll(path);
    QCOMPARE(got.summary.format, ImportFormat::ShareGpt);
    QCOMPARE(got.records.size(), size_t(1));
    const ImportedRecord& r = got.records[0];
    QCOMPARE(r.kind, std::string("chat"));
    QVERIFY(!r.fields.contains("conversations"));
    QCOMPARE(r.fields["id"], json("a1"));
    const json expected = json::parse(R"([{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])");
    QCOMPARE(r.fields["messages"], expected);
    QVERIFY(!tb::validateRecord(r.kind, r.fields).has_value());
    QCOMPARE(got.summary.rejected.size(), size_t(2));
    QCOMPARE(got.summary.rejected[0].line, int64_t(2));
    QCOMPARE(got.summary.rejected[0].reason,
             std::string("conversations[1].from is \"bot\"; expected human, gpt or system"));
    QCOMPARE(got.summary.rejected[1].line, int64_t(3));
    QCOMPARE(got.summary.rejected[1].reason,
             std::string("conversations[1].value is a number, expected a string"));
}

void TestDataImport::detectsPromptCompletionAndText()
{
    const Imported pc = importAll(writeText(m_dir, "pc.jsonl",
                                            R"({"prompt": "2+2=", "completion": "4", "label": 1})"
                                            "\n"));
    QCOMPARE(pc.summary.format, ImportFormat::PromptCompletion);
    QCOMPARE(pc.records[0].kind, std::string("prompt-completion"));
    QCOMPARE(pc.records[0].fields["label"], json(1));

    // A byte order mark before the first row is skipped; the row still starts on line 1.
    const Imported text = importAll(writeText(m_dir, "text.jsonl",
                                              "\xEF\xBB\xBF"
                                              R"({"text": "Once upon a time."})"
                                              "\n"
                                              R"({"text": "Caf\u00e9"})"));
    QCOMPARE(text.summary.format, ImportFormat::Text);
    QCOMPARE(text.records.size(), size_t(2));
    QCOMPARE(text.records[0].line, int64_t(1));
    QCOMPARE(text.records[0].byteOffset, int64_t(3));
    QCOMPARE(text.records[1].fields["text"], json("Café"));
}

void TestDataImport::explicitFormat()
{
    // Told the rows are prompt-completion, an alpaca row is rejected with a hint.
    tb::ImportOptions options;
    options.format = ImportFormat::PromptCompletion;
    const Imported got = importAll(writeText(m_dir, "explicit.jsonl",
                                             R"({"instruction": "a", "output": "b"})"
                                             "\n"
                                             R"({"prompt": "a", "completion": "b"})"
                                             "\n"),
                                   options);
    QCOMPARE(got.summary.format, ImportFormat::PromptCompletion);
    QCOMPARE(got.records.size(), size_t(1));
    QCOMPARE(got.summary.rejected.size(), size_t(1));
    QCOMPARE(
        got.summary.rejected[0].reason,
        std::string(
            "missing field \"prompt\" (the row looks like alpaca; the file is prompt-completion)"));
}

void TestDataImport::rejectsBadRows()
{
    const std::string path = writeText(m_dir, "mixed.jsonl",
                                       R"({"instruction": "A", "output": "a"})"
                                       "\n"
                                       R"({"instruction": "B"})"
                                       "\n"
                                       R"({"instruction": "C", "input": 5, "output": "c"})"
                                       "\n"
                                       R"({"instruction": "D", "output": )"
                                       "\n"
                                       R"(["instruction", "output"])"
                                       "\n"
                                       R"({"question": "?"})"
                                       "\n"
                                       R"({"instruction": "E", "output": ["e"]})"
                                       "\n"
                                       "   \n"
                                       R"({"instruction": "F", "output": "f"})");
    const Imported got = importAll(path);
    QCOMPARE(got.summary.format, ImportFormat::Alpaca);
    QCOMPARE(got.records.size(), size_t(2));
    QCOMPARE(got.records[1].line, int64_t(9));
    const std::vector<std::pair<int64_t, std::string>> expected = {
        {2, "missing field \"output\""},
        {3, "field \"input\" is a number, expected a string"},
        {4, "not valid JSON: parse error at line 1, column 32: syntax error"},
        {5, "expected a JSON object, got an array"},
        {6, "missing field \"instruction\""},
        {7, "field \"output\" is an array, expected a string"},
    };
    QCOMPARE(got.summary.rejected.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const tb::ImportRejection& r = got.summary.rejected[i];
        QCOMPARE(r.line, expected[i].first);
        QVERIFY2(r.reason.rfind(expected[i].second, 0) == 0, r.reason.c_str());
    }
}

void TestDataImport::rejectsNonUtf8Row()
{
    const std::string path = writeText(m_dir, "latin1.jsonl",
                                       R"({"text": "fine"})"
                                       "\n"
                                       "{\"text\": \"caf\xE9 au lait\"}\n"
                                       R"({"text": "also fine"})"
                                       "\n");
    const Imported got = importAll(path);
    QCOMPARE(got.records.size(), size_t(2));
    QCOMPARE(got.summary.rejected.size(), size_t(1));
    QCOMPARE(got.summary.rejected[0].line, int64_t(2));
    QCOMPARE(got.summary.rejected[0].reason,
             std::string("not valid UTF-8 (byte 0xE9 at column 14)"));

    // A file with no valid row at all is a whole-file error that names the first bad line.
    const std::string bad = writeText(m_dir, "latin1only.jsonl", "\n{\"text\": \"\xFF\"}\n");
    QCOMPARE(importError(bad), bad + ":2: not valid UTF-8 (byte 0xFF at column 11)");
}

void TestDataImport::oversizeLine()
{
    // 50 MB on one line, written in pieces so the test itself stays small too.
    const std::string path = m_dir.filePath(QStringLiteral("huge.jsonl")).toStdString();
    {
        std::ofstream out(path, std::ios::binary);
        const std::string piece(1000 * 1000, 'x');
        out << R"({"text": ")";
        for (int i = 0; i < 50; ++i)
            out << piece;
    }
    QCOMPARE(QFileInfo(QString::fromStdString(path)).size(), qint64(50 * 1000 * 1000 + 10));
    const int64_t before = peakRss();
    QCOMPARE(importError(path), path + ":1: line is 50.0 MB, over the 16 MiB row limit");
    const int64_t grown = peakRss() - before;
    QVERIFY2(grown < (48 << 20),
             qPrintable(QStringLiteral("peak memory grew %1 MiB").arg(grown >> 20)));

    // Between good rows the long line is one rejection; the rows around it are kept.
    const std::string mixed = m_dir.filePath(QStringLiteral("mixed_huge.jsonl")).toStdString();
    {
        std::ofstream out(mixed, std::ios::binary);
        out << R"({"text": "before"})"
            << "\n"
            << R"({"text": ")";
        const std::string piece(1 << 20, 'y');
        for (int i = 0; i < 17; ++i)
            out << piece;
        out << "\"}\n"
            << R"({"text": "after"})"
            << "\n";
    }
    const Imported got = importAll(mixed);
    QCOMPARE(got.records.size(), size_t(2));
    QCOMPARE(got.records[1].line, int64_t(3));
    QCOMPARE(got.summary.rejected.size(), size_t(1));
    QCOMPARE(got.summary.rejected[0].line, int64_t(2));
    QCOMPARE(got.summary.rejected[0].reason,
             std::string("line is 17.8 MB, over the 16 MiB row limit"));
}

void TestDataImport::jsonArrayInJsonl()
{
    const std::string path = writeText(m_dir, "array.jsonl",
                                       "  ["
                                       R"({"instruction": "a", "output": "b"}])"
                                       "\n");
    const std::string error = importError(path);
    QVERIFY2(
        error.rfind(path + ": the file is a JSON array, not JSONL (one object per line); rename it "
                           "to .json",
                    0) == 0,
        error.c_str());
}

void TestDataImport::jsonArrayInJson()
{
    const std::string path =
        writeText(m_dir, "array.json",
                  "[\n"
                  "  {\"instruction\": \"a\", \"output\": \"b\", \"label\": \"x\"},\n"
                  "  {\n"
                  "    \"instruction\": \"c [x], {y}\",\n"
                  "    \"output\": \"d \\\" ]\"\n"
                  "  },\n"
                  "  42,\n"
                  "  {\"instruction\": \"e\"},\n"
                  "  {\"instruction\": \"f\", \"output\": tru},\n"
                  "  {\"instruction\": \"g\", \"output\": \"h\"}\n"
                  "]\n");
    const Imported got = importAll(path);
    QCOMPARE(got.summary.format, ImportFormat::Alpaca);
    QCOMPARE(got.records.size(), size_t(3));
    QCOMPARE(got.records[0].line, int64_t(2));
    QCOMPARE(got.records[0].byteOffset, int64_t(4));
    QCOMPARE(got.records[0].fields["label"], json("x"));
    QCOMPARE(got.records[1].line, int64_t(3));
    QCOMPARE(got.records[1].fields["instruction"], json("c [x], {y}"));
    QCOMPARE(got.records[1].fields["output"], json("d \" ]"));
    QCOMPARE(got.records[2].line, int64_t(10));
    QCOMPARE(got.summary.rejected.size(), size_t(3));
    QCOMPARE(got.summary.rejected[0].line, int64_t(7));
    QCOMPARE(got.summary.rejected[0].reason, std::string("expected a JSON object, got a number"));
    QCOMPARE(got.summary.rejected[1].line, int64_t(8));
    QCOMPARE(got.summary.rejected[1].reason, std::string("missing field \"output\""));
    QCOMPARE(got.summary.rejected[2].line, int64_t(9));
    QVERIFY2(contains(got.summary.rejected[2].reason, "not valid JSON"),
             got.summary.rejected[2].reason.c_str());

    // A minified array on one line, and a cut-off array whose complete elements are kept.
    const Imported oneLine =
        importAll(writeText(m_dir, "min.json", R"([{"text":"a"},{"text":"b"}])"));
    QCOMPARE(oneLine.records.size(), size_t(2));
    QCOMPARE(oneLine.records[1].byteOffset, int64_t(14));
    const Imported cut =
        importAll(writeText(m_dir, "cut.json", "[{\"text\":\"a\"},\n{\"text\":\"b"));
    QCOMPARE(cut.records.size(), size_t(1));
    QCOMPARE(cut.summary.rejected.size(), size_t(1));
    QCOMPARE(cut.summary.rejected[0].line, int64_t(2));
    QVERIFY(contains(cut.summary.rejected[0].reason, "ends inside this element"));
    const std::string empty = writeText(m_dir, "empty_array.json", "[ ]");
    QCOMPARE(importError(empty), empty + ": the JSON array is empty");
    const std::string trailing = writeText(m_dir, "trailing.json", "[{\"text\":\"a\"}]\nx");
    QCOMPARE(importError(trailing),
             trailing + ":2: unexpected 'x' at column 1 after the end of the JSON array");
}

void TestDataImport::fileErrors()
{
    const std::string empty = writeText(m_dir, "empty.jsonl", "");
    QCOMPARE(importError(empty), empty + ": file is empty");
    const std::string blank = writeText(m_dir, "blank.jsonl", " \n\n\t\n");
    QCOMPARE(importError(blank), blank + ": file is empty (only whitespace)");
    const std::string emptyCsv = writeText(m_dir, "empty.csv", "");
    QCOMPARE(importError(emptyCsv), emptyCsv + ": file is empty");
    const std::string headerOnly = writeText(m_dir, "header.csv", "\xEF\xBB\xBFtext,label\r\n\r\n");
    QCOMPARE(importError(headerOnly), headerOnly + ": no rows after the header");
    // A header naming a column twice is refused by its name (empty names may repeat); so among
    // 20,000 columns.
    const std::string twice = writeText(m_dir, "twice.csv", "text,,,label,text\nx,,,1,y\n");
    QCOMPARE(importError(twice), twice + ":1: column \"text\" appears twice in the header");
    std::string wide;
    for (int i = 0; i < 20000; ++i)
        wide += tbtest::numbered("c", i) + ",";
    const std::string wideTwice = writeText(m_dir, "wide.csv", wide + "text,c7\n" + wide + "a,b\n");
    QCOMPARE(importError(wideTwice), wideTwice + ":1: column \"c7\" appears twice in the header");
    const std::string missing = m_dir.filePath(QStringLiteral("missing.jsonl")).toStdString();
    QVERIFY(importError(missing).rfind(missing + ": cannot open", 0) == 0);
    const std::string dir = m_dir.path().toStdString();
    QCOMPARE(importError(dir), dir + ": is a directory, not a file");
    // A pipe reads once, and an import reads its file more than once: refused, not 8% of it
    // imported with rows spliced together.
    const std::string fifo = m_dir.filePath(QStringLiteral("rows.fifo")).toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    QVERIFY2(contains(importError(fifo), fifo + ": not a regular file (a pipe or a device)"),
             importError(fifo).c_str());
    const std::string unknown = writeText(m_dir, "data.bin", "hello");
    QVERIFY(importError(unknown).rfind(unknown + ": cannot tell the format of a \".bin\" file",
                                       0) == 0);
    // An unknown extension whose content is JSON rows is read as JSONL.
    QCOMPARE(importAll(writeText(m_dir, "rows.data", R"({"text": "a"})")).records.size(),
             size_t(1));
    const std::string noRows = writeText(m_dir, "keys.jsonl",
                                         R"({"a": 1})"
                                         "\n"
                                         R"({"b": 2})"
                                         "\n");
    QCOMPARE(importError(noRows),
             noRows + ":1: no known fields (expected instruction/output, messages, conversations, "
                      "prompt/completion or text) (nothing imported; 1 more row rejected)");
}

void TestDataImport::progressAndCancel()
{
    const std::string path = writeText(m_dir, "progress.jsonl",
                                       R"({"text": "a"})"
                                       "\n");
    std::vector<std::pair<int64_t, int64_t>> calls;
    tb::importFile(
        path, {}, [](ImportedRecord&&) {},
        [&](int64_t done, int64_t total) {
            calls.emplace_back(done, total);
            return true;
        });
    QVERIFY(!calls.empty());
    QCOMPARE(calls.back().first, int64_t(14));
    QCOMPARE(calls.back().second, int64_t(14));
    try {
        tb::importFile(
            path, {}, [](ImportedRecord&&) {}, [](int64_t, int64_t) { return false; });
        QFAIL("expected cancellation");
    } catch (const tb::Error& e) {
        QCOMPARE(std::string(e.what()), path + ": import cancelled");
    }
}

void TestDataImport::csvQuoting()
{
    const std::string path =
        writeText(m_dir, "rows.csv",
                  "instruction,input,output,label\r\n"
                  "Say hi.,,Hi!,greeting\r\n"
                  "\"Write \"\"two\"\" lines.\",\"\",\"one\r\ntwo\",\"a,b\"\r\n"
                  "\r\n"
                  "Too,few,columns\r\n"
                  "Q,\"in\",\"\",x\r\n"
                  "\"broken\"tail,i,o,l\r\n"
                  "Last,\"multi\n"
                  "line\n"
                  "input\",out,z\n");
    const Imported got = importAll(path);
    QCOMPARE(got.summary.format, ImportFormat::Csv);
    QCOMPARE(got.records.size(), size_t(3));
    const ImportedRecord& a = got.records[0];
    QCOMPARE(a.kind, std::string("alpaca"));
    QCOMPARE(a.line, int64_t(2));
    QCOMPARE(a.fields, json::parse(R"({"instruction": "Say hi.", "input": "", "output": "Hi!",
                                       "label": "greeting"})"));
    const ImportedRecord& b = got.records[1];
    QCOMPARE(b.line, int64_t(3));
    QCOMPARE(
        b.byteOffset,
        int64_t(std::string("instruction,input,output,label\r\nSay hi.,,Hi!,greeting\r\n").size()));
    QCOMPARE(b.fields["instruction"], json("Write \"two\" lines."));
    QCOMPARE(b.fields["output"], json("one\r\ntwo"));
    QCOMPARE(b.fields["label"], json("a,b"));
    const ImportedRecord& c = got.records[2];
    QCOMPARE(c.line, int64_t(9));
    QCOMPARE(c.fields["input"], json("multi\nline\ninput"));
    QCOMPARE(c.fields["output"], json("out"));

    QCOMPARE(got.summary.rejected.size(), size_t(3));
    QCOMPARE(got.summary.rejected[0].line, int64_t(6));
    QCOMPARE(got.summary.rejected[0].reason, std::string("row has 3 columns, the header 4"));
    QCOMPARE(got.summary.rejected[1].line, int64_t(7));
    QCOMPARE(got.summary.rejected[1].reason, std::string("field \"output\" is empty"));
    QCOMPARE(got.summary.rejected[2].line, int64_t(8));
    QCOMPARE(got.summary.rejected[2].reason,
             std::string("text after the closing quote of column 1"));

    // A quote that never closes swallows the rest of the file as one rejected row.
    const Imported open =
        importAll(writeText(m_dir, "open.csv", "text\nfine\n\"never closed\nmore\n"));
    QCOMPARE(open.records.size(), size_t(1));
    QCOMPARE(open.summary.rejected.size(), size_t(1));
    QCOMPARE(open.summary.rejected[0].line, int64_t(3));
    QCOMPARE(open.summary.rejected[0].reason,
             std::string("a quoted field is not closed before the end of the file"));

    const Imported latin = importAll(writeText(m_dir, "latin.csv", "text\nok\ncaf\xE9\n"));
    QCOMPARE(latin.summary.rejected.size(), size_t(1));
    QCOMPARE(latin.summary.rejected[0].line, int64_t(3));
    QCOMPARE(latin.summary.rejected[0].reason,
             std::string("not valid UTF-8 (byte 0xE9 at column 4)"));
}

void TestDataImport::tsvAndDelimiter()
{
    // Headers match field names without regard to case; a byte order mark (Excel) is skipped.
    const Imported tsv = importAll(writeText(m_dir, "pairs.tsv",
                                             "\xEF\xBB\xBFPrompt\tCompletion\tsource\n"
                                             "2+2=\t4\tmath\n"
                                             "\"tab\tinside\"\tyes\tquoted\n"));
    QCOMPARE(tsv.summary.format, ImportFormat::Csv);
    QCOMPARE(tsv.records.size(), size_t(2));
    QCOMPARE(tsv.records[0].kind, std::string("prompt-completion"));
    QCOMPARE(tsv.records[0].fields,
             json::parse(R"({"prompt": "2+2=", "completion": "4", "source": "math"})"));
    QCOMPARE(tsv.records[1].fields["prompt"], json("tab\tinside"));

    tb::ImportOptions options;
    options.delimiter = ';';
    const Imported semi = importAll(writeText(m_dir, "semi.csv", "text;n\n\"a;b\";1\n"), options);
    QCOMPARE(semi.records.size(), size_t(1));
    QCOMPARE(semi.records[0].fields, json::parse(R"({"text": "a;b", "n": "1"})"));
}

void TestDataImport::csvColumnMapping()
{
    const std::string path = writeText(m_dir, "qa.csv",
                                       "question,answer,output,source\n"
                                       "What is 2+2?,4,unused,quiz\n"
                                       "Empty answer?,,x,quiz\n");
    tb::ImportOptions options;
    options.columns = {{"prompt", "question"}, {"completion", "answer"}};
    const Imported got = importAll(path, options);
    QCOMPARE(got.records.size(), size_t(1));
    QCOMPARE(got.records[0].kind, std::string("prompt-completion"));
    QCOMPARE(got.records[0].fields, json::parse(R"({"prompt": "What is 2+2?", "completion": "4",
                                                    "output": "unused", "source": "quiz"})"));
    QCOMPARE(got.summary.rejected.size(), size_t(1));
    QCOMPARE(got.summary.rejected[0].reason,
             std::string("field \"completion\" is empty (column \"answer\")"));

    options.columns = {{"prompt", "question"}, {"completion", "reply"}};
    QCOMPARE(
        importError(path, options),
        path +
            ": no column \"reply\" (mapped to field \"completion\"); the header has \"question\", "
            "\"answer\", \"output\", \"source\"");
    options.columns = {{"answer", "answer"}};
    QVERIFY(contains(importError(path, options), "names field \"answer\""));
    options.columns = {{"prompt", "question"}, {"output", "answer"}};
    QVERIFY(contains(importError(path, options), "do not make one record kind"));

    const std::string unknown = writeText(m_dir, "unknown.csv", "q,a\nx,y\n");
    QCOMPARE(importError(unknown), unknown +
                                       ":1: no columns named instruction and output, prompt and "
                                       "completion, or text; the header has \"q\", \"a\" (map "
                                       "columns to fields to import this file)");
}

void TestDataImport::chunkerOptions()
{
    auto error = [&](int maxTokens, int overlap) -> std::string {
        try {
            tb::chunkText(*m_tok, "Some text.", {maxTokens, overlap});
        } catch (const tb::Error& e) {
            return e.what();
        }
        return "";
    };
    QVERIFY(contains(error(4, 0), "maxTokens is 4"));
    QVERIFY(contains(error(64, 32), "overlapTokens is 32"));
    QVERIFY(contains(error(64, -1), "overlapTokens is -1"));
    QCOMPARE(error(8, 3), std::string());
    QVERIFY(tb::chunkText(*m_tok, " \n\t ", {}).empty());
    const auto one = tb::chunkText(*m_tok, "  Just one line.\n", {});
    QCOMPARE(one.size(), size_t(1));
    QCOMPARE(one[0].text, std::string("Just one line."));
    QCOMPARE(one[0].byteBegin, int64_t(2));
    QCOMPARE(one[0].overlapTokens, 0);
}

namespace {

// A story-like document: paragraphs of varied sentences (some with quotes and ! ?), a deterministic
// mix.
std::string makeDocument(int paragraphs, int sentencesLo, int sentencesHi)
{
    const char* subjects[] = {"Lily", "The little dog", "Tom and his mom", "A big red bird",
                              "The old man"};
    const char* verbs[] = {"walked to", "looked at", "played near", "ran past", "sang about"};
    const char* objects[] = {"the park", "a shiny stone", "the tall tree", "the blue lake",
                             "the garden"};
    const char* ends[] = {".", "!", "?", ".\"", "."};
    std::string doc;
    uint32_t state = 12345;
    auto next = [&](uint32_t n) {
        state = state * 1664525u + 1013904223u;
        return (state >> 8) % n;
    };
    for (int p = 0; p < paragraphs; ++p) {
        const int count = sentencesLo + static_cast<int>(next(sentencesHi - sentencesLo + 1));
        for (int s = 0; s < count; ++s) {
            if (s)
                doc += ' ';
            const uint32_t e = next(5);
            if (e == 3)
                doc += '"';
            doc += subjects[next(5)];
            doc += ' ';
            doc += verbs[next(5)];
            doc += ' ';
            doc += objects[next(5)];
            if (next(3) == 0)
                doc += " with a smile and a happy song in the warm afternoon sun";
            doc += ends[e];
        }
        doc += p % 3 == 2 ? "\n\n\n" : "\n\n";
    }
    return doc;
}

// The checks every chunking must pass, independent of how the chunker works inside.
void checkChunks(const tb::Tokenizer& tok, const std::string& doc,
                 const std::vector<tb::TextChunk>& chunks, const tb::ChunkOptions& options)
{
    QVERIFY(!chunks.empty());
    const size_t first = doc.find_first_not_of(" \n\t\r");
    const size_t last = doc.find_last_not_of(" \n\t\r") + 1;
    QCOMPARE(chunks.front().byteBegin, int64_t(first));
    QCOMPARE(chunks.back().byteEnd, int64_t(last));
    for (size_t i = 0; i < chunks.size(); ++i) {
        const tb::TextChunk& c = chunks[i];
        QVERIFY(c.byteBegin < c.byteEnd);
        QCOMPARE(c.text, doc.substr(c.byteBegin, c.byteEnd - c.byteBegin));
        const int32_t tokens = static_cast<int32_t>(tok.encode(c.text, false).size());
        QCOMPARE(c.tokens, tokens);
        QVERIFY2(tokens <= options.maxTokens,
                 qPrintable(QStringLiteral("chunk %1 has %2 tokens").arg(i).arg(tokens)));
        QVERIFY(tb::invalidUtf8At(c.text) < 0);
        QVERIFY(!isSpaceByte(c.text.front()) && !isSpaceByte(c.text.back()));
        if (i == 0) {
            QCOMPARE(c.overlapTokens, 0);
            continue;
        }
        const tb::TextChunk& prev = chunks[i - 1];
        QVERIFY(c.byteBegin > prev.byteBegin);  // in order, always advancing
        QVERIFY(c.byteEnd > prev.byteEnd);
        if (c.byteBegin < prev.byteEnd) {
            const std::string shared = doc.substr(c.byteBegin, prev.byteEnd - c.byteBegin);
            QCOMPARE(c.overlapTokens, static_cast<int32_t>(tok.encode(shared, false).size()));
            QVERIFY(c.overlapTokens <= options.overlapTokens + 4);
        } else {
            QCOMPARE(c.overlapTokens, 0);
            // No overlap: nothing but whitespace between the chunks.
            const std::string gap = doc.substr(prev.byteEnd, c.byteBegin - prev.byteEnd);
            QVERIFY(std::all_of(gap.begin(), gap.end(), isSpaceByte));
        }
    }
}

bool endsSentence(const std::string& text)
{
    std::string t = text;
    while (!t.empty() && (t.back() == '"' || t.back() == '\''))
        t.pop_back();
    return !t.empty() && (t.back() == '.' || t.back() == '!' || t.back() == '?');
}

}  // namespace

void TestDataImport::chunkerInvariants()
{
    const std::string doc = makeDocument(80, 3, 14);
    const tb::ChunkOptions options{128, 16};
    // The longest sentence makeDocument writes fits in what is left of half a chunk after the
    // overlap, so a sentence end always falls between half full and full: every cut must be at one.
    const std::string longest = "\"Tom and his mom played near a shiny stone with a smile and a "
                                "happy song in the warm afternoon "
                                "sun.\" ";
    QVERIFY(m_tok->encode(longest, false).size() <
            size_t(options.maxTokens / 2 - options.overlapTokens));
    const std::vector<tb::TextChunk> chunks = tb::chunkText(*m_tok, doc, options);
    checkChunks(*m_tok, doc, chunks, options);
    QVERIFY(chunks.size() > 20);
    int overlapping = 0, sentenceEnds = 0, sentenceStarts = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
        const tb::TextChunk& c = chunks[i];
        overlapping += c.overlapTokens > 0;
        sentenceEnds += endsSentence(c.text);
        if (i > 0) {
            // Every chunk starts at a word; a start right after a sentence end counts as a sentence
            // start.
            QVERIFY(isSpaceByte(doc[c.byteBegin - 1]));
            size_t k = c.byteBegin;
            while (k > 0 && isSpaceByte(doc[k - 1]))
                --k;
            sentenceStarts += endsSentence(doc.substr(0, k));
        }
        // The chunk is about half full or more unless it is the last one (the chunker decides by
        // summed sentence counts, which can differ from the joined text's by a few tokens).
        if (i + 1 < chunks.size())
            QVERIFY2(c.tokens >= options.maxTokens * 2 / 5, qPrintable(QString::number(c.tokens)));
    }
    // Overlap is missing only where the sentence before a cut is longer than the overlap and its
    // words cannot be split well; that is rare here.
    QCOMPARE(sentenceEnds, int(chunks.size()));
    QVERIFY2(
        overlapping >= int(chunks.size()) - 1 - int(chunks.size()) / 10,
        qPrintable(QStringLiteral("%1 of %2 chunks overlap").arg(overlapping).arg(chunks.size())));
    QVERIFY(sentenceStarts > 0);

    // No overlap: consecutive chunks meet with only whitespace between them.
    const tb::ChunkOptions noOverlap{48, 0};
    checkChunks(*m_tok, doc, tb::chunkText(*m_tok, doc, noOverlap), noOverlap);
}

void TestDataImport::chunkerPrefersParagraphs()
{
    // Paragraphs of 2-4 sentences, each well under half of maxTokens: then there is always a
    // paragraph break that leaves a chunk at least half full, and every chunk but the last must end
    // at one.
    const std::string doc = makeDocument(40, 2, 4);
    const tb::ChunkOptions options{400, 0};
    for (size_t begin = 0, end; begin < doc.size(); begin = end + 2) {
        end = doc.find("\n\n", begin);
        const std::string paragraph = doc.substr(begin, end - begin);
        QVERIFY(m_tok->encode(paragraph, false).size() < size_t(options.maxTokens / 2 - 20));
        end = doc.find_first_not_of('\n', end) - 2;
    }
    const std::vector<tb::TextChunk> chunks = tb::chunkText(*m_tok, doc, options);
    checkChunks(*m_tok, doc, chunks, options);
    QVERIFY(chunks.size() > 3);
    for (size_t i = 0; i + 1 < chunks.size(); ++i) {
        const size_t end = static_cast<size_t>(chunks[i].byteEnd);
        QVERIFY2(doc.compare(end, 2, "\n\n") == 0,
                 qPrintable(QStringLiteral("chunk %1 ends mid-paragraph: ...%2")
                                .arg(i)
                                .arg(QString::fromStdString(
                                    chunks[i].text.substr(chunks[i].text.size() - 30)))));
    }
}

void TestDataImport::chunkerHardCut()
{
    // A 6,000-byte "word" with 2-, 3- and 4-byte characters and no space: hard cuts, never inside a
    // character; then normal text after it.
    std::string word;
    const char* chars[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "z"};
    for (int i = 0; word.size() < 6000; ++i)
        word += chars[(i * 7) % 5];
    const std::string doc = word + " and then a short sentence. " + makeDocument(3, 2, 3);
    const tb::ChunkOptions options{32, 4};
    const std::vector<tb::TextChunk> chunks = tb::chunkText(*m_tok, doc, options);
    checkChunks(*m_tok, doc, chunks, options);
    QVERIFY(chunks.size() > 20);
    for (const tb::TextChunk& c : chunks)
        QVERIFY(tb::isUtf8Lead(doc[c.byteBegin]));
}

void TestDataImport::importsDocument()
{
    const std::string doc = makeDocument(12, 3, 6);
    const std::string path = writeText(m_dir, "story.md", "\xEF\xBB\xBF" + doc);
    tb::ImportOptions options;
    QVERIFY(contains(importError(path, options), "needs the model's tokenizer"));
    options.tokenizer = m_tok.get();
    options.chunk = {64, 8};
    const Imported got = importAll(path, options);
    QCOMPARE(got.summary.format, ImportFormat::Documents);
    const std::vector<tb::TextChunk> chunks = tb::chunkText(*m_tok, doc, options.chunk);
    QCOMPARE(got.records.size(), chunks.size());
    QVERIFY(got.records.size() > 3);
    for (size_t i = 0; i < chunks.size(); ++i) {
        const ImportedRecord& r = got.records[i];
        QCOMPARE(r.kind, std::string("text"));
        QCOMPARE(r.line, int64_t(0));
        QCOMPARE(r.chunkIndex, int32_t(i));
        QCOMPARE(r.chunkOverlap, chunks[i].overlapTokens);
        QCOMPARE(r.byteOffset, chunks[i].byteBegin + 3);  // offsets count the byte order mark
        QCOMPARE(r.fields, (json{{"text", chunks[i].text}}));
    }

    const std::string bad = writeText(m_dir, "bad.txt", "First line.\nSecond \xC3( line.\n");
    QCOMPARE(importError(bad, options),
             bad + ":2: not valid UTF-8 (byte 0xC3 at column 8); save the document as UTF-8");
    const std::string blank = writeText(m_dir, "blank.txt", "\n\n  \n");
    QCOMPARE(importError(blank, options), blank + ": file is empty (only whitespace)");
    options.chunk = {4, 0};
    QVERIFY(contains(importError(path, options), "maxTokens is 4"));
}

void TestDataImport::recordToExampleMatchesTrainingReader()
{
    for (const char* name : {"train.jsonl", "text.jsonl"}) {
        const std::string path = kTiny + "/" + name;
        const tb::ExampleFile reference = tb::readExampleFile(path);
        const Imported got = importAll(path);
        QVERIFY(got.summary.rejected.empty());
        QCOMPARE(got.records.size(), reference.examples.size());
        tb::TokenizeOptions options;
        options.family = tb::ChatTemplateFamily::Alpaca;
        for (size_t i = 0; i < got.records.size(); ++i) {
            const tb::Example ex = tb::recordToExample(got.records[i].kind, got.records[i].fields);
            const tb::Example& want = reference.examples[i];
            QCOMPARE(ex.plainText, want.plainText);
            QCOMPARE(ex.messages.size(), want.messages.size());
            const tb::TokenizedExample a = tb::tokenizeExample(*m_tok, ex, options);
            const tb::TokenizedExample b = tb::tokenizeExample(*m_tok, want, options);
            QCOMPARE(a.ids, b.ids);
            QCOMPARE(a.lossMask, b.lossMask);
        }
    }
}

QTEST_GUILESS_MAIN(TestDataImport)
#include "test_data_import.moc"
