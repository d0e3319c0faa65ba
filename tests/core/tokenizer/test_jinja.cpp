// The Jinja interpreter without Python: the case table (expected texts are jinja2's, kept true by
// test_jinja_interop), error messages with positions, raise_exception, generation spans, the
// limits that stop hostile templates, concurrent renders, and the chat-template context.
#include "tokenizer/jinja.h"

#include "core/tokenizer/jinja_cases.h"
#include "core/tokenizer/jinja_test_util.h"
#include "test_util.h"

#include <QtTest>

#include <ctime>
#include <pthread.h>
#include <random>
#include <thread>

using tb::jinja::Template;
using tb::jinja::Value;

namespace {

std::string render(const std::string& source, const Value& context = Value::object())
{
    return Template(source, "t").render(context).text;
}

std::string errorOf(const std::string& source, const Value& context = Value::object())
{
    return tbtest::errorOf([&] { render(source, context); });
}

}  // namespace

class TestJinja : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cases_data();
    void cases();
    void syntaxErrorsNamePlace();
    void unsupportedConstructsFailAtParse();
    void runtimeErrorsNamePlace();
    void raiseException();
    void generationSpans();
    void hostileTemplatesStopCleanly();
    void deepTemplatesFitASmallStack();
    void randomBytesNeverCrash();
    void concurrentRenders();
    void strftimeUsesClock();
    void chatTemplateContext();
};

void TestJinja::cases_data()
{
    QTest::addColumn<int>("index");
    for (size_t i = 0; i < std::size(tbtest::kJinjaCases); ++i)
        QTest::newRow(tbtest::kJinjaCases[i].name) << static_cast<int>(i);
}

void TestJinja::cases()
{
    QFETCH(int, index);
    const tbtest::JinjaCase& c = tbtest::kJinjaCases[index];
    const Value context = Value::parse(c.context);
    std::string text;
    const std::string error = tbtest::errorOf([&] {
        Template t(c.source, "case", tbtest::pinnedClock(c.now));
        text = t.render(context).text;
    });
    if (c.expected) {
        QCOMPARE(error, std::string());
        QCOMPARE(text, std::string(c.expected));
    } else {
        QVERIFY2(tbtest::contains(error, c.error), error.c_str());
        QVERIFY2(error.rfind("case: ", 0) == 0, error.c_str());
    }
}

void TestJinja::syntaxErrorsNamePlace()
{
    QCOMPARE(errorOf("ab\n  {% if %}"),
             std::string("t: line 2, column 9: expected an expression, got 'end of statement "
                         "block'"));
    QCOMPARE(errorOf("{% for x in y %}\n{{ x }}"),
             std::string("t: line 2, column 8: unexpected end of template, expected 'endfor' or "
                         "'else'"));
    QCOMPARE(errorOf("{{ 1 + }}"),
             std::string("t: line 1, column 8: unexpected 'end of print statement'"));
    QCOMPARE(errorOf("{{ (1 ] }}"),
             std::string("t: line 1, column 7: unexpected ']', expected ')'"));
    QCOMPARE(errorOf("x\n{# open"), std::string("t: line 2, column 1: missing end of comment tag"));
    QCOMPARE(errorOf("{{ 'é' ! }}"), std::string("t: line 1, column 8: unexpected character '!'"));
    QCOMPARE(errorOf("{% macro m(a=1, b) %}{% endmacro %}"),
             std::string("t: line 1, column 17: non-default argument follows default argument"));
    QCOMPARE(errorOf("{% for x in y %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"),
             std::string("t: line 1, column 35: 'continue' outside loop"));
    QCOMPARE(errorOf("{{ x|nosuchfilter }}"),
             std::string("t: line 1, column 6: no filter named 'nosuchfilter'"));
    QCOMPARE(errorOf("{{ x is nosuchtest }}"),
             std::string("t: line 1, column 9: no test named 'nosuchtest'"));
    QCOMPARE(errorOf("{% do x %}"), std::string("t: line 1, column 4: unknown tag 'do'"));
}

void TestJinja::unsupportedConstructsFailAtParse()
{
    QCOMPARE(errorOf("{% extends 'base' %}"),
             std::string("t: line 1, column 4: unsupported tag 'extends'"));
    QCOMPARE(errorOf("a\n{% include 'x' %}"),
             std::string("t: line 2, column 4: unsupported tag 'include'"));
    QCOMPARE(errorOf("{{ xs|groupby('a') }}"),
             std::string("t: line 1, column 7: unsupported filter 'groupby'"));
    QCOMPARE(errorOf("{% for x in xs recursive %}{% endfor %}"),
             std::string("t: line 1, column 16: unsupported: recursive for loops"));
    QCOMPARE(errorOf("{{ 99999999999999999999 }}"),
             std::string("t: line 1, column 4: unsupported: integer literal larger than 64 bits"));
}

void TestJinja::runtimeErrorsNamePlace()
{
    // jinja2's UndefinedError: an attribute of an undefined value
    QCOMPARE(errorOf("{% set m = {} %}\n  {{ m.content.strip() }}"),
             std::string("t: line 2, column 16: 'dict object' has no attribute 'content'"));
    QCOMPARE(errorOf("{{ nothing.x }}"),
             std::string("t: line 1, column 12: 'nothing' is undefined"));
    // ...but printing or testing the undefined value itself is fine
    QCOMPARE(render("[{{ m.content }}]{{ m.content is defined }}", Value::parse(R"({"m": {}})")),
             std::string("[]False"));
    QCOMPARE(
        errorOf("{{ 1 + 'a' }}"),
        std::string("t: line 1, column 6: unsupported operand type(s) for +: 'int' and 'str'"));
    QCOMPARE(errorOf("{{ [1].append(2) }}"),
             std::string("t: line 1, column 14: access to attribute 'append' of 'list' object is "
                         "unsafe."));
    QCOMPARE(errorOf("{% for x in 3 %}{% endfor %}"),
             std::string("t: line 1, column 13: 'int' object is not iterable"));
    // an error inside a macro names the place in the macro
    QCOMPARE(errorOf("{% macro m(x) %}\n{{ x.y.z }}{% endmacro %}{{ m({}) }}"),
             std::string("t: line 2, column 8: 'dict object' has no attribute 'y'"));
    QCOMPARE(errorOf("{% set xs = [] %}", Value::parse("[1]")),
             std::string("t: the context must be a JSON object"));
}

void TestJinja::raiseException()
{
    const Template t("{% if messages[0].role != 'user' %}"
                     "{{ raise_exception('Conversation roles must alternate!') }}{% endif %}ok",
                     "models/x/tokenizer_config.json: chat_template");
    QCOMPARE(t.render(Value::parse(R"({"messages": [{"role": "user"}]})")).text, std::string("ok"));
    try {
        t.render(Value::parse(R"({"messages": [{"role": "system"}]})"));
        QFAIL("raise_exception did not throw");
    } catch (const tb::jinja::RaisedError& e) {
        QCOMPARE(e.message(), std::string("Conversation roles must alternate!"));
        QCOMPARE(std::string(e.what()),
                 std::string("models/x/tokenizer_config.json: chat_template: Conversation roles "
                             "must alternate!"));
    }
}

void TestJinja::generationSpans()
{
    const Template t("{% for m in messages %}<{{ m.role }}>"
                     "{% if m.role == 'assistant' %}{% generation %}{{ m.content }}</s>"
                     "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
                     "t");
    QVERIFY(t.hasGenerationBlocks());
    QVERIFY(!Template("{{ 1 }}", "t").hasGenerationBlocks());
    const auto r = t.render(Value::parse(R"({"messages": [{"role": "user", "content": "hé"},
        {"role": "assistant", "content": "ok"}, {"role": "assistant", "content": "😀"}]})"));
    QCOMPARE(r.text, std::string("<user>hé<assistant>ok</s><assistant>😀</s>"));
    QCOMPARE(r.generation.size(), size_t{2});
    QCOMPARE(r.text.substr(r.generation[0].begin, r.generation[0].end - r.generation[0].begin),
             std::string("ok</s>"));
    QCOMPARE(r.text.substr(r.generation[1].begin, r.generation[1].end - r.generation[1].begin),
             std::string("😀</s>"));
}

void TestJinja::hostileTemplatesStopCleanly()
{
    using tbtest::contains;
    // nesting too deep for the parser: parentheses, blocks, filter chains
    QVERIFY(contains(errorOf("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
                     "nested more than"));
    std::string blocks;
    for (int i = 0; i < 1000; ++i)
        blocks += "{% if true %}";
    QVERIFY(contains(errorOf(blocks), "nested more than"));
    std::string chain = "{{ x";
    for (int i = 0; i < 5000; ++i)
        chain += "|string";
    QVERIFY(contains(errorOf(chain + " }}"), "nested more than"));
    // unbounded recursion, work and output
    QVERIFY(contains(errorOf("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
                     "macro calls nested more than 200 deep"));
    QVERIFY(contains(errorOf("{% for i in range(100000) %}{% for j in range(100000) %}"
                             "{% endfor %}{% endfor %}"),
                     "steps"));
    QVERIFY(contains(errorOf("{{ 'x' * 1000000000 }}"), "MiB"));
    QVERIFY(contains(errorOf("{% set ns = namespace(s='ab') %}{% for i in range(40) %}"
                             "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
                     "MiB"));
    QVERIFY(contains(errorOf("{{ range(100001)|length }}"), "Range too big"));
    QVERIFY(contains(errorOf("{{ 2 ** 64 }}"), "integer overflow"));
    // a namespace holding itself (a cycle) prints with a depth limit and is freed
    QVERIFY(contains(errorOf("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"),
                     "nested too deeply"));
}

// The deepest evaluation the limits allow (1500 nested evaluations: recursive macros around the
// longest filter chain) on a thread with a 1 MiB stack ends in the depth error, not a crash.
void TestJinja::deepTemplatesFitASmallStack()
{
    std::string chain;
    for (int i = 0; i < 390; ++i)
        chain += "|string";
    struct Job {
        std::string source;
        std::string error;
    } job{"{% macro f(n) %}{% if n > 0 %}{{ f(n - 1)" + chain +
              " }}{% endif %}{% endmacro %}{{ f(20) }}",
          {}};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t{1} << 20);
    pthread_t thread;
    auto run = [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        j->error = errorOf(j->source);
        return nullptr;
    };
    QCOMPARE(pthread_create(&thread, &attr, run, &job), 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
    QVERIFY2(tbtest::contains(job.error, "nested or recursing more than 1500 levels deep"),
             job.error.c_str());
}

void TestJinja::randomBytesNeverCrash()
{
    // Mutations of a real template: every outcome is a render or a tb::Error.
    const std::string base =
        "{%- for m in messages -%}{{- '<|' + m['role'] + '|>\\n' -}}{% if m.content is string %}"
        "{{ m.content|trim }}{% else %}{{ m.content|tojson(indent=2) }}{% endif %}"
        "{%- if not loop.last %}\n{% endif %}{%- endfor -%}{% if add_generation_prompt %}x{% endif "
        "%}";
    const Value context = Value::parse(
        R"({"messages": [{"role": "user", "content": " a "}, {"role": "b", "content": [1]}],
            "add_generation_prompt": true})");
    std::mt19937 rng(7);
    const std::string alphabet = "{}%#-+()[]|~'\". \n_abcxyz0123456789=!<>*/";
    int rendered = 0;
    for (int i = 0; i < 3000; ++i) {
        std::string s = base;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits; ++k) {
            const size_t at = rng() % (s.size() + 1);
            switch (rng() % 3) {
            case 0:
                s.insert(at, 1, alphabet[rng() % alphabet.size()]);
                break;
            case 1:
                if (at < s.size())
                    s.erase(at, 1);
                break;
            default:
                if (at < s.size())
                    s[at] = static_cast<char>(rng() % 256);
            }
        }
        try {
            Template(s, "fuzz").render(context);
            ++rendered;
        } catch (const tb::Error&) {
        }
    }
    QVERIFY(rendered > 100);
}

void TestJinja::concurrentRenders()
{
    const Template t("{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + x %}"
                     "{% endfor %}{{ ns.n }}",
                     "t");
    std::vector<std::string> out(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&, i] {
            Value xs = Value::array();
            for (int k = 0; k <= 1000 * (i + 1); ++k)
                xs.push_back(k);
            for (int r = 0; r < 20; ++r)
                out[static_cast<size_t>(i)] = t.render(Value{{"xs", xs}}).text;
        });
    for (auto& th : threads)
        th.join();
    QCOMPARE(out[0], std::string("500500"));
    QCOMPARE(out[3], std::string("8002000"));
}

void TestJinja::strftimeUsesClock()
{
    const std::string year = render("{{ strftime_now('%Y') }}");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    QCOMPARE(year, std::to_string(local.tm_year + 1900));
    QCOMPARE(
        Template("{{ strftime_now('%d %B %Y') }}", "t", tbtest::pinnedClock("2025-03-14T09:26:53"))
            .render(Value::object())
            .text,
        std::string("14 March 2025"));
}

void TestJinja::chatTemplateContext()
{
    const Value messages = Value::parse(R"([
        {"role": "user", "content": "hi", "name": null},
        {"role": "assistant", "content": null, "reasoning": "hmm", "tool_calls": [{"id": 1}]}])");
    const Value context = tb::jinja::chatTemplateContext(
        messages, nullptr, true, Value{{"bos_token", "<s>"}, {"enable_thinking", false}});
    QCOMPARE(
        context["messages"].dump(),
        std::string(R"([{"role":"user","content":"hi"},{"thinking":"hmm","role":"assistant",)"
                    R"("reasoning":"hmm","tool_calls":[{"id":1}],"reasoning_content":"hmm"}])"));
    QCOMPARE(context["tools"], Value(nullptr));
    QCOMPARE(context["add_generation_prompt"], Value(true));
    QCOMPARE(context["bos_token"], Value("<s>"));
    QCOMPARE(render("{{ bos_token }}{% for m in messages %}{{ m.content is defined }}{% endfor %}"
                    "{{ enable_thinking }}",
                    context),
             std::string("<s>TrueFalseFalse"));
}

QTEST_GUILESS_MAIN(TestJinja)
#include "test_jinja.moc"
