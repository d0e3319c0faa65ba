// Preference pairs read from rows: TRL's standard layout (plain text and conversational),
// HH-RLHF (message lists and Anthropic's text form), UltraFeedback-binarised, auto detection,
// every bad-row reason, the pairToJson round trip, and pair files (JSONL and .json arrays).
#include "data/pairs.h"
#include "util/error.h"

#include <QtTest>

#include "test_util.h"

using nlohmann::json;
using tbtest::contains;
using tbtest::errorOf;

namespace {

json msg(const char* role, const char* content)
{
    return {{"role", role}, {"content", content}};
}

std::string reasonOf(const json& row, tb::PairLayout layout = tb::PairLayout::Auto)
{
    return errorOf([&] { tb::parsePairRow(row, layout); });
}

std::string roles(const std::vector<tb::ChatMessage>& messages)
{
    std::string out;
    for (const auto& m : messages)
        out += (out.empty() ? "" : ",") + m.role + ":" + m.content;
    return out;
}

}  // namespace

class TestPairs : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void layoutNames();
    void standardPlainText();
    void standardConversational();
    void hhRlhfMessageLists();
    void hhRlhfAnthropicText();
    void ultraFeedback();
    void margin();
    void badRows_data();
    void badRows();
    void roundTrip();
    void pairTextJoins();
    void jsonlFile();
    void jsonArrayFile();
    void fileErrors();
};

void TestPairs::layoutNames()
{
    for (auto l : {tb::PairLayout::Auto, tb::PairLayout::Standard, tb::PairLayout::HhRlhf,
                   tb::PairLayout::UltraFeedback})
        QCOMPARE(*tb::parsePairLayout(tb::pairLayoutName(l)), l);
    QVERIFY(!tb::parsePairLayout("dpo"));
}

void TestPairs::standardPlainText()
{
    const auto p =
        tb::parsePairRow({{"prompt", "The sky is"}, {"chosen", " blue."}, {"rejected", " green."}});
    QCOMPARE(p.layout, tb::PairLayout::Standard);
    QVERIFY(p.plainText);
    QCOMPARE(p.promptText, std::string("The sky is"));
    QCOMPARE(p.chosenText, std::string(" blue."));
    QCOMPARE(p.rejectedText, std::string(" green."));
    QVERIFY(p.prompt.empty() && p.chosen.empty());
    QVERIFY(!p.scoreChosen && !p.margin);
}

void TestPairs::standardConversational()
{
    const json row = {{"prompt", {msg("system", "Be brief."), msg("user", "Sky colour?")}},
                      {"chosen", {msg("assistant", "Blue.")}},
                      {"rejected", {msg("assistant", "Green.")}}};
    const auto p = tb::parsePairRow(row);
    QCOMPARE(p.layout, tb::PairLayout::Standard);
    QVERIFY(!p.plainText);
    QCOMPARE(roles(p.prompt), std::string("system:Be brief.,user:Sky colour?"));
    QCOMPARE(roles(p.chosen), std::string("assistant:Blue."));
    QCOMPARE(roles(p.rejected), std::string("assistant:Green."));
    // Forced layouts read the same row the same way.
    QCOMPARE(roles(tb::parsePairRow(row, tb::PairLayout::Standard).prompt), roles(p.prompt));
}

void TestPairs::hhRlhfMessageLists()
{
    const json row = {{"chosen",
                       {msg("user", "Hi"), msg("assistant", "Hello"), msg("user", "Sky?"),
                        msg("assistant", "Blue.")}},
                      {"rejected",
                       {msg("user", "Hi"), msg("assistant", "Hello"), msg("user", "Sky?"),
                        msg("assistant", "Go away.")}}};
    const auto p = tb::parsePairRow(row);
    QCOMPARE(p.layout, tb::PairLayout::HhRlhf);
    QCOMPARE(roles(p.prompt), std::string("user:Hi,assistant:Hello,user:Sky?"));
    QCOMPARE(roles(p.chosen), std::string("assistant:Blue."));
    QCOMPARE(roles(p.rejected), std::string("assistant:Go away."));
}

void TestPairs::hhRlhfAnthropicText()
{
    const json row = {
        {"chosen", "\n\nHuman: Hi\n\nAssistant: Hello\n\nHuman: Sky?\n\nAssistant: Blue."},
        {"rejected", "\n\nHuman: Hi\n\nAssistant: Hello\n\nHuman: Sky?\n\nAssistant: Green."}};
    const auto p = tb::parsePairRow(row, tb::PairLayout::HhRlhf);
    QCOMPARE(roles(p.prompt), std::string("user:Hi,assistant:Hello,user:Sky?"));
    QCOMPARE(roles(p.chosen), std::string("assistant:Blue."));
    QCOMPARE(roles(p.rejected), std::string("assistant:Green."));
    QVERIFY(!p.plainText);
    // Multi-line turns stay whole.
    const auto q = tb::parsePairRow({{"chosen", "\n\nHuman: a\nb\n\nAssistant: c\nd"},
                                     {"rejected", "\n\nHuman: a\nb\n\nAssistant: e"}});
    QCOMPARE(roles(q.prompt), std::string("user:a\nb"));
    QCOMPARE(roles(q.chosen), std::string("assistant:c\nd"));
}

void TestPairs::ultraFeedback()
{
    const json row = {{"prompt", "Sky colour?"},
                      {"chosen", {msg("user", "Sky colour?"), msg("assistant", "Blue.")}},
                      {"rejected", {msg("user", "Sky colour?"), msg("assistant", "Red.")}},
                      {"score_chosen", 8.5},
                      {"score_rejected", 3}};
    const auto p = tb::parsePairRow(row);
    QCOMPARE(p.layout, tb::PairLayout::UltraFeedback);
    QCOMPARE(roles(p.prompt), std::string("user:Sky colour?"));
    QCOMPARE(roles(p.chosen), std::string("assistant:Blue."));
    QCOMPARE(*p.scoreChosen, 8.5);
    QCOMPARE(*p.scoreRejected, 3.0);
    json noPrompt = row;
    noPrompt.erase("prompt");
    QCOMPARE(tb::parsePairRow(noPrompt).layout, tb::PairLayout::UltraFeedback);
}

void TestPairs::margin()
{
    const auto p =
        tb::parsePairRow({{"prompt", "p"}, {"chosen", "a"}, {"rejected", "b"}, {"margin", 1.25}});
    QCOMPARE(*p.margin, 1.25);
}

void TestPairs::badRows_data()
{
    QTest::addColumn<QString>("row");
    QTest::addColumn<int>("layout");
    QTest::addColumn<QString>("reason");
    const int autoL = int(tb::PairLayout::Auto);
    const auto add = [](const char* name, json row, int layout, const char* reason) {
        QTest::newRow(name) << QString::fromStdString(row.dump()) << layout
                            << QString::fromUtf8(reason);
    };
    const json u = msg("user", "q"), a1 = msg("assistant", "x"), a2 = msg("assistant", "y");
    add("not an object", json::array(), autoL, "not a JSON object");
    add("missing chosen", {{"prompt", "p"}, {"rejected", "b"}}, autoL, "missing key \"chosen\"");
    add("missing rejected hh", {{"chosen", {u, a1}}}, autoL, "missing key \"rejected\"");
    add("missing prompt standard", {{"chosen", "a"}, {"rejected", "b"}},
        int(tb::PairLayout::Standard), "missing key \"prompt\"");
    add("missing score", {{"chosen", {u, a1}}, {"rejected", {u, a2}}, {"score_chosen", 1}}, autoL,
        "missing key \"score_rejected\"");
    add("mistyped chosen", {{"prompt", "p"}, {"chosen", 3}, {"rejected", "b"}}, autoL,
        "\"chosen\" is a number");
    add("mixed standard", {{"prompt", {u}}, {"chosen", "a"}, {"rejected", "b"}}, autoL,
        "\"chosen\" is a string, not a message list");
    add("mistyped score",
        {{"chosen", {u, a1}}, {"rejected", {u, a2}}, {"score_chosen", "9"}, {"score_rejected", 1}},
        autoL, "\"score_chosen\" is a string, not a number");
    add("mistyped margin", {{"prompt", "p"}, {"chosen", "a"}, {"rejected", "b"}, {"margin", "1"}},
        autoL, "\"margin\" is a string, not a number");
    add("message without role",
        {{"prompt", {{{"content", "q"}}}}, {"chosen", {a1}}, {"rejected", {a2}}}, autoL,
        "\"prompt\" message 1 has no string \"role\"");
    add("message without content",
        {{"prompt", {u}}, {"chosen", {{{"role", "assistant"}}}}, {"rejected", {a2}}}, autoL,
        "\"chosen\" message 1 has no string \"content\"");
    add("message not object", {{"chosen", {u, "x"}}, {"rejected", {u, a2}}}, autoL,
        "\"chosen\" message 2 is a string, not an object");
    add("unknown role", {{"prompt", {msg("human", "q")}}, {"chosen", {a1}}, {"rejected", {a2}}},
        autoL, "unknown role \"human\"");
    add("prompt ends with assistant", {{"prompt", {u, a1}}, {"chosen", {a2}}, {"rejected", {a1}}},
        autoL, "\"prompt\" ends with a turn of role assistant");
    add("answer not assistant", {{"prompt", {u}}, {"chosen", {u}}, {"rejected", {a2}}}, autoL,
        "\"chosen\" message 1 is a user turn");
    add("empty prompt text", {{"prompt", " "}, {"chosen", "a"}, {"rejected", "b"}}, autoL,
        "empty prompt");
    add("empty prompt list", {{"prompt", json::array()}, {"chosen", {a1}}, {"rejected", {a2}}},
        autoL, "empty prompt");
    add("empty chosen", {{"prompt", "p"}, {"chosen", ""}, {"rejected", "b"}}, autoL,
        "empty chosen answer");
    add("empty rejected list", {{"prompt", {u}}, {"chosen", {a1}}, {"rejected", json::array()}},
        autoL, "empty rejected answer");
    add("empty hh answer",
        {{"chosen", "\n\nHuman: q\n\nAssistant: x"}, {"rejected", "\n\nHuman: q\n\nAssistant:"}},
        autoL, "empty rejected answer");
    add("identical text", {{"prompt", "p"}, {"chosen", "same"}, {"rejected", "same"}}, autoL,
        "chosen is identical to rejected");
    add("identical hh", {{"chosen", {u, a1}}, {"rejected", {u, a1}}}, autoL,
        "chosen is identical to rejected");
    add("no shared prompt", {{"chosen", {u, a1}}, {"rejected", {msg("user", "other"), a2}}}, autoL,
        "no shared prompt: \"chosen\" and \"rejected\" differ at turn 1");
    add("split not last assistant",
        {{"chosen", {u, a1, msg("user", "r"), a2}}, {"rejected", {u, a2}}}, autoL,
        "no shared prompt");
    add("hh ends with user", {{"chosen", {u, a1, u}}, {"rejected", {u, a2}}}, autoL,
        "\"chosen\" does not end with an assistant turn");
    add("hh empty conversation", {{"chosen", json::array()}, {"rejected", {u, a2}}}, autoL,
        "\"chosen\" is an empty conversation");
    add("hh text without marker",
        {{"chosen", "Hi there"}, {"rejected", "\n\nHuman: q\n\nAssistant: y"}}, autoL,
        "\"chosen\" does not start with \"\\n\\nHuman:\"");
    add("hh mistyped", {{"chosen", 1}, {"rejected", {u, a2}}}, autoL,
        "\"chosen\" is a number, not a conversation");
    add("ultrafeedback prompt mismatch",
        {{"prompt", "other"},
         {"chosen", {u, a1}},
         {"rejected", {u, a2}},
         {"score_chosen", 2},
         {"score_rejected", 1}},
        autoL, "\"prompt\" does not match the last user turn");
    add("ultrafeedback prompt mistyped",
        {{"prompt", 5},
         {"chosen", {u, a1}},
         {"rejected", {u, a2}},
         {"score_chosen", 2},
         {"score_rejected", 1}},
        int(tb::PairLayout::UltraFeedback), "\"prompt\" is a number, not a string");
    add("ultrafeedback strings",
        {{"chosen", "a"}, {"rejected", "b"}, {"score_chosen", 2}, {"score_rejected", 1}}, autoL,
        "\"chosen\" is a string, not a message list");
}

void TestPairs::badRows()
{
    QFETCH(QString, row);
    QFETCH(int, layout);
    QFETCH(QString, reason);
    const std::string got = reasonOf(json::parse(row.toStdString()), tb::PairLayout(layout));
    QVERIFY2(contains(got, reason.toStdString()), got.c_str());
}

void TestPairs::roundTrip()
{
    const json u = msg("user", "q"), a1 = msg("assistant", "x"), a2 = msg("assistant", "y");
    const std::vector<json> rows = {
        {{"prompt", "p"}, {"chosen", "a"}, {"rejected", "b"}, {"margin", 0.5}},
        {{"prompt", {msg("system", "s"), u}}, {"chosen", {a1, a2}}, {"rejected", {a2}}},
        {{"chosen", "\n\nHuman: q\n\nAssistant: x"}, {"rejected", "\n\nHuman: q\n\nAssistant: y"}},
        {{"prompt", "q"},
         {"chosen", {u, a1}},
         {"rejected", {u, a2}},
         {"score_chosen", 7},
         {"score_rejected", 2.5}}};
    for (const json& row : rows) {
        const auto p = tb::parsePairRow(row);
        const json written = tb::pairToJson(p);
        QVERIFY(written.contains("prompt") && written.contains("chosen"));
        const auto back = tb::parsePairRow(written);
        QCOMPARE(back.layout, tb::PairLayout::Standard);
        QCOMPARE(tb::pairToJson(back).dump(), written.dump());
        QCOMPARE(back.plainText, p.plainText);
        QCOMPARE(roles(back.prompt), roles(p.prompt));
        QCOMPARE(roles(back.chosen), roles(p.chosen));
        QCOMPARE(roles(back.rejected), roles(p.rejected));
        QCOMPARE(back.scoreChosen, p.scoreChosen);
        QCOMPARE(back.margin, p.margin);
    }
    const json uf = tb::pairToJson(tb::parsePairRow(rows[3]));
    QCOMPARE(uf["score_chosen"].get<double>(), 7.0);
    QCOMPARE(uf["score_rejected"].get<double>(), 2.5);
}

void TestPairs::pairTextJoins()
{
    QCOMPARE(tb::pairText(tb::parsePairRow({{"prompt", "p"}, {"chosen", "a"}, {"rejected", "b"}})),
             std::string("p\na\nb"));
    const auto p = tb::parsePairRow({{"prompt", {msg("system", "s"), msg("user", "q")}},
                                     {"chosen", {msg("assistant", "x")}},
                                     {"rejected", {msg("assistant", "y")}}});
    QCOMPARE(tb::pairText(p), std::string("s\nq\nx\ny"));
}

void TestPairs::jsonlFile()
{
    QTemporaryDir dir;
    const std::string path = tbtest::writeText(
        dir, "pairs.jsonl",
        "{\"prompt\": \"p\", \"chosen\": \"a\", \"rejected\": \"b\"}\n"
        "\n"
        "not json\n"
        "{\"prompt\": \"p\", \"chosen\": \"a\", \"rejected\": \"a\"}\r\n"
        "{\"chosen\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", "
        "\"content\": \"x\"}], \"rejected\": [{\"role\": \"user\", \"content\": \"q\"}, "
        "{\"role\": \"assistant\", \"content\": \"y\"}]}");
    const tb::PairFile f = tb::readPairFile(path);
    QCOMPARE(f.pairs.size(), size_t(2));
    QCOMPARE(f.pairs[0].source, path + ":1");
    QCOMPARE(f.pairs[1].source, path + ":5");
    QCOMPARE(f.pairs[1].layout, tb::PairLayout::HhRlhf);
    QCOMPARE(f.rejected.size(), size_t(2));
    QCOMPARE(f.rejected[0].location, path + ":3");
    QVERIFY(contains(f.rejected[0].reason, "not JSON"));
    QCOMPARE(f.rejected[1].location, path + ":4");
    QCOMPARE(f.rejected[1].reason, std::string("chosen is identical to rejected"));
    // A forced layout applies to every row.
    const tb::PairFile s = tb::readPairFile(path, tb::PairLayout::Standard);
    QCOMPARE(s.pairs.size(), size_t(1));
    QCOMPARE(s.rejected.back().location, path + ":5");
    QVERIFY(contains(s.rejected.back().reason, "missing key \"prompt\""));
}

void TestPairs::jsonArrayFile()
{
    QTemporaryDir dir;
    const std::string path =
        tbtest::writeText(dir, "pairs.json",
                          "[\n  {\"prompt\": \"p, [x]\", \"chosen\": \"a\", \"rejected\": \"b\"},\n"
                          "  {\"prompt\": \"p\",\n   \"chosen\": \"a\"},\n"
                          "\n  {\"prompt\": \"q\", \"chosen\": \"c\", \"rejected\": \"d\"}\n]\n");
    const tb::PairFile f = tb::readPairFile(path);
    QCOMPARE(f.pairs.size(), size_t(2));
    QCOMPARE(f.pairs[0].source, path + ":2");
    QCOMPARE(f.pairs[1].source, path + ":6");
    QCOMPARE(f.rejected.size(), size_t(1));
    QCOMPARE(f.rejected[0].location, path + ":3");
    QVERIFY(contains(f.rejected[0].reason, "missing key \"rejected\""));
}

void TestPairs::fileErrors()
{
    QTemporaryDir dir;
    const std::string missing = dir.filePath("none.jsonl").toStdString();
    QVERIFY(contains(errorOf([&] { tb::readPairFile(missing); }), missing));
    const std::string empty = tbtest::writeText(dir, "empty.jsonl", "\n \n");
    QVERIFY(contains(errorOf([&] { tb::readPairFile(empty); }), empty + ": the file is empty"));
    const std::string bad = tbtest::writeText(dir, "bad.jsonl", "{\"prompt\": \"p\"}\n");
    const std::string e = errorOf([&] { tb::readPairFile(bad); });
    QVERIFY2(contains(e, bad + ": no valid preference pair") &&
                 contains(e, bad + ":1: missing key \"chosen\""),
             e.c_str());
    const std::string obj = tbtest::writeText(dir, "obj.json", "{\"prompt\": \"p\"}");
    QVERIFY(contains(errorOf([&] { tb::readPairFile(obj); }), "must hold a JSON array"));
    const std::string broken = tbtest::writeText(dir, "broken.json", "[{");
    QVERIFY(contains(errorOf([&] { tb::readPairFile(broken); }), broken + ": not JSON"));
}

QTEST_GUILESS_MAIN(TestPairs)
#include "test_pairs.moc"
