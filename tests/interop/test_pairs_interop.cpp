// Interop: our prompt split of HH-RLHF and UltraFeedback-binarised rows against TRL's own
// (trl.data_utils.extract_prompt and maybe_extract_prompt through tests/interop/pairs_oracle.py,
// one process for all rows). Conversational rows must split into the same turns; for
// Anthropic's text form TRL splits by characters, so its prompt must extend our prompt's text
// by the answers' common beginning, and prompt + answer must give back each conversation.
#include "data/pairs.h"

#include "interop/oracle_util.h"
#include "test_util.h"

#include <QtTest>

using nlohmann::json;

namespace {

json msg(const char* role, const std::string& content)
{
    return {{"role", role}, {"content", content}};
}

json messagesJson(const std::vector<tb::ChatMessage>& messages)
{
    json out = json::array();
    for (const auto& m : messages)
        out.push_back(msg(m.role.c_str(), m.content));
    return out;
}

// HH-RLHF and UltraFeedback rows: single and multi-turn, with a system turn, shared answers
// beginnings, unicode, a prompt key.
std::vector<json> rows()
{
    std::vector<json> out;
    const json u = msg("user", "What colour is the sky?");
    out.push_back({{"chosen", {u, msg("assistant", "It is blue.")}},
                   {"rejected", {u, msg("assistant", "It is green.")}}});
    out.push_back({{"chosen",
                    {msg("system", "Be kind."), msg("user", "Hi"), msg("assistant", "Hey"),
                     msg("user", "Why?"), msg("assistant", "Because.")}},
                   {"rejected",
                    {msg("system", "Be kind."), msg("user", "Hi"), msg("assistant", "Hey"),
                     msg("user", "Why?"), msg("assistant", "No idea, sorry.")}}});
    out.push_back({{"prompt", "Größe?"},
                   {"chosen", {msg("user", "Größe?"), msg("assistant", "Groß — 2 m.")}},
                   {"rejected", {msg("user", "Größe?"), msg("assistant", "Klein.")}},
                   {"score_chosen", 9.0},
                   {"score_rejected", 2.5}});
    out.push_back({{"chosen", {u, msg("assistant", "Blue")}},
                   {"rejected", {u, msg("assistant", "Grey")}},
                   {"score_chosen", 5},
                   {"score_rejected", 4}});
    out.push_back({{"chosen", "\n\nHuman: What is 2+2?\n\nAssistant: It is 4."},
                   {"rejected", "\n\nHuman: What is 2+2?\n\nAssistant: It is 5."}});
    out.push_back(
        {{"chosen", "\n\nHuman: Hi\n\nAssistant: Hello!\n\nHuman: Tell me a joke.\n\nAssistant: "
                    "Why did the chicken cross the road?"},
         {"rejected", "\n\nHuman: Hi\n\nAssistant: Hello!\n\nHuman: Tell me a joke.\n\nAssistant: "
                      "No."}});
    return out;
}

std::string anthropicText(const std::vector<tb::ChatMessage>& prompt)
{
    std::string out;
    for (const auto& m : prompt)
        out += (m.role == "user" ? "\n\nHuman: " : "\n\nAssistant: ") + m.content;
    return out + "\n\nAssistant:";
}

}  // namespace

class TestPairsInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void promptSplitsMatchTrl();
};

void TestPairsInterop::promptSplitsMatchTrl()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    const std::vector<json> input = rows();
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = tbtest::writeText(dir, "rows.json", json(input).dump());
    QString error;
    const QByteArray out = tbtest::runOracleScript(QStringLiteral("pairs_oracle.py"),
                                                   {QString::fromStdString(path)}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const json ref = json::parse(out.toStdString());
    QCOMPARE(ref.size(), input.size());
    int conversational = 0, text = 0;
    for (size_t i = 0; i < input.size(); ++i) {
        const tb::PairExample p = tb::parsePairRow(input[i]);
        const std::string what = "row " + std::to_string(i + 1);
        for (const char* fn : {"extract", "maybe"}) {
            const json& trl = ref[i][fn];
            if (input[i]["chosen"].is_array()) {
                QVERIFY2(trl["prompt"] == messagesJson(p.prompt), (what + fn).c_str());
                QVERIFY2(trl["chosen"] == messagesJson(p.chosen), (what + fn).c_str());
                QVERIFY2(trl["rejected"] == messagesJson(p.rejected), (what + fn).c_str());
                ++conversational;
                continue;
            }
            const std::string ours = anthropicText(p.prompt);
            const std::string prompt = trl["prompt"].get<std::string>();
            QVERIFY2(prompt.rfind(ours, 0) == 0, (what + ": " + prompt).c_str());
            const std::string extra = prompt.substr(ours.size());
            // Row 5's answers share "It is", row 6's nothing: TRL's prompt is then ours exactly.
            QCOMPARE(extra.empty(), i == 5);
            QVERIFY((" " + p.chosen[0].content).rfind(extra, 0) == 0);
            QVERIFY((" " + p.rejected[0].content).rfind(extra, 0) == 0);
            QCOMPARE(prompt + trl["chosen"].get<std::string>(),
                     input[i]["chosen"].get<std::string>());
            QCOMPARE(prompt + trl["rejected"].get<std::string>(),
                     input[i]["rejected"].get<std::string>());
            ++text;
        }
    }
    QCOMPARE(conversational, 8);
    QCOMPARE(text, 4);
}

QTEST_GUILESS_MAIN(TestPairsInterop)
#include "test_pairs_interop.moc"
