// Interop: test_jinja's case table against jinja2 itself, through transformers' chat-template
// environment (tests/interop/jinja_oracle.py, one process for all cases): every expected text is
// what jinja2 renders, every expected failure fails there too, and {% generation %} spans agree.
#include "tokenizer/jinja.h"

#include "core/tokenizer/jinja_cases.h"
#include "core/tokenizer/jinja_test_util.h"
#include "interop/oracle_util.h"
#include "test_util.h"

#include <QtTest>

using tb::jinja::Value;

class TestJinjaInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void casesMatchJinja2_data();
    void casesMatchJinja2();

private:
    Value m_oracle;
};

void TestJinjaInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    Value cases = Value::array();
    for (const tbtest::JinjaCase& c : tbtest::kJinjaCases) {
        Value one = {{"template", c.source}, {"context", Value::parse(c.context)}};
        if (c.now)
            one["now"] = c.now;
        cases.push_back(std::move(one));
    }
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string input = tbtest::writeText(dir, "cases.json", cases.dump());
    QString error;
    const QByteArray out = tbtest::runOracleScript(QStringLiteral("jinja_oracle.py"),
                                                   {QString::fromStdString(input)}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_oracle = Value::parse(out.toStdString());
    QCOMPARE(m_oracle.size(), std::size(tbtest::kJinjaCases));
}

void TestJinjaInterop::casesMatchJinja2_data()
{
    QTest::addColumn<int>("index");
    for (size_t i = 0; i < std::size(tbtest::kJinjaCases); ++i)
        QTest::newRow(tbtest::kJinjaCases[i].name) << static_cast<int>(i);
}

void TestJinjaInterop::casesMatchJinja2()
{
    QFETCH(int, index);
    const tbtest::JinjaCase& c = tbtest::kJinjaCases[index];
    const Value& ref = m_oracle[static_cast<size_t>(index)];
    if (!c.expected) {
        QVERIFY2(ref.contains("error"), ref.dump().c_str());
        return;
    }
    QVERIFY2(ref.contains("text"), ref.dump().c_str());
    QCOMPARE(ref["text"].get<std::string>(), std::string(c.expected));
    // the spans: ours from the interpreter, jinja2's from transformers' AssistantTracker
    const auto rendered = tb::jinja::Template(c.source, "case", tbtest::pinnedClock(c.now))
                              .render(Value::parse(c.context));
    Value spans = Value::array();
    for (const auto& s : rendered.generation)
        spans.push_back({s.begin, s.end});
    QCOMPARE(spans.dump(), ref["generation"].dump());
}

QTEST_GUILESS_MAIN(TestJinjaInterop)
#include "test_jinja_interop.moc"
