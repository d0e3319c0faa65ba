// The training data pipeline: JSONL formats and rejected rows, tokenization with loss masks on the
// stories260k tokenizer, label shifting and packing, batch padding, epoch order, bundled datasets.
#include "data/ingest/example_file.h"
#include "tokenizer/tokenizer.h"
#include "train/batching.h"
#include "util/error.h"

#include <QtTest>

#include "test_util.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <set>

using tb::ChatTemplateFamily;
using tb::Example;
using tb::ExampleFormat;
using tb::TokenizedExample;

namespace {

using tbtest::contains;
using tbtest::writeText;

const std::string kModel = TB_SOURCE_DIR "/datasets/models/stories260k";
const std::string kTiny = TB_SOURCE_DIR "/datasets/tiny";

// The tb::Error message of reading `path`, or "" when it reads.
std::string readError(const std::string& path, ExampleFormat format = ExampleFormat::Auto)
{
    try {
        tb::readExampleFile(path, format);
    } catch (const tb::Error& e) {
        return e.what();
    }
    return "";
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts)
{
    std::vector<int32_t> out;
    for (const auto& p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

TokenizedExample tokenized(std::vector<int32_t> ids, std::vector<uint8_t> mask)
{
    TokenizedExample ex;
    ex.ids = std::move(ids);
    ex.lossMask = std::move(mask);
    return ex;
}

Example chat(const std::string& user, const std::string& assistant)
{
    Example ex;
    ex.messages = {{"user", user}, {"assistant", assistant}};
    return ex;
}

}  // namespace

class TestDataset : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void formatNames();
    void readsAlpaca();
    void readsMessages();
    void readsPromptCompletion();
    void readsText();
    void rejectsBadRowsKeepsGood();
    void rejectsNonUtf8Row();
    void explicitFormat();
    void fileErrors();
    void tokenizePlainMasksResponse();
    void tokenizeAlpacaTemplate();
    void tokenizeMultiTurn();
    void tokenizeAllLossAndNoEos();
    void tokenizePlainText();
    void truncation();
    void sequencesShiftLabels();
    void packingBoundaries();
    void batchPadding();
    void evalBatches();
    void epochOrderDeterministic();
    void bundledDatasets();

private:
    std::unique_ptr<tb::Tokenizer> m_tok;
    QTemporaryDir m_dir;
};

void TestDataset::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_tok = tb::loadTokenizer(kModel);
    QVERIFY(m_tok->bosId().has_value());
    QVERIFY(m_tok->eosId().has_value());
}

void TestDataset::formatNames()
{
    for (ExampleFormat f : {ExampleFormat::Auto, ExampleFormat::Alpaca, ExampleFormat::Messages,
                            ExampleFormat::PromptCompletion, ExampleFormat::Text})
        QCOMPARE(tb::parseExampleFormat(tb::exampleFormatName(f)), std::optional(f));
    QCOMPARE(std::string(tb::exampleFormatName(ExampleFormat::PromptCompletion)),
             std::string("prompt_completion"));
    QVERIFY(!tb::parseExampleFormat("csv").has_value());
}

void TestDataset::readsAlpaca()
{
    const std::string path = writeText(m_dir, "alpaca.jsonl",
                                       R"({"instruction": "Say hi.", "output": "Hi!"})"
                                       "\n\n"
                                       R"({"instruction": "Add.", "input": "1 2", "output": "3"})"
                                       "\r\n"
                                       R"({"instruction": "Again.", "input": "", "output": "x"})");
    const tb::ExampleFile file = tb::readExampleFile(path);
    QCOMPARE(file.format, ExampleFormat::Alpaca);
    QVERIFY(file.rejected.empty());
    QCOMPARE(file.examples.size(), size_t(3));
    const Example& a = file.examples[0];
    QCOMPARE(a.messages.size(), size_t(2));
    QCOMPARE(a.messages[0].role, std::string("user"));
    QCOMPARE(a.messages[0].content, std::string("Say hi."));
    QCOMPARE(a.messages[1].role, std::string("assistant"));
    QCOMPARE(a.messages[1].content, std::string("Hi!"));
    QVERIFY(!a.plainText);
    QCOMPARE(a.source, path + ":1");
    // The blank line 2 is skipped but counted; CRLF line ends are accepted.
    QCOMPARE(file.examples[1].messages[0].content, std::string("Add.\n\n1 2"));
    QCOMPARE(file.examples[1].messages[1].content, std::string("3"));
    QCOMPARE(file.examples[1].source, path + ":3");
    QCOMPARE(file.examples[2].messages[0].content, std::string("Again."));  // empty input: none
}

void TestDataset::readsMessages()
{
    const std::string path = writeText(
        m_dir, "chat.jsonl",
        R"({"messages": [{"role": "system", "content": "Be kind."},)"
        R"( {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},)"
        R"( {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Bye!"}]})"
        "\n"
        R"({"messages": [{"role": "user", "content": "Only a question"}]})"
        "\n"
        R"({"messages": [{"role": "robot", "content": "x"},)"
        R"( {"role": "assistant", "content": "y"}]})"
        "\n"
        R"({"messages": "not a list"})"
        "\n"
        R"({"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "y"}]})"
        "\n");
    const tb::ExampleFile file = tb::readExampleFile(path);
    QCOMPARE(file.format, ExampleFormat::Messages);
    QCOMPARE(file.examples.size(), size_t(1));
    const auto& m = file.examples[0].messages;
    QCOMPARE(m.size(), size_t(5));
    QCOMPARE(m[0].role, std::string("system"));
    QCOMPARE(m[4].content, std::string("Bye!"));
    QCOMPARE(file.rejected.size(), size_t(4));
    QCOMPARE(file.rejected[0].location, path + ":2");
    QVERIFY2(contains(file.rejected[0].reason, "assistant"), file.rejected[0].reason.c_str());
    QCOMPARE(file.rejected[1].location, path + ":3");
    QVERIFY2(contains(file.rejected[1].reason, "robot"), file.rejected[1].reason.c_str());
    QVERIFY2(contains(file.rejected[2].reason, "array"), file.rejected[2].reason.c_str());
    QVERIFY2(contains(file.rejected[3].reason, "messages[0].content is empty"),
             file.rejected[3].reason.c_str());
}

void TestDataset::readsPromptCompletion()
{
    const std::string path = writeText(m_dir, "pc.jsonl",
                                       R"({"prompt": "2+2=", "completion": "4"})"
                                       "\n");
    const tb::ExampleFile file = tb::readExampleFile(path);
    QCOMPARE(file.format, ExampleFormat::PromptCompletion);
    QCOMPARE(file.examples.size(), size_t(1));
    QCOMPARE(file.examples[0].messages[0].role, std::string("user"));
    QCOMPARE(file.examples[0].messages[0].content, std::string("2+2="));
    QCOMPARE(file.examples[0].messages[1].role, std::string("assistant"));
    QCOMPARE(file.examples[0].messages[1].content, std::string("4"));
}

void TestDataset::readsText()
{
    // A UTF-8 byte order mark is skipped; non-ASCII text is kept as is.
    const std::string path = writeText(m_dir, "text.jsonl",
                                       "\xEF\xBB\xBF"
                                       R"({"text": "Once upon a time."})"
                                       "\n"
                                       R"({"text": "Caf\u00e9 – naïve"})"
                                       "\n");
    const tb::ExampleFile file = tb::readExampleFile(path);
    QCOMPARE(file.format, ExampleFormat::Text);
    QCOMPARE(file.examples.size(), size_t(2));
    QVERIFY(file.examples[0].plainText);
    QCOMPARE(file.examples[0].messages.size(), size_t(1));
    QCOMPARE(file.examples[0].messages[0].content, std::string("Once upon a time."));
    QCOMPARE(file.examples[1].messages[0].content, std::string("Café – naïve"));
}

void TestDataset::rejectsBadRowsKeepsGood()
{
    const std::string path = writeText(m_dir, "mixed.jsonl",
                                       R"({"instruction": "A", "output": "a"})"
                                       "\n"
                                       R"({"instruction": "B", "output": )"
                                       "\n"
                                       R"(["instruction", "output"])"
                                       "\n"
                                       R"({"instruction": "C"})"
                                       "\n"
                                       R"({"instruction": 5, "output": "d"})"
                                       "\n"
                                       R"({"instruction": "E", "output": ""})"
                                       "\n"
                                       R"({"text": "a text row in an alpaca file"})"
                                       "\n"
                                       R"({"question": "?"})"
                                       "\n"
                                       R"({"instruction": "F", "input": 3, "output": "f"})"
                                       "\n"
                                       R"({"instruction": "G", "output": "g"})"
                                       "\n");
    const tb::ExampleFile file = tb::readExampleFile(path);
    QCOMPARE(file.format, ExampleFormat::Alpaca);
    QCOMPARE(file.examples.size(), size_t(2));
    QCOMPARE(file.examples[0].source, path + ":1");
    QCOMPARE(file.examples[1].source, path + ":10");
    QCOMPARE(file.examples[1].messages[0].content, std::string("G"));

    const std::vector<std::pair<int, std::string>> expected = {
        {2, "not valid JSON"},
        {3, "expected a JSON object, got an array"},
        {4, "missing field \"output\""},
        {5, "field \"instruction\" is a number, expected a string"},
        {6, "field \"output\" is empty"},
        {7, "looks like text"},
        {8, "missing field \"instruction\""},
        {9, "field \"input\" is a number, expected a string"},
    };
    QCOMPARE(file.rejected.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const tb::RejectedRow& row = file.rejected[i];
        QCOMPARE(row.location, path + ":" + std::to_string(expected[i].first));
        QVERIFY2(contains(row.reason, expected[i].second),
                 (row.location + ": " + row.reason).c_str());
    }
}

void TestDataset::rejectsNonUtf8Row()
{
    const std::string path = writeText(m_dir, "latin1.jsonl",
                                       "{\"text\": \"caf\xE9\"}\n"  // Latin-1 é
                                       "{\"text\": \"fine\"}\n"
                                       "{\"text\": \"\xED\xA0\x80 surrogate\"}\n");
    const tb::ExampleFile file = tb::readExampleFile(path);
    QCOMPARE(file.examples.size(), size_t(1));
    QCOMPARE(file.examples[0].messages[0].content, std::string("fine"));
    QCOMPARE(file.rejected.size(), size_t(2));
    QCOMPARE(file.rejected[0].location, path + ":1");
    QVERIFY2(contains(file.rejected[0].reason, "not valid UTF-8"), file.rejected[0].reason.c_str());
    QVERIFY2(contains(file.rejected[0].reason, "byte 0xE9 at column 14"),
             file.rejected[0].reason.c_str());
    QCOMPARE(file.rejected[1].location, path + ":3");
    QVERIFY(contains(file.rejected[1].reason, "UTF-8"));
}

void TestDataset::explicitFormat()
{
    const std::string path = writeText(m_dir, "pc2.jsonl",
                                       R"({"prompt": "p", "completion": "c", "text": "t"})"
                                       "\n");
    const tb::ExampleFile asText = tb::readExampleFile(path, ExampleFormat::Text);
    QCOMPARE(asText.format, ExampleFormat::Text);
    QCOMPARE(asText.examples.size(), size_t(1));
    QCOMPARE(asText.examples[0].messages[0].content, std::string("t"));
    // Every row rejected: an error naming the file, the line and the first reason.
    const std::string error = readError(path, ExampleFormat::Messages);
    QVERIFY2(contains(error, path + ":1: missing field \"messages\""), error.c_str());
}

void TestDataset::fileErrors()
{
    const std::string array = writeText(m_dir, "array.jsonl",
                                        "  [\n"
                                        R"({"instruction": "A", "output": "a"})"
                                        "\n]\n");
    std::string error = readError(array);
    QVERIFY2(contains(error, array) && contains(error, "JSON array") && contains(error, "JSONL") &&
                 contains(error, "one object per line"),
             error.c_str());

    const std::string empty = writeText(m_dir, "empty.jsonl", "");
    error = readError(empty);
    QVERIFY2(contains(error, empty + ": file is empty"), error.c_str());
    const std::string blank = writeText(m_dir, "blank.jsonl", "\n  \n\r\n");
    error = readError(blank);
    QVERIFY2(contains(error, blank + ": file is empty"), error.c_str());

    const std::string missing = m_dir.filePath(QStringLiteral("missing.jsonl")).toStdString();
    QCOMPARE(readError(missing), missing + ": cannot open (No such file or directory)");
    const std::string dir = m_dir.path().toStdString();
    QCOMPARE(readError(dir), dir + ": is a directory, not a file");

    const std::string bad = writeText(m_dir, "bad.jsonl", "{oops\n42\n");
    error = readError(bad);
    QVERIFY2(contains(error, bad + ":1: not valid JSON") &&
                 contains(error, "nothing imported; 1 more row rejected"),
             error.c_str());
}

void TestDataset::tokenizePlainMasksResponse()
{
    const tb::Tokenizer& tok = *m_tok;
    const std::string prompt = "Tell me about Lily and the cat.";
    const std::string response = "Lily had a little cat. They played all day.";
    tb::TokenizeOptions options;  // Plain, loss on responses, EOS
    const TokenizedExample t = tb::tokenizeExample(tok, chat(prompt, response), options);

    // Plain renders "prompt\n" then the response; each piece is encoded on its own.
    const std::vector<int32_t> promptIds = tok.encode(prompt + "\n", false);
    const std::vector<int32_t> responseIds = tok.encode(response, false);
    const int32_t bos = *tok.bosId(), eos = *tok.eosId();
    QCOMPARE(t.ids, concat({{bos}, promptIds, responseIds, {eos}}));
    QCOMPARE(t.lossMask.size(), t.ids.size());
    QVERIFY(!t.truncated);
    std::vector<int32_t> masked;
    for (size_t i = 0; i < t.ids.size(); ++i) {
        const bool inResponse = i > promptIds.size();
        QCOMPARE(int(t.lossMask[i]), inResponse ? 1 : 0);
        if (t.lossMask[i])
            masked.push_back(t.ids[i]);
    }
    QCOMPARE(masked.back(), eos);
    QCOMPARE(tok.decode(masked), response);
    // The whole example decodes back to the rendered text (a space where a segment starts).
    QCOMPARE(tok.decode(t.ids), prompt + "\n " + response);
}

void TestDataset::tokenizeAlpacaTemplate()
{
    const tb::Tokenizer& tok = *m_tok;
    tb::TokenizeOptions options;
    options.family = ChatTemplateFamily::Alpaca;
    const TokenizedExample t = tb::tokenizeExample(tok, chat("Say hi.", "Hi, Tim!"), options);
    const std::vector<int32_t> promptIds =
        tok.encode("### Instruction:\nSay hi.\n\n### Response:\n", false);
    const std::vector<int32_t> responseIds = tok.encode("Hi, Tim!", false);
    QCOMPARE(t.ids, concat({{*tok.bosId()}, promptIds, responseIds, {*tok.eosId()}}));
    const auto lossCount = std::count(t.lossMask.begin(), t.lossMask.end(), uint8_t(1));
    QCOMPARE(size_t(lossCount), responseIds.size() + 1);
    QCOMPARE(int(t.lossMask[promptIds.size()]), 0);
    QCOMPARE(int(t.lossMask[promptIds.size() + 1]), 1);
}

void TestDataset::tokenizeMultiTurn()
{
    const tb::Tokenizer& tok = *m_tok;
    Example ex;
    ex.messages = {
        {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}, {"assistant", "See you"}};
    const TokenizedExample t = tb::tokenizeExample(tok, ex, tb::TokenizeOptions{});
    const int32_t bos = *tok.bosId(), eos = *tok.eosId();
    const auto a1 = tok.encode("Hello", false), a2 = tok.encode("See you", false);
    const auto u1 = tok.encode("Hi\n", false), u2 = tok.encode("\nBye\n", false);
    QCOMPARE(t.ids, concat({{bos}, u1, a1, {eos}, u2, a2, {eos}}));
    std::vector<uint8_t> mask;
    mask.insert(mask.end(), 1 + u1.size(), 0);
    mask.insert(mask.end(), a1.size() + 1, 1);
    mask.insert(mask.end(), u2.size(), 0);
    mask.insert(mask.end(), a2.size() + 1, 1);
    QCOMPARE(t.lossMask, mask);
}

void TestDataset::tokenizeAllLossAndNoEos()
{
    const tb::Tokenizer& tok = *m_tok;
    tb::TokenizeOptions options;
    options.lossOnResponsesOnly = false;
    const Example ex = chat("Tell me a story.", "Once upon a time.");
    const TokenizedExample all = tb::tokenizeExample(tok, ex, options);
    QCOMPARE(all.ids.front(), *tok.bosId());
    QCOMPARE(int(all.lossMask[0]), 0);  // BOS is never predicted
    for (size_t i = 1; i < all.lossMask.size(); ++i)
        QCOMPARE(int(all.lossMask[i]), 1);

    options.addEos = false;
    const TokenizedExample noEos = tb::tokenizeExample(tok, ex, options);
    QCOMPARE(noEos.ids.size() + 1, all.ids.size());
    QVERIFY(std::equal(noEos.ids.begin(), noEos.ids.end(), all.ids.begin()));
    QVERIFY(std::find(noEos.ids.begin(), noEos.ids.end(), *tok.eosId()) == noEos.ids.end());
}

void TestDataset::tokenizePlainText()
{
    const tb::Tokenizer& tok = *m_tok;
    Example ex;
    ex.messages = {{"assistant", "The dog ran to the park."}};
    ex.plainText = true;
    tb::TokenizeOptions options;
    options.family = ChatTemplateFamily::ChatML;  // ignored for plain text
    const TokenizedExample t = tb::tokenizeExample(tok, ex, options);
    const std::vector<int32_t> textIds = tok.encode("The dog ran to the park.", false);
    QCOMPARE(t.ids, concat({{*tok.bosId()}, textIds, {*tok.eosId()}}));
    QCOMPARE(int(t.lossMask[0]), 0);
    QCOMPARE(size_t(std::count(t.lossMask.begin(), t.lossMask.end(), uint8_t(1))),
             t.ids.size() - 1);
    QCOMPARE(tok.decode(t.ids), std::string("The dog ran to the park."));
}

void TestDataset::truncation()
{
    tb::TokenizeOptions options;
    options.maxLength = 5;
    const Example ex = chat("Tell me about Lily and the cat.", "Lily had a little cat.");
    const TokenizedExample cut = tb::tokenizeExample(*m_tok, ex, options);
    QCOMPARE(cut.ids.size(), size_t(5));
    QCOMPARE(cut.lossMask.size(), size_t(5));
    QVERIFY(cut.truncated);
    options.maxLength = 256;
    const TokenizedExample whole = tb::tokenizeExample(*m_tok, ex, options);
    QVERIFY(!whole.truncated);
    QVERIFY(std::equal(cut.ids.begin(), cut.ids.end(), whole.ids.begin()));

    const tb::SequenceSet set = tb::buildSequences({cut, whole}, 256, false);
    QCOMPARE(set.examples, int64_t(2));
    QCOMPARE(set.truncated, int64_t(1));
    // buildSequences also cuts (and counts) what is longer than its own maxLength.
    const tb::SequenceSet cut2 = tb::buildSequences({whole}, 4, false);
    QCOMPARE(cut2.truncated, int64_t(1));
    QCOMPARE(cut2.sequences[0].length, 4);
}

void TestDataset::sequencesShiftLabels()
{
    // ex1: BOS, a two-token prompt, a two-token response and EOS; ex2: all loss, no BOS.
    const TokenizedExample ex1 = tokenized({1, 10, 11, 12, 2}, {0, 0, 1, 1, 1});
    const TokenizedExample ex2 = tokenized({20, 21, 22}, {1, 1, 1});
    const tb::SequenceSet set = tb::buildSequences({ex1, ex2}, 8, false);
    QCOMPARE(set.sequences.size(), size_t(2));
    QCOMPARE(set.sequences[0].ids, (std::vector<int32_t>{1, 10, 11, 12, 2}));
    QCOMPARE(set.sequences[0].labels, (std::vector<int32_t>{-100, 11, 12, 2, -100}));
    QCOMPARE(set.sequences[0].length, 5);
    QCOMPARE(set.sequences[1].labels, (std::vector<int32_t>{21, 22, -100}));
    QCOMPARE(set.examples, int64_t(2));
    QCOMPARE(set.truncated, int64_t(0));
    QCOMPARE(set.tokens, int64_t(8));
    QCOMPARE(set.lossTokens, int64_t(5));

    const tb::SequenceSet cut = tb::buildSequences({ex1}, 3, false);
    QCOMPARE(cut.sequences[0].ids, (std::vector<int32_t>{1, 10, 11}));
    QCOMPARE(cut.sequences[0].labels, (std::vector<int32_t>{-100, 11, -100}));
    QCOMPARE(cut.truncated, int64_t(1));
    QCOMPARE(cut.lossTokens, int64_t(1));
}

void TestDataset::packingBoundaries()
{
    const TokenizedExample ex1 = tokenized({1, 10, 11, 12, 2}, {0, 0, 1, 1, 1});
    const TokenizedExample ex2 = tokenized({20, 21, 22}, {1, 1, 1});
    // One bin of 8: the longer ex1 first, then ex2, each with its own labels; an example's last
    // token predicts nothing (2 -> 20 crosses examples).
    const tb::SequenceSet set = tb::buildSequences({ex1, ex2}, 8, true);
    QCOMPARE(set.sequences.size(), size_t(1));
    QCOMPARE(set.sequences[0].ids, (std::vector<int32_t>{1, 10, 11, 12, 2, 20, 21, 22}));
    QCOMPARE(set.sequences[0].labels, (std::vector<int32_t>{-100, 11, 12, 2, -100, 21, 22, -100}));
    QCOMPARE(set.sequences[0].starts, (std::vector<int32_t>{0, 5}));
    QCOMPARE(set.sequences[0].examples, (std::vector<int64_t>{0, 1}));
    QCOMPARE(set.sequences[0].length, 8);
    QCOMPARE(set.examples, int64_t(2));
    QCOMPARE(set.tokens, int64_t(8));
    QCOMPARE(set.lossTokens, int64_t(5));
    QCOMPARE(set.tokenSlots, int64_t(8));

    // Bins of 4: no example is split across bins; ex1 is cut to 4 tokens (and counted).
    const tb::SequenceSet cut = tb::buildSequences({ex1, ex2}, 4, true);
    QCOMPARE(cut.sequences.size(), size_t(2));
    QCOMPARE(cut.sequences[0].ids, (std::vector<int32_t>{1, 10, 11, 12}));
    QCOMPARE(cut.sequences[0].labels, (std::vector<int32_t>{-100, 11, 12, -100}));
    QCOMPARE(cut.sequences[1].ids, (std::vector<int32_t>{20, 21, 22}));
    QCOMPARE(cut.truncated, int64_t(1));
    QCOMPARE(cut.tokenSlots, int64_t(8));

    TokenizedExample truncated = ex2;
    truncated.truncated = true;
    QCOMPARE(tb::buildSequences({ex1, truncated}, 8, true).truncated, int64_t(1));
}

void TestDataset::batchPadding()
{
    const TokenizedExample ex1 = tokenized({1, 10, 11, 12, 2}, {0, 0, 1, 1, 1});
    const TokenizedExample ex2 = tokenized({20, 21, 22}, {1, 1, 1});
    const tb::SequenceSet set = tb::buildSequences({ex1, ex2}, 8, false);
    const tb::TokenBatch batch = tb::makeBatch(set, {1, 0}, 0);
    QCOMPARE(batch.rows, int64_t(2));
    QCOMPARE(batch.width, int64_t(5));
    QCOMPARE(batch.ids, (std::vector<int64_t>{20, 21, 22, 0, 0, 1, 10, 11, 12, 2}));
    QCOMPARE(batch.labels, (std::vector<int64_t>{21, 22, -100, -100, -100, -100, 11, 12, 2, -100}));
    QCOMPARE(batch.lossTokens, int64_t(5));

    const tb::TokenBatch one = tb::makeBatch(set, {1}, 7);
    QCOMPARE(one.width, int64_t(3));
    QCOMPARE(one.ids, (std::vector<int64_t>{20, 21, 22}));
    bool threw = false;
    try {
        tb::makeBatch(set, {2}, 0);
    } catch (const tb::Error& e) {
        threw = contains(e.what(), "out of range");
    }
    QVERIFY(threw);
}

void TestDataset::epochOrderDeterministic()
{
    const std::vector<int64_t> a = tb::epochOrder(100, 42, 0);
    QCOMPARE(tb::epochOrder(100, 42, 0), a);
    QVERIFY(tb::epochOrder(100, 43, 0) != a);
    QVERIFY(tb::epochOrder(100, 42, 1) != a);
    std::vector<int64_t> sorted = a, iota(100);
    std::sort(sorted.begin(), sorted.end());
    std::iota(iota.begin(), iota.end(), 0);
    QCOMPARE(sorted, iota);
    QVERIFY(a != iota);
    QVERIFY(tb::epochOrder(0, 1, 0).empty());
    QCOMPARE(tb::epochOrder(1, 1, 0), (std::vector<int64_t>{0}));
    // Golden orders from an independent Python splitmix64 + Fisher-Yates: the same on every
    // platform and compiler.
    QCOMPARE(tb::epochOrder(10, 42, 0), (std::vector<int64_t>{8, 1, 9, 0, 5, 7, 6, 4, 2, 3}));
    QCOMPARE(tb::epochOrder(10, 42, 1), (std::vector<int64_t>{9, 0, 6, 1, 5, 7, 8, 2, 4, 3}));
    QCOMPARE(tb::epochOrder(10, 7, 0), (std::vector<int64_t>{0, 9, 6, 1, 4, 5, 7, 2, 8, 3}));
}

void TestDataset::bundledDatasets()
{
    const tb::ExampleFile train = tb::readExampleFile(kTiny + "/train.jsonl");
    const tb::ExampleFile val = tb::readExampleFile(kTiny + "/val.jsonl");
    const tb::ExampleFile text = tb::readExampleFile(kTiny + "/text.jsonl");
    QVERIFY(train.rejected.empty());
    QVERIFY(val.rejected.empty());
    QVERIFY(text.rejected.empty());
    QCOMPARE(train.format, ExampleFormat::Alpaca);
    QCOMPARE(val.format, ExampleFormat::Alpaca);
    QCOMPARE(text.format, ExampleFormat::Text);
    QVERIFY(train.examples.size() >= 400 && train.examples.size() <= 600);
    QVERIFY(val.examples.size() >= 60 && val.examples.size() <= 100);
    QVERIFY(text.examples.size() >= 40);

    // Validation prompts never occur in training (held-out combinations).
    std::set<std::string> trainPrompts;
    for (const Example& ex : train.examples)
        trainPrompts.insert(ex.messages[0].content);
    for (const Example& ex : val.examples)
        QVERIFY2(!trainPrompts.count(ex.messages[0].content), ex.source.c_str());

    // Short enough to learn in seconds: under 64 tokens in the plain template; the alpaca
    // template (whose "### Instruction:" headers the 512-piece vocabulary spells byte by byte)
    // adds about 26 and must still fit datasets/examples/*.json's max_length of 96 uncut.
    const std::pair<ChatTemplateFamily, size_t> limits[] = {{ChatTemplateFamily::Plain, 64},
                                                            {ChatTemplateFamily::Alpaca, 96}};
    for (const auto& [family, limit] : limits) {
        tb::TokenizeOptions options;
        options.family = family;
        size_t longest = 0;
        for (const tb::ExampleFile* file : {&train, &val, &text})
            for (const Example& ex : file->examples) {
                const TokenizedExample t = tb::tokenizeExample(*m_tok, ex, options);
                QVERIFY2(t.ids.size() < limit, ex.source.c_str());
                longest = std::max(longest, t.ids.size());
            }
        qInfo("longest bundled example with the %s template: %zu tokens",
              tb::chatTemplateName(family), longest);
    }
}

// Evaluation's batches: consecutive runs of batch-size sequences, loss-free ones skipped, and a
// token cap that stops adding sequences once reached.
void TestDataset::evalBatches()
{
    tb::SequenceSet set;
    for (int i = 0; i < 5; ++i) {
        tb::Sequence s;
        s.ids = {1, 2, 3, 4};
        s.labels = i == 2 ? std::vector<int32_t>(4, -100)
                          : std::vector<int32_t>{-100, 5, 6, 7};  // #2: no loss
        s.length = 4;
        set.sequences.push_back(s);
    }
    std::vector<int64_t> rows, losses;
    auto record = [&](const tb::TokenBatch& b) {
        rows.push_back(b.rows);
        losses.push_back(b.lossTokens);
    };
    tb::forEachEvalBatch(set, 2, 0, -1, record);
    QCOMPARE(rows, (std::vector<int64_t>{2, 2, 1}));  // [0 1] [2 3] [4]
    QCOMPARE(losses, (std::vector<int64_t>{6, 3, 3}));
    rows.clear();
    losses.clear();
    tb::forEachEvalBatch(set, 1, 0, -1, record);
    QCOMPARE(rows.size(), size_t(4));  // the loss-free sequence alone is skipped
    rows.clear();
    losses.clear();
    tb::forEachEvalBatch(set, 4, 0, 5, record);  // 3 planned after #0, 6 after #1: stop there
    QCOMPARE(rows, (std::vector<int64_t>{2}));
    QCOMPARE(losses, (std::vector<int64_t>{6}));
}

QTEST_GUILESS_MAIN(TestDataset)
#include "test_dataset.moc"
