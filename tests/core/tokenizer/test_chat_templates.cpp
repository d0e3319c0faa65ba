// ChatTemplate without Python: the families' Jinja equivalents render what the families render,
// assistant spans of real templates from prefixes and from {% generation %} blocks, loss masks of
// whole-text tokenization, and the errors a user sees (a template that does not parse, one that
// raises, a folder with bad JSON).
#include "data/example.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/file_util.h"

#include "test_util.h"

#include <QDir>
#include <QtTest>

#include <tuple>

#include <filesystem>

using tb::ChatMessage;
using tb::ChatTemplate;
using tb::ChatTemplateFamily;
using tb::jinja::Value;

namespace {

const std::string kTemplates = TB_SOURCE_DIR "/tests/data/chat_templates";
const std::string kGpt2 = TB_SOURCE_DIR "/tests/data/tokenizers/gpt2";

Value conversations()
{
    return Value::parse(tb::readFile(kTemplates + "/conversations.json"));
}

Value conversation(const std::string& id)
{
    for (const Value& c : conversations())
        if (c["id"] == id)
            return c;
    return {};
}

// A real template's folder as a model folder holds it: its tokenizer_config.json with the marker
// tokens it writes declared special in added_tokens_decoder (as transformers saves them).
std::string modelFolder(const QTemporaryDir& dir, const std::string& id)
{
    Value config = Value::parse(tb::readFile(kTemplates + "/" + id + "/tokenizer_config.json"));
    Value decoder = Value::object();
    int next = 100000;
    for (const Value& t : config.value("template_special_tokens", Value::array()))
        decoder[std::to_string(next++)] = {{"content", t}, {"special", true}};
    config.erase("template_special_tokens");
    config["added_tokens_decoder"] = decoder;
    const std::string folder = dir.filePath(QString::fromStdString(id)).toStdString();
    std::filesystem::create_directories(folder);
    tbtest::writeText(dir, id + "/tokenizer_config.json", config.dump(2));
    return folder;
}

std::vector<std::string> templateIds()
{
    std::vector<std::string> ids;
    for (const auto& e : std::filesystem::directory_iterator(kTemplates))
        if (e.is_directory())
            ids.push_back(e.path().filename().string());
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::string joined(const std::vector<tb::ChatSegment>& segments)
{
    std::string s;
    for (const auto& seg : segments)
        s += seg.text;
    return s;
}

std::vector<std::string> trainable(const std::vector<tb::ChatSegment>& segments)
{
    std::vector<std::string> out;
    for (const auto& seg : segments)
        if (seg.trainable)
            out.push_back(seg.text);
    return out;
}

// The GPT-2 tokenizer with ChatML's markers as special added tokens, in a model folder with a
// template.
std::string chatmlGpt2Folder(const QTemporaryDir& dir, const std::string& jinja)
{
    QDir(dir.path()).mkpath(QStringLiteral("chatml"));
    tbtest::writeText(dir, "chatml/tokenizer.json", tbtest::chatmlGpt2TokenizerJson());
    tbtest::writeText(dir, "chatml/tokenizer_config.json",
                      Value{{"eos_token", "<|im_end|>"},
                            {"bos_token", nullptr},
                            {"add_bos_token", false},
                            {"chat_template", jinja}}
                          .dump());
    return dir.filePath(QStringLiteral("chatml")).toStdString();
}

const char* kChatml = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
                      "{% if message['role'] == 'assistant' %}{% generation %}{{ "
                      "message['content'] + '<|im_end|>' }}{% endgeneration %}{{ '\\n' }}{% else "
                      "%}{{ message['content'] + '<|im_end|>\\n' }}{% endif %}{% endfor %}{% if "
                      "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

std::string withoutGenerationTags(std::string s)
{
    for (const std::string tag : {"{% generation %}", "{% endgeneration %}"})
        for (size_t at; (at = s.find(tag)) != std::string::npos;)
            s.erase(at, tag.size());
    return s;
}

}  // namespace

class TestChatTemplates : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // familyJinja is what a GGUF export writes: rendered by the Jinja interpreter it must give
    // exactly the text the family's renderer gives, for every family and conversation shape.
    void familyJinjaRendersAsTheFamily()
    {
        const std::vector<std::vector<ChatMessage>> chats = {
            {{"user", "Hi"}},
            {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}},
            {{"user", "a"}, {"assistant", "b"}, {"user", "c"}, {"assistant", "d"}},
            {{"system", "s1"}, {"system", "s2"}, {"user", "q"}},
            {{"user", "q"}, {"assistant", ""}, {"system", "late"}},
            {},
        };
        for (ChatTemplateFamily f :
             {ChatTemplateFamily::ChatML, ChatTemplateFamily::Llama3, ChatTemplateFamily::Inst,
              ChatTemplateFamily::Alpaca, ChatTemplateFamily::Plain}) {
            tb::ModelTemplateSource source;
            source.text = tb::familyJinja(f);
            source.origin = tb::chatTemplateName(f);
            source.specialTokens = {{"eos_token", "</s>"}, {"bos_token", "<s>"}};
            const ChatTemplate jinja = ChatTemplate::fromSource(source);
            for (size_t i = 0; i < chats.size(); ++i)
                for (bool prompt : {false, true}) {
                    const std::string ours = jinja.render(tb::messagesValue(chats[i]), prompt);
                    const std::string family = tb::renderChatText(f, chats[i], prompt, "", "</s>");
                    if (ours != family)
                        QFAIL(qPrintable(QStringLiteral("%1, chat %2, prompt %3:\n%4\nvs\n%5")
                                             .arg(QLatin1String(tb::chatTemplateName(f)))
                                             .arg(i)
                                             .arg(prompt)
                                             .arg(QString::fromStdString(ours),
                                                  QString::fromStdString(family))));
                }
        }
    }

    // Prefix rendering on 18 real templates: the pieces join to the whole render, one trainable
    // piece per assistant turn that holds its content and ends with the turn's special token,
    // and train_on last keeps exactly the last of them.
    void prefixSpansOfRealTemplates()
    {
        QTemporaryDir dir;
        int checked = 0;
        for (const std::string& id : templateIds()) {
            const auto chat = ChatTemplate::fromModel(modelFolder(dir, id));
            QVERIFY2(chat, id.c_str());
            QVERIFY2(!chat->endOfTurnTokens().empty(), id.c_str());
            for (const char* conv : {"multi_turn", "unicode", "empty_assistant"}) {
                const Value messages = conversation(conv)["messages"];
                std::vector<tb::ChatSegment> all;
                const std::string error =
                    tbtest::errorOf([&] { all = chat->segments(messages, tb::TrainOn::All); });
                // Qwen3 renders an assistant turn after the last user message with its
                // (empty) reasoning block, and without it once a user message follows: a
                // prefix of the conversation is not a prefix of the whole.
                if (id == "Qwen--Qwen3-0.6B" && !error.empty()) {
                    QVERIFY2(tbtest::contains(error, "data.train_on"), error.c_str());
                    if (messages.back()["role"] == "assistant")
                        QCOMPARE(trainable(chat->segments(messages, tb::TrainOn::Last)).size(),
                                 size_t(1));
                    continue;
                }
                QVERIFY2(error.empty(), (id + " " + conv + ": " + error).c_str());
                QCOMPARE(joined(all), chat->render(messages, false));
                const std::vector<std::string> spans = trainable(all);
                size_t assistants = 0;
                for (const Value& m : messages)
                    if (m["role"] == "assistant")
                        ++assistants;
                QVERIFY2(spans.size() == assistants, (id + " " + conv).c_str());
                size_t turn = 0;
                for (const Value& m : messages) {
                    if (m["role"] != "assistant")
                        continue;
                    const std::string& span = spans[turn++];
                    bool endsWithEot = false;
                    for (const std::string& eot : chat->endOfTurnTokens())
                        endsWithEot = endsWithEot || span.ends_with(eot);
                    QVERIFY2(endsWithEot, (id + " " + conv + ": " + span).c_str());
                    std::string content = m["content"].get<std::string>();
                    while (!content.empty() && std::isspace((unsigned char)content.back()))
                        content.pop_back();
                    QVERIFY2(tbtest::contains(span, content), (id + ": " + span).c_str());
                }
                const std::vector<std::string> last =
                    trainable(chat->segments(messages, tb::TrainOn::Last));
                QCOMPARE(last.size(), size_t(1));
                QCOMPARE(last.front(), spans.back());
                ++checked;
            }
        }
        QVERIFY(checked >= 15 * 3 - 2);
    }

    // DeepSeek-R1's generation prompt opens a <think> block that its rendered turns do not have
    // (it drops reasoning from assistant messages): the turn starts where the two part, and what
    // trains is the answer as the template renders it, never the dropped reasoning.
    void generationPromptOpensMoreThanTheTurn()
    {
        QTemporaryDir dir;
        const auto chat =
            ChatTemplate::fromModel(modelFolder(dir, "deepseek-ai--DeepSeek-R1-Distill-Llama-8B"));
        QVERIFY(chat);
        const Value messages = conversation("think_history")["messages"];
        const auto spans = trainable(chat->segments(messages, tb::TrainOn::All));
        QCOMPARE(spans.size(), size_t(1));
        QVERIFY2(spans.front().starts_with("\n\n17 * 3 = 51."), spans.front().c_str());
        QVERIFY2(!tbtest::contains(spans.front(), "<think>"), spans.front().c_str());
        QVERIFY2(spans.front().ends_with("end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"),
                 spans.front().c_str());
    }

    // {% generation %} blocks give the spans directly; they equal what prefix rendering finds on
    // the same template without the tags.
    void generationBlocksMatchPrefixSpans()
    {
        tb::ModelTemplateSource tagged;
        tagged.text = kChatml;
        tagged.origin = "tagged";
        tagged.specialStrings = {"<|im_start|>", "<|im_end|>"};
        tb::ModelTemplateSource plain = tagged;
        plain.text = withoutGenerationTags(kChatml);
        const ChatTemplate a = ChatTemplate::fromSource(tagged);
        const ChatTemplate b = ChatTemplate::fromSource(plain);
        for (const char* conv : {"multi_turn", "system_multi_turn", "empty_assistant"}) {
            const Value messages = conversation(conv)["messages"];
            for (tb::TrainOn on : {tb::TrainOn::All, tb::TrainOn::Last}) {
                const auto x = a.segments(messages, on);
                const auto y = b.segments(messages, on);
                QCOMPARE(trainable(x), trainable(y));
                QCOMPARE(joined(x), joined(y));
            }
        }
    }

    // Whole-text tokenization with a model template: ids are the tokenizer's for the whole
    // render (as transformers' apply_chat_template(tokenize=True)), and exactly the assistant
    // contents and their <|im_end|> carry loss.
    void modelTemplateMasks()
    {
        QTemporaryDir dir;
        const std::string folder = chatmlGpt2Folder(dir, withoutGenerationTags(kChatml));
        const auto tokenizer = tb::loadTokenizer(folder);
        const auto chat = ChatTemplate::fromModel(folder);
        QVERIFY(chat);
        QCOMPARE(chat->endOfTurnTokens(), std::vector<std::string>{"<|im_end|>"});
        tb::Example example;
        example.messages = {{"system", "Be brief."},
                            {"user", "Capital of France?"},
                            {"assistant", "Paris."},
                            {"user", "And of Spain?"},
                            {"assistant", " Madrid, since 1561."}};
        tb::TokenizeOptions o;
        o.setTemplate(*chat);
        o.maxLength = 0;
        const tb::TokenizedExample t = tb::tokenizeExample(*tokenizer, example, o);
        const std::string text = chat->render(tb::messagesValue(example.messages), false);
        QCOMPARE(t.ids, tokenizer->encode(text, false));
        std::string masked;
        for (size_t i = 0; i < t.ids.size(); ++i)
            if (t.lossMask[i])
                masked += tokenizer->decode({t.ids[i]}, false) +
                          (i + 1 < t.ids.size() && !t.lossMask[i + 1] ? "|" : "");
        QCOMPARE(masked, std::string("Paris.<|im_end|>| Madrid, since 1561.<|im_end|>|"));

        o.trainOn = tb::TrainOn::Last;
        const tb::TokenizedExample last = tb::tokenizeExample(*tokenizer, example, o);
        QCOMPARE(last.ids, t.ids);
        int64_t n = 0, m = 0;
        for (size_t i = 0; i < t.ids.size(); ++i) {
            n += t.lossMask[i];
            m += last.lossMask[i];
        }
        QVERIFY(m > 0 && m < n);
    }

    // A template's own raise_exception reaches the user with the example's source.
    void raisedMessageNamesTheRecord()
    {
        QTemporaryDir dir;
        const auto chat = ChatTemplate::fromModel(modelFolder(dir, "google--gemma-2-2b-it"));
        QVERIFY(chat);
        const auto tokenizer = tb::loadTokenizer(kGpt2);
        tb::Example example;
        example.messages = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}};
        example.source = "train.jsonl:7";
        tb::TokenizeOptions o;
        o.setTemplate(*chat);
        const std::string error =
            tbtest::errorOf([&] { tb::tokenizeExample(*tokenizer, example, o); });
        QVERIFY2(tbtest::contains(error, "train.jsonl:7"), error.c_str());
        QVERIFY2(tbtest::contains(error, "System role not supported"), error.c_str());
    }

    // Where a folder keeps its template, and the errors a broken one gives.
    void readingTemplatesFromFolders()
    {
        QTemporaryDir dir;
        QDir(dir.path()).mkpath(QStringLiteral("list"));
        tbtest::writeText(dir, "list/tokenizer_config.json",
                          R"({"eos_token": {"content": "</s>", "special": true},
                              "chat_template": [{"name": "tool_use", "template": "T"},
                                                {"name": "default", "template": "D{{ eos_token }}"}]})");
        const auto list =
            ChatTemplate::fromModel(dir.filePath(QStringLiteral("list")).toStdString());
        QVERIFY(list);
        QCOMPARE(list->render(Value::array(), false), std::string("D</s>"));

        QDir(dir.path()).mkpath(QStringLiteral("jinja"));
        tbtest::writeText(dir, "jinja/chat_template.jinja", "J{{ messages | length }}");
        const auto jinja =
            ChatTemplate::fromModel(dir.filePath(QStringLiteral("jinja")).toStdString());
        QVERIFY(jinja);
        QCOMPARE(jinja->render(Value::array({{{"role", "user"}, {"content", "x"}}}), false),
                 std::string("J1"));

        QDir(dir.path()).mkpath(QStringLiteral("none"));
        QVERIFY(!ChatTemplate::fromModel(dir.filePath(QStringLiteral("none")).toStdString()));

        QDir(dir.path()).mkpath(QStringLiteral("bad"));
        const std::string bad = tbtest::writeText(dir, "bad/tokenizer_config.json", "{\"chat_");
        std::string error = tbtest::errorOf(
            [&] { ChatTemplate::fromModel(dir.filePath(QStringLiteral("bad")).toStdString()); });
        QVERIFY2(tbtest::contains(error, bad), error.c_str());

        // A chat_template key of the wrong shape is named, not taken for a missing template.
        for (const auto& [name, text, fragment] :
             std::vector<std::tuple<const char*, const char*, const char*>>{
                 {"number", R"({"chat_template": 5})",
                  "key 'chat_template' must be a string or a list of {name, template}, found "
                  "number"},
                 {"nodefault", R"({"chat_template": [{"name": "tool_use", "template": "T"}]})",
                  "key 'chat_template' is a list without a"},
                 {"array", "[]", "expected a JSON object, found array"}}) {
            QDir(dir.path()).mkpath(QLatin1String(name));
            const std::string file =
                tbtest::writeText(dir, std::string(name) + "/tokenizer_config.json", text);
            error = tbtest::errorOf(
                [&] { ChatTemplate::fromModel(dir.filePath(QLatin1String(name)).toStdString()); });
            QVERIFY2(tbtest::contains(error, file + ": " + fragment), error.c_str());
        }

        QDir(dir.path()).mkpath(QStringLiteral("broken"));
        tbtest::writeText(dir, "broken/tokenizer_config.json",
                          R"({"chat_template": "ok\n{% if messages %}never closed"})");
        error = tbtest::errorOf(
            [&] { ChatTemplate::fromModel(dir.filePath(QStringLiteral("broken")).toStdString()); });
        QVERIFY2(tbtest::contains(error, "broken/tokenizer_config.json: chat_template"),
                 error.c_str());
        QVERIFY2(tbtest::contains(error, "line 2"), error.c_str());
    }

    // Names: "model" (and the older "auto") is the folder's own, with a plain fallback only where
    // asked for.
    void templatesByName()
    {
        QTemporaryDir dir;
        QVERIFY(!tb::chatTemplateByName("nonsense", dir.path().toStdString()));
        QCOMPARE(tb::chatTemplateByName("alpaca", dir.path().toStdString())->name(),
                 std::string("alpaca"));
        const std::string error =
            tbtest::errorOf([&] { tb::chatTemplateByName("model", dir.path().toStdString()); });
        QVERIFY2(tbtest::contains(error, "has no chat template"), error.c_str());
        QCOMPARE(tb::chatTemplateByName("auto", dir.path().toStdString(), true)->name(),
                 std::string("plain"));
        const std::string folder = chatmlGpt2Folder(dir, kChatml);
        QCOMPARE(tb::chatTemplateByName("model", folder)->name(), std::string("model"));
        const auto tokenizer = tb::loadTokenizer(folder);
        QCOMPARE(tb::chatStopIds(*tb::chatTemplateByName("model", folder), *tokenizer),
                 std::vector<int32_t>{50258});
    }
};

QTEST_GUILESS_MAIN(TestChatTemplates)
#include "test_chat_templates.moc"
