// Interop: real Hugging Face chat templates (tests/data/chat_templates) rendered by our Jinja
// interpreter against transformers' apply_chat_template (tests/interop/chat_template_oracle.py,
// one process for every template): for each template x conversation x add_generation_prompt the
// text is byte-identical, a conversation the template refuses fails in both (raise_exception with
// the same message), and our tokenizer gives the oracle's ids for the text.
#include "data/example.h"
#include "tokenizer/jinja.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/file_util.h"

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
    void assistantMasksMatchTransformers();
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

// Our loss masks from prefix rendering of Qwen2.5's real template against transformers'
// return_assistant_tokens_mask on the same template with {% generation %} blocks around each
// assistant turn's content and <|im_end|> (the tool-free branch, which renders the same text):
// the same ids and exactly the same tokens carry loss.
void TestChatTemplateInterop::assistantMasksMatchTransformers()
{
    const std::string qwen =
        m_tokenizers.filePath(QStringLiteral("Qwen--Qwen2.5-7B-Instruct")).toStdString();
    const std::string tagged = m_tokenizers.filePath(QStringLiteral("qwen-tagged")).toStdString();
    QDir().mkpath(QString::fromStdString(tagged));
    for (const char* file : {"tokenizer.json", "special_tokens_map.json"})
        if (QFileInfo::exists(QString::fromStdString(qwen + "/" + file)))
            QFile::copy(QString::fromStdString(qwen + "/" + file),
                        QString::fromStdString(tagged + "/" + file));
    Value config = Value::parse(tb::readFile(qwen + "/tokenizer_config.json"));
    config["chat_template"] =
        "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + "
        "messages[0]['content'] + '<|im_end|>\n' }}{%- else %}{{- '<|im_start|>system\nYou are "
        "Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}{%- endif "
        "%}{%- for message in messages %}{%- if message.role == \"user\" or (message.role == "
        "\"system\" and not loop.first) %}{{- '<|im_start|>' + message.role + '\n' + "
        "message.content + '<|im_end|>' + '\n' }}{%- elif message.role == \"assistant\" %}{{- "
        "'<|im_start|>assistant\n' }}{% generation %}{{- message.content + '<|im_end|>' }}{% "
        "endgeneration %}{{- '\n' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- "
        "'<|im_start|>assistant\n' }}{%- endif %}";
    std::ofstream(tagged + "/tokenizer_config.json", std::ios::binary) << config.dump();

    QString error;
    const QByteArray out = tbtest::runOracleScript(
        QStringLiteral("chat_mask_oracle.py"),
        {QString::fromStdString(tagged),
         QString::fromLatin1(kTemplates) + QStringLiteral("/conversations.json")},
        &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const Value oracle = Value::parse(out.toStdString());
    QVERIFY(oracle.size() >= 4);

    const auto tokenizer = tb::loadTokenizer(qwen);
    const auto chat = tb::ChatTemplate::fromModel(qwen);  // the real template, no tags
    QVERIFY(chat);
    tb::TokenizeOptions options;
    options.setTemplate(*chat);
    options.maxLength = 0;
    int compared = 0;
    for (const Value& conv : m_conversations) {
        const std::string id = conv["id"];
        if (!oracle.contains(id))
            continue;
        const Value& ref = oracle[id];
        QCOMPARE(chat->render(conv["messages"], false), ref["text"].get<std::string>());
        const tb::TokenizedExample ours =
            tb::tokenizeMessages(*tokenizer, conv["messages"], nullptr, options);
        QCOMPARE(ours.ids, ref["ids"].get<std::vector<int32_t>>());
        const std::vector<int> mask(ours.lossMask.begin(), ours.lossMask.end());
        QVERIFY2(mask == ref["mask"].get<std::vector<int>>(),
                 (id + ":\n  ours   " + Value(mask).dump() + "\n  theirs " + ref["mask"].dump())
                     .c_str());
        ++compared;
    }
    qInfo("assistant masks of %d conversations equal transformers'", compared);
    QVERIFY(compared >= 4);
}

void TestChatTemplateInterop::cleanupTestCase()
{
    qInfo("%d cases: %d byte-identical renders, %d refused by both", m_cases, m_identical,
          m_refusedBoth);
}

QTEST_GUILESS_MAIN(TestChatTemplateInterop)
#include "test_chat_template_interop.moc"
