// Tokenizers without Python: GPT-2 tokenizer.json encodings and round trips, hand-written
// tokenizer.json files (pair merges, ignore_merges, errors), sentencepiece, and chat template
// rendering/detection.
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

using tb::ChatMessage;
using tb::ChatTemplateFamily;

namespace {

const std::string kGpt2 = TB_SOURCE_DIR "/tests/data/tokenizers/gpt2/tokenizer.json";
const std::string kLlama2 = TB_SOURCE_DIR "/tests/data/tokenizers/llama2/tokenizer.model";

std::string toString(const std::vector<int32_t>& ids)
{
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i)
        s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

void writeText(const QString& path, const std::string& text)
{
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << text;
}

// A tiny byte-level BPE tokenizer.json: vocab a b c ab bc abc Ġ, merges "b c" then "a b".
nlohmann::json tinyTokenizer()
{
    return nlohmann::json::parse(R"({
      "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
      "normalizer": null,
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                        "use_regex": true},
      "post_processor": null,
      "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
                  "use_regex": true},
      "model": {"type": "BPE", "dropout": null, "unk_token": null,
                "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                "ignore_merges": false,
                "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "\u0120": 6},
                "merges": [["b", "c"], ["a", "b"]]}
    })");
}

// The tb::Error message from loading `json` (written as tokenizer.json in a temp dir), or "" when
// none.
std::string loadError(const QTemporaryDir& dir, const std::string& json)
{
    const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
    writeText(path, json);
    try {
        tb::loadBpeTokenizer(path.toStdString());
    } catch (const tb::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

class TestTokenizer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void gpt2KnownEncodings();
    void gpt2RoundTrip();
    void gpt2SpecialTokens();
    void gpt2DecodeInvalidUtf8();
    void gpt2Metadata();
    void pairMergesAndIgnoreMerges();
    void addedTokensAndTemplate();
    void malformedFilesNameFileAndKey();
    void sentencePiece();
    void chatTemplates();
    void chatTemplateDetection();

private:
    std::unique_ptr<tb::Tokenizer> m_gpt2;
};

void TestTokenizer::initTestCase()
{
    m_gpt2 = tb::loadBpeTokenizer(kGpt2);
    QVERIFY(m_gpt2);
}

void TestTokenizer::gpt2KnownEncodings()
{
    // Reference ids from Hugging Face tokenizers 0.23 on the same file.
    const std::vector<std::pair<std::string, std::vector<int32_t>>> cases = {
        {"Hello world", {15496, 995}},
        {" <|endoftext|>", {220, 50256}},
        {"<|endoftext|>", {50256}},
        {"Hello world<|endoftext|> again", {15496, 995, 50256, 757}},
        {"x \u3000y", {87, 220, 5099, 222, 88}},
        {"-- \u0085--", {438, 220, 126, 227, 438}},  // U+0085 is \s for Oniguruma
        {"Hello world! I'm here.\n\n  def f(x):\n\treturn 1234567",
         {15496, 995, 0,  314,  1101, 994, 13,   628,   220,  825,
          277,   7,   87, 2599, 198,  197, 7783, 17031, 2231, 3134}},
        {"", {}},
    };
    for (const auto& [text, expected] : cases) {
        const auto ids = m_gpt2->encode(text, true);
        QVERIFY2(ids == expected,
                 (text + ": " + toString(ids) + " != " + toString(expected)).c_str());
    }
    // GPT-2's post-processor adds nothing.
    QCOMPARE(m_gpt2->encode("Hello world", false), m_gpt2->encode("Hello world", true));
}

void TestTokenizer::gpt2RoundTrip()
{
    const std::vector<std::string> corpus = {
        "The quick brown fox jumps over the lazy dog.",
        "I'm sure you'll see they've done it; DON'T SHOUT",
        "def main():\n    return [x**2 for x in range(10)]  # squares\n",
        "\tTabs\tand  multiple   spaces\r\nand CRLF\n\n\n",
        "emoji 😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷",
        "中文分词测试：你好，世界！ 日本語 한국어",
        "café naïve cafe\u0301 Ångström",
        "numbers 1234567 3.14159 ٣٤٥",
        "special <|endoftext|> inside",
        "   ",
    };
    for (const std::string& text : corpus)
        QCOMPARE(m_gpt2->decode(m_gpt2->encode(text, true), false), text);
    // Text that is not valid UTF-8 is encoded as if its bad bytes were U+FFFD (never a crash).
    QCOMPARE(m_gpt2->decode(m_gpt2->encode("a\xff"
                                           "b",
                                           true),
                            false),
             std::string("a\uFFFDb"));
}

void TestTokenizer::gpt2SpecialTokens()
{
    const std::vector<int32_t> ids = m_gpt2->encode("Hello<|endoftext|>", true);
    QCOMPARE(ids, (std::vector<int32_t>{15496, 50256}));  // matched before BPE, never split
    QCOMPARE(m_gpt2->decode(ids, true), std::string("Hello"));
    QCOMPARE(m_gpt2->decode(ids, false), std::string("Hello<|endoftext|>"));
    // A partial marker is ordinary text.
    const auto partial = m_gpt2->encode("<|endoftext|", true);
    QVERIFY(std::find(partial.begin(), partial.end(), 50256) == partial.end());
}

void TestTokenizer::gpt2DecodeInvalidUtf8()
{
    // Byte 0xE4 alone, and 0xE4 0xBD (a truncated 3-byte sequence), each decode to one U+FFFD,
    // as tokenizers' String::from_utf8_lossy does.
    const int32_t e4 = *m_gpt2->pieceToId("\u00e4");
    const int32_t bd = *m_gpt2->pieceToId("\u00bd");
    QCOMPARE(m_gpt2->decode({e4}, true), std::string("\uFFFD"));
    QCOMPARE(m_gpt2->decode({e4, bd}, true), std::string("\uFFFD"));
    QCOMPARE(m_gpt2->decode({e4, bd, e4}, true), std::string("\uFFFD\uFFFD"));
    QVERIFY_THROWS_EXCEPTION(tb::Error, m_gpt2->decode({50257}, true));
    QVERIFY_THROWS_EXCEPTION(tb::Error, m_gpt2->decode({-1}, true));
}

void TestTokenizer::gpt2Metadata()
{
    QCOMPARE(m_gpt2->kind(), std::string("bpe"));
    QCOMPARE(m_gpt2->vocabSize(), 50257);
    QCOMPARE(m_gpt2->bosId(), std::optional<int32_t>(50256));  // tokenizer_config.json
    QCOMPARE(m_gpt2->eosId(), std::optional<int32_t>(50256));
    QVERIFY(m_gpt2->isSpecial(50256));
    QVERIFY(!m_gpt2->isSpecial(995));
    QCOMPARE(m_gpt2->idToPiece(995), std::string("\u0120world"));
    QCOMPARE(m_gpt2->pieceToId("\u0120world"), std::optional<int32_t>(995));
    QCOMPARE(m_gpt2->pieceToId("<|endoftext|>"), std::optional<int32_t>(50256));
    QCOMPARE(m_gpt2->pieceToId("no such piece"), std::optional<int32_t>());
}

void TestTokenizer::pairMergesAndIgnoreMerges()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
    nlohmann::json j = tinyTokenizer();
    writeText(path, j.dump());
    auto tok = tb::loadBpeTokenizer(path.toStdString());
    // "b c" has the lower rank, so "abc" becomes a + bc and never reaches "abc" (reference: HF).
    QCOMPARE(tok->encode("abc abc", true), (std::vector<int32_t>{0, 4, 6, 0, 4}));
    QCOMPARE(tok->encode("abcab", true), (std::vector<int32_t>{0, 4, 3}));
    QCOMPARE(tok->decode({0, 4, 6, 0, 4}, true), std::string("abc abc"));
    // No tokenizer_config.json and no known names: no BOS/EOS.
    QCOMPARE(tok->bosId(), std::optional<int32_t>());
    QCOMPARE(tok->eosId(), std::optional<int32_t>());

    // Same merges in the "a b" string form.
    j["model"]["merges"] = {"b c", "a b"};
    writeText(path, j.dump());
    QCOMPARE(tb::loadBpeTokenizer(path.toStdString())->encode("abcab", true),
             (std::vector<int32_t>{0, 4, 3}));

    // ignore_merges (Llama-3): a pre-token that is itself a token is emitted whole.
    j["model"]["ignore_merges"] = true;
    writeText(path, j.dump());
    QCOMPARE(tb::loadBpeTokenizer(path.toStdString())->encode("abc abc", true),
             (std::vector<int32_t>{5, 6, 0, 4}));
}

void TestTokenizer::addedTokensAndTemplate()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    nlohmann::json j = tinyTokenizer();
    j["model"]["vocab"]["<bos>"] = 7;
    j["added_tokens"] = nlohmann::json::parse(R"([
      {"id": 7, "content": "<bos>", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": false, "special": true},
      {"id": 8, "content": "<m>", "single_word": false, "lstrip": true, "rstrip": false,
       "normalized": false, "special": true},
      {"id": 9, "content": "cab", "single_word": false, "lstrip": false, "rstrip": false,
       "normalized": true, "special": false}
    ])");
    j["post_processor"] = nlohmann::json::parse(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
       "special_tokens": {"<bos>": {"id": "<bos>", "ids": [7], "tokens": ["<bos>"]}}}]})");
    const QString path = dir.filePath(QStringLiteral("tokenizer.json"));
    writeText(path, j.dump());
    writeText(dir.filePath(QStringLiteral("tokenizer_config.json")),
              R"({"bos_token": {"content": "<bos>"}, "eos_token": "<m>"})");
    auto tok = tb::loadBpeTokenizer(path.toStdString());
    QCOMPARE(tok->bosId(), std::optional<int32_t>(7));
    QCOMPARE(tok->eosId(), std::optional<int32_t>(8));
    QCOMPARE(tok->vocabSize(), 10);
    // BOS from the template; "<m>" takes the spaces on its left; "cab" is an added token.
    QCOMPARE(tok->encode("ab  <m>cab", true), (std::vector<int32_t>{7, 3, 8, 9}));
    QCOMPARE(tok->encode("ab  <m>cab", false), (std::vector<int32_t>{3, 8, 9}));
    QCOMPARE(tok->decode({7, 3, 8, 9}, true), std::string("abcab"));  // non-special "cab" stays
    QCOMPARE(tok->decode({7, 3, 8, 9}, false), std::string("<bos>ab<m>cab"));
    QVERIFY(tok->isSpecial(8));
    QVERIFY(!tok->isSpecial(9));
}

void TestTokenizer::malformedFilesNameFileAndKey()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    auto expectError = [&](const std::string& json, const std::string& needle) {
        const std::string message = loadError(dir, json);
        QVERIFY2(!message.empty(), ("no error for: " + needle).c_str());
        QVERIFY2(message.find("tokenizer.json") != std::string::npos, message.c_str());
        QVERIFY2(message.find(needle) != std::string::npos, (message + " lacks " + needle).c_str());
    };
    expectError("{ not json", "not valid JSON");

    nlohmann::json j = tinyTokenizer();
    j["model"].erase("vocab");
    expectError(j.dump(), "model.vocab");

    j = tinyTokenizer();
    j["model"]["merges"].push_back({"a", "zz"});
    expectError(j.dump(), "zz");

    j = tinyTokenizer();
    j["model"]["merges"].push_back(42);
    expectError(j.dump(), "model.merges[2]");

    j = tinyTokenizer();
    j["model"]["type"] = "WordPiece";
    expectError(j.dump(), "WordPiece");

    // Ids are read whole: 2^40 and 2^32 - 1 are refused, not cut to 0 and -1 (or an allocation
    // of 2^31 entries).
    for (const nlohmann::json& id :
         {nlohmann::json(int64_t(1) << 40), nlohmann::json(uint64_t(4294967295u)),
          nlohmann::json(int64_t(2147483647)), nlohmann::json(uint64_t(18446744073709551615u))}) {
        j = tinyTokenizer();
        j["added_tokens"] = {{{"id", id}, {"content", "<x>"}, {"special", true}}};
        expectError(j.dump(), "added_tokens[0].id " + id.dump() + " is not a valid id");
        j = tinyTokenizer();
        j["model"]["vocab"]["zz"] = id;
        expectError(j.dump(), "model.vocab['zz'] is not a valid id");
    }

    j = tinyTokenizer();
    j["model"]["type"] = "Unigram";
    expectError(j.dump(), "Unigram");

    // Llama-2's tokenizer.json: BPE over a Metaspace pre-tokenizer, not byte-level.
    j = tinyTokenizer();
    j["pre_tokenizer"] = {
        {"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}};
    expectError(j.dump(), "Metaspace");

    j = tinyTokenizer();
    j["normalizer"] = {{"type", "Lowercase"}};
    expectError(j.dump(), "Lowercase");

    j = tinyTokenizer();
    j["pre_tokenizer"] = {{"type", "Split"},
                          {"pattern", {{"Regex", "(unclosed"}}},
                          {"behavior", "Isolated"},
                          {"invert", false}};
    expectError(j.dump(), "(unclosed");

    QVERIFY_THROWS_EXCEPTION(
        tb::Error, tb::loadBpeTokenizer(dir.filePath(QStringLiteral("none.json")).toStdString()));
}

void TestTokenizer::sentencePiece()
{
    auto sp = tb::loadSentencePieceTokenizer(kLlama2, true);
    QCOMPARE(sp->kind(), std::string("sentencepiece"));
    QCOMPARE(sp->encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
    QCOMPARE(sp->encode("Hello world", false), (std::vector<int32_t>{15043, 3186}));
    QCOMPARE(sp->bosId(), std::optional<int32_t>(1));
    QCOMPARE(sp->eosId(), std::optional<int32_t>(2));
    for (const std::string text : {"Hello world", "héllo 😀 中文\n\ttab", "numbers 1234567"})
        QCOMPARE(sp->decode(sp->encode(text, true), true), text);
}

void TestTokenizer::chatTemplates()
{
    const std::vector<ChatMessage> chat = {
        {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
    const std::vector<ChatMessage> noSystem = {{"user", "Hi"}, {"assistant", "Hello!"}};

    QCOMPARE(
        tb::renderChatText(ChatTemplateFamily::ChatML, chat, true),
        std::string("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                    "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
                    "<|im_start|>assistant\n"));
    QCOMPARE(tb::renderChatText(ChatTemplateFamily::Llama3, noSystem, true, "<|begin_of_text|>"),
             std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    QCOMPARE(tb::renderChatText(ChatTemplateFamily::Inst, chat, false, "<s>", "</s>"),
             std::string("<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello!</s>"
                         "<s>[INST] Bye [/INST]"));
    QCOMPARE(tb::renderChatText(ChatTemplateFamily::Inst, noSystem, false, "<s>", "</s>"),
             std::string("<s>[INST] Hi [/INST] Hello!</s>"));
    QCOMPARE(tb::renderChatText(ChatTemplateFamily::Alpaca, chat, true, "", "</s>"),
             std::string("Be brief.\n\n### Instruction:\nHi\n\n### Response:\nHello!</s>\n\n"
                         "### Instruction:\nBye\n\n### Response:\n"));
    QCOMPARE(tb::renderChatText(ChatTemplateFamily::Alpaca, noSystem, false),
             std::string("### Instruction:\nHi\n\n### Response:\nHello!"));
    QCOMPARE(tb::renderChatText(ChatTemplateFamily::Plain, chat, false, "", "</s>"),
             std::string("Be brief.\nHi\nHello!</s>\nBye"));

    // Trainable segments: exactly the assistant content and its end token.
    auto trainable = [](const std::vector<tb::ChatSegment>& segments) {
        std::vector<std::string> out;
        for (const auto& s : segments)
            if (s.trainable)
                out.push_back(s.text);
        return out;
    };
    using Strings = std::vector<std::string>;
    QCOMPARE(trainable(tb::renderChat(ChatTemplateFamily::ChatML, chat, true)),
             Strings{"Hello!<|im_end|>"});
    QCOMPARE(trainable(tb::renderChat(ChatTemplateFamily::Llama3, chat, true)),
             Strings{"Hello!<|eot_id|>"});
    QCOMPARE(trainable(tb::renderChat(ChatTemplateFamily::Inst, chat, false, "<s>", "</s>")),
             Strings{"Hello!</s>"});
    QCOMPARE(trainable(tb::renderChat(ChatTemplateFamily::Alpaca, chat, false, "", "</s>")),
             Strings{"Hello!</s>"});
    QCOMPARE(trainable(tb::renderChat(ChatTemplateFamily::Plain, chat, false, "", "</s>")),
             Strings{"Hello!</s>"});
    // Segments concatenate to the text.
    std::string joined;
    for (const auto& s : tb::renderChat(ChatTemplateFamily::ChatML, chat, true))
        joined += s.text;
    QCOMPARE(joined, tb::renderChatText(ChatTemplateFamily::ChatML, chat, true));

    for (auto family :
         {ChatTemplateFamily::ChatML, ChatTemplateFamily::Llama3, ChatTemplateFamily::Inst,
          ChatTemplateFamily::Alpaca, ChatTemplateFamily::Plain})
        QCOMPARE(tb::parseChatTemplateName(tb::chatTemplateName(family)), std::optional(family));
    QCOMPARE(tb::parseChatTemplateName("vicuna"), std::optional<ChatTemplateFamily>());
}

void TestTokenizer::chatTemplateDetection()
{
    using Family = std::optional<ChatTemplateFamily>;
    QCOMPARE(tb::detectChatTemplate(
                 "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'"
                 " + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"),
             Family(ChatTemplateFamily::ChatML));
    QCOMPARE(tb::detectChatTemplate(
                 "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}"
                 "<|end_header_id|>\n\n{{ m['content'] | trim }}<|eot_id|>{% endfor %}"),
             Family(ChatTemplateFamily::Llama3));
    QCOMPARE(
        tb::detectChatTemplate("{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}"),
        Family(ChatTemplateFamily::Inst));
    QCOMPARE(
        tb::detectChatTemplate("### Instruction:\n{{ message['content'] }}\n\n### Response:\n"),
        Family(ChatTemplateFamily::Alpaca));
    QCOMPARE(tb::detectChatTemplate(
                 "{% for m in messages %}<start_of_turn>{{ m['content'] }}{% endfor %}"),
             Family());

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string modelDir = dir.path().toStdString();
    const QString config = dir.filePath(QStringLiteral("tokenizer_config.json"));
    QCOMPARE(tb::detectChatTemplateForModel(modelDir), Family());  // no tokenizer_config.json
    writeText(config, R"({"bos_token": "<s>"})");
    QCOMPARE(tb::detectChatTemplateForModel(modelDir), Family());  // no chat_template: no fallback
    writeText(config, R"({"chat_template": "{{ '<|im_start|>' }}"})");
    QCOMPARE(tb::detectChatTemplateForModel(modelDir), Family(ChatTemplateFamily::ChatML));
    writeText(config, R"({"chat_template": [{"name": "tool_use", "template": "<|im_start|>"},
                                            {"name": "default", "template": "[INST]"}]})");
    QCOMPARE(tb::detectChatTemplateForModel(modelDir), Family(ChatTemplateFamily::Inst));
    writeText(config, R"({"chat_template": "<start_of_turn>user"})");
    QCOMPARE(tb::detectChatTemplateForModel(modelDir), Family());  // unrecognised
    writeText(config, R"({"chat_template": )");
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::detectChatTemplateForModel(modelDir));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "test_tokenizer.moc"
