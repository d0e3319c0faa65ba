// Interop: real Hugging Face chat templates (tests/data/chat_templates) rendered by our Jinja
// interpreter against transformers' apply_chat_template (tests/interop/chat_template_oracle.py,
// one process for every template): for each template x conversation x add_generation_prompt the
// text is byte-identical, a conversation the template refuses fails in both (raise_exception with
// the same message), and our tokenizer gives the oracle's ids for the text.
#include "tokenizer/jinja.h"
#include "tokenizer/tokenizer.h"

#include "core/tokenizer/jinja_test_util.h"
#include "interop/oracle_util.h"

#include <QtTest>

#include <fstream>

using tb::jinja::Value;

namespace {

const char* const kTemplates = TB_SOURCE_DIR "/tests/data/chat_templates";
// The oracle's pinned clock (chat_template_oracle.py: FIXED_NOW).
const char* const kNow = "2025-03-14T09:26:53";

Value readJson(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return Value::parse(in);
}

std::string oneLine(const std::string& text)
{
    return Value(text).dump().substr(0, 400);
}

}  // namespace

class TestChatTemplateInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void rendersMatchTransformers_data();
    void rendersMatchTransformers();
    void cleanupTestCase();

private:
    QTemporaryDir m_tokenizers;
    Value m_oracle;
    Value m_conversations;
    int m_cases = 0;
    int m_identical = 0;
    int m_refusedBoth = 0;
};

void TestChatTemplateInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    QVERIFY(m_tokenizers.isValid());
    const QString templates = QString::fromLatin1(kTemplates);
    QString error;
    const QByteArray out = tbtest::runOracleScript(
        QStringLiteral("chat_template_oracle.py"),
        {templates, templates + QStringLiteral("/conversations.json"), m_tokenizers.path()},
        &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_oracle = Value::parse(out.toStdString());
    m_conversations = readJson(std::string(kTemplates) + "/conversations.json");
    QVERIFY(m_oracle.size() >= 15);
}

void TestChatTemplateInterop::rendersMatchTransformers_data()
{
    QTest::addColumn<QString>("model");
    for (const auto& [model, cases] : m_oracle.items())
        QTest::newRow(model.c_str()) << QString::fromStdString(model);
}

void TestChatTemplateInterop::rendersMatchTransformers()
{
    QFETCH(QString, model);
    const std::string id = model.toStdString();
    const std::string folder = std::string(kTemplates) + "/" + id;
    const Value config = readJson(folder + "/tokenizer_config.json");
    const tb::jinja::Template tmpl(config.at("chat_template").get<std::string>(),
                                   id + "/tokenizer_config.json: chat_template",
                                   tbtest::pinnedClock(kNow));
    const auto tokenizer = tb::loadTokenizer(m_tokenizers.filePath(model).toStdString());
    std::string failures;
    for (const Value& ref : m_oracle.at(id)) {
        const std::string convId = ref.at("conversation");
        const bool agp = ref.at("add_generation_prompt");
        const std::string where = convId + (agp ? " (generation prompt)" : "");
        const Value* conv = nullptr;
        for (const Value& c : m_conversations)
            if (c.at("id") == convId)
                conv = &c;
        QVERIFY(conv);
        Value extra = Value::object();
        for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"})
            if (config.contains(key) && !config[key].is_null())
                extra[key] = config[key];
        const Value kwargs = conv->value("kwargs", Value::object());
        for (const auto& [key, value] : kwargs.items())
            extra[key] = value;
        const Value context = tb::jinja::chatTemplateContext(
            conv->at("messages"), conv->value("tools", Value()), agp, extra);
        ++m_cases;
        std::string text;
        std::string ours;
        try {
            text = tmpl.render(context).text;
        } catch (const tb::jinja::RaisedError& e) {
            ours = "raise_exception: " + e.message();
        } catch (const tb::Error& e) {
            ours = e.what();
        }
        if (ref.contains("error")) {
            const bool raised = ref.at("error_type") == "TemplateError";
            const std::string expected = "raise_exception: " + ref.at("error").get<std::string>();
            if (ours.empty() || (raised && ours != expected))
                failures += where + ": transformers fails with " + ref.at("error").dump() +
                            ", we give " + (ours.empty() ? oneLine(text) : ours) + "\n";
            else
                ++m_refusedBoth;
            continue;
        }
        if (!ours.empty()) {
            failures += where + ": " + ours + "\n";
            continue;
        }
        if (text != ref.at("text").get<std::string>()) {
            failures += where + ":\n  ours   " + oneLine(text) + "\n  theirs " +
                        oneLine(ref.at("text")) + "\n";
            continue;
        }
        ++m_identical;
        const std::vector<int32_t> ids = tokenizer->encode(text, false);
        if (Value(ids) != ref.at("ids"))
            failures += where + ": ids differ: ours " + Value(ids).dump().substr(0, 300) +
                        "\n  theirs " + ref.at("ids").dump().substr(0, 300) + "\n";
    }
    QVERIFY2(failures.empty(), failures.c_str());
}

void TestChatTemplateInterop::cleanupTestCase()
{
    qInfo("%d cases: %d byte-identical renders, %d refused by both", m_cases, m_identical,
          m_refusedBoth);
}

QTEST_GUILESS_MAIN(TestChatTemplateInterop)
#include "test_chat_template_interop.moc"
