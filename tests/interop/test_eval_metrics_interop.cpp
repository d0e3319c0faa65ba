// Interop: ROUGE-1/2/L (with and without the stemmer) against Google's rouge-score, SQuAD exact
// match and token F1 against the v1.1 script's arithmetic, the Porter stemmer against nltk's, and
// the bootstrap's quantiles against numpy (tests/interop/eval_metrics_oracle.py, one process), on
// a deterministic generated corpus full of hard cases.
#include "eval/bootstrap.h"
#include "eval/porter_stemmer.h"
#include "eval/rouge.h"
#include "eval/squad.h"

#include "interop/oracle_util.h"
#include "test_util.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>
#include <sstream>

using nlohmann::json;

namespace {

struct Case {
    std::string prediction;
    std::vector<std::string> references;
};

// Hand-written hard cases: articles, punctuation, casing, Unicode, empty sides, repeats, numbers.
const std::vector<Case> kHardCases = {
    {"", {""}},
    {"", {"the cat"}},
    {"the cat", {""}},
    {"The", {"a"}},
    {"A an THE", {""}},
    {"an apple", {"apple"}},
    {"Theatre anathema", {"theatre anathema"}},
    {"the_cat", {"the cat"}},
    {"a-b", {"ab"}},
    {"e.g. the U.S.A.", {"eg usa"}},
    {"don't stop", {"dont stop"}},
    {"3.14 1,000 42", {"314 1000 42"}},
    {"COVID-19 in 2020", {"covid19 in 2020"}},
    {"cat cat cat", {"cat"}},
    {"cat", {"cat cat cat"}},
    {"the the the", {"the"}},
    {"Café naïve résumé", {"cafe naive resume", "café naïve résumé"}},
    {"CAFÉ", {"café"}},
    {"\xC4\xB0stanbul", {"istanbul"}},  // U+0130: lower() gives "i" + U+0307
    {"\xE2\x84\xAA"
     "elvin",
     {"kelvin"}},  // U+212A KELVIN SIGN lowers to ASCII k
    {"\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3", {"\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82"}},  // final sigma
    {"\xCE\xA3\xCE\x91\xCE\xA3 \xCE\xA3", {"\xCF\x83\xCE\xB1\xCF\x82 \xCF\x83"}},
    {"stra\xC3\x9F"
     "e",
     {"STRASSE"}},
    {"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E text", {"text \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"}},
    {"emoji \xF0\x9F\x98\x80 here", {"emoji here"}},
    {"e\xCC\x81the a", {"e the"}},  // a combining mark is no \w: "the" stands alone
    {"x\xC2\xB2the", {"x the"}},    // superscript two is \w: no boundary before "the"
    {"a\xC2\xA0the\xE3\x80\x80"
     "b",
     {"b"}},  // no-break and ideographic spaces
    {"line\xE2\x80\xA8sep\x1C"
     "x",
     {"line sep x"}},
    {"zero\xE2\x80\x8Bwidth", {"zero width"}},
    {"tab\tand\nnewline", {"tab and newline"}},
    {"\xE2\x80\x9Cquoted\xE2\x80\x9D \xC2\xABword\xC2\xBB", {"quoted word"}},
    {"\xEF\xAC\x81ne", {"fine"}},       // ligature
    {"\xD9\xA3 apples", {"3 apples"}},  // Arabic-Indic digit three
    {"running runs ran runner", {"run"}},
    {"generalizations organizational", {"general organ"}},
    {"happiness happily happy", {"happi"}},
    {"flies dying lying news skies", {"fly die lie news sky"}},
    {"the quick brown fox jumps over the lazy dog",
     {"the quick brown dog jumps on the log", "a quick fox", "lazy"}},
    {"police killed the gunman", {"police kill the gunman", "the gunman police killed"}},
    {"Yes", {"yes.", "Yes!"}},
    {"no", {"No", "no way"}},
    {"...", {"!!!"}},
    {"   ", {"\t"}},
};

// Pieces the generator draws from: words (inflected ones for the stemmer), articles in several
// casings, punctuation, numbers and Unicode.
const std::vector<std::string> kPieces = {"the",
                                          "The",
                                          "THE",
                                          "a",
                                          "A",
                                          "an",
                                          "An",
                                          "cat",
                                          "cats",
                                          "Cat",
                                          "dog",
                                          "dogs",
                                          "running",
                                          "runs",
                                          "ran",
                                          "happily",
                                          "happiness",
                                          "connection",
                                          "connected",
                                          "connecting",
                                          "agreed",
                                          "feed",
                                          "plastered",
                                          "motoring",
                                          "sing",
                                          "conflated",
                                          "troubled",
                                          "sized",
                                          "hopping",
                                          "tanned",
                                          "falling",
                                          "hissing",
                                          "fizzed",
                                          "failing",
                                          "filing",
                                          "relational",
                                          "conditional",
                                          "rational",
                                          "digitizer",
                                          "operator",
                                          "feudalism",
                                          "decisiveness",
                                          "hopefulness",
                                          "callousness",
                                          "formality",
                                          "sensitivity",
                                          "sensibility",
                                          "triplicate",
                                          "formative",
                                          "formalize",
                                          "electrical",
                                          "goodness",
                                          "revival",
                                          "allowance",
                                          "inference",
                                          "airliner",
                                          "gyroscopic",
                                          "adjustable",
                                          "defensible",
                                          "irritant",
                                          "replacement",
                                          "adjustment",
                                          "dependent",
                                          "adoption",
                                          "communism",
                                          "activate",
                                          "angularity",
                                          "homologous",
                                          "effective",
                                          "bowdlerize",
                                          "probate",
                                          "rate",
                                          "cease",
                                          "controlling",
                                          "roll",
                                          "generalizations",
                                          "sky",
                                          "skies",
                                          "dying",
                                          "news",
                                          "flies",
                                          "ponies",
                                          "caresses",
                                          "toy",
                                          "syzygy",
                                          "yyyy",
                                          "by",
                                          "is",
                                          "as",
                                          "e-mail",
                                          "don't",
                                          "U.S.A.",
                                          "3.14",
                                          "1,000",
                                          "42",
                                          "2nd",
                                          "COVID-19",
                                          "x2",
                                          "abc123ing",
                                          ",",
                                          ".",
                                          "!",
                                          "?",
                                          "...",
                                          "-",
                                          "'",
                                          "\"",
                                          "(",
                                          ")",
                                          "_",
                                          "a_b",
                                          "#1",
                                          "@user",
                                          "\xE2\x80\x94",
                                          "\xE2\x80\x9C",
                                          "\xE2\x80\x9D",
                                          "\xC2\xAB",
                                          "\xC2\xBB",
                                          "na\xC3\xAFve",
                                          "caf\xC3\xA9",
                                          "CAF\xC3\x89",
                                          "r\xC3\xA9sum\xC3\xA9",
                                          "stra\xC3\x9F"
                                          "e",
                                          "STRASSE",
                                          "\xC4\xB0stanbul",
                                          "\xE2\x84\xAA"
                                          "elvin",
                                          "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3",
                                          "\xCE\xBF\xCE\xB4\xCF\x8C\xCF\x82",
                                          "\xE6\x97\xA5\xE6\x9C\xAC",
                                          "\xF0\x9F\x98\x80",
                                          "e\xCC\x81",
                                          "x\xC2\xB2",
                                          "\xD9\xA3",
                                          "\xE2\x85\xAB",
                                          "\xE2\x91\xA0",
                                          "\xEF\xAC\x81ne"};

const std::vector<std::string> kSeparators = {" ",  " ",  " ",        "  ",           "\t", "\n",
                                              ", ", ". ", "\xC2\xA0", "\xE3\x80\x80", "-",  ""};

std::string randomText(std::mt19937_64& rng, size_t maxWords)
{
    const size_t words = rng() % (maxWords + 1);
    std::string out;
    for (size_t w = 0; w < words; ++w) {
        if (w)
            out += kSeparators[rng() % kSeparators.size()];
        out += kPieces[rng() % kPieces.size()];
    }
    return out;
}

// A prediction near the reference: words dropped, repeated, swapped or replaced, or its case
// changed; sometimes an unrelated text or nothing.
std::string mutate(std::mt19937_64& rng, const std::string& reference)
{
    const unsigned kind = rng() % 8;
    if (kind == 0)
        return "";
    if (kind == 1)
        return randomText(rng, 10);
    std::vector<std::string> words;
    std::istringstream in(reference);
    for (std::string w; in >> w;)
        words.push_back(w);
    for (int edits = 1 + int(rng() % 3); edits > 0 && !words.empty(); --edits) {
        const size_t at = rng() % words.size();
        switch (rng() % 4) {
        case 0:
            words.erase(words.begin() + std::ptrdiff_t(at));
            break;
        case 1:
            words.insert(words.begin() + std::ptrdiff_t(at), words[at]);
            break;
        case 2:
            std::swap(words[at], words[rng() % words.size()]);
            break;
        default:
            words[at] = kPieces[rng() % kPieces.size()];
            break;
        }
    }
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : (kind == 2 ? "  " : " ")) + w;
    if (kind == 3)
        for (char& c : out)
            if (c >= 'a' && c <= 'z')
                c = static_cast<char>(c - 'a' + 'A');
    return out;
}

std::vector<Case> corpus()
{
    std::vector<Case> cases = kHardCases;
    std::mt19937_64 rng(20240607);
    while (cases.size() < 640) {
        Case c;
        const size_t refs = 1 + rng() % 3;
        for (size_t r = 0; r < refs; ++r)
            c.references.push_back(randomText(rng, r == 0 ? 14 : 8));
        c.prediction = mutate(rng, c.references[0]);
        cases.push_back(std::move(c));
    }
    return cases;
}

// Stems x suffixes: every rule of every step, plus 'y' runs, digits and short words.
std::vector<std::string> stemmerWords()
{
    const std::vector<std::string> stems = {
        "connect",   "relat",   "condit",  "rat",    "valen",   "hesit",    "digit",  "conform",
        "radic",     "differ",  "vil",     "analog", "vietnam", "predic",   "oper",   "feud",
        "decis",     "hope",    "callous", "formal", "sensit",  "sensib",   "tripl",  "electr",
        "good",      "reviv",   "allow",   "infer",  "airlin",  "gyroscop", "adjust", "defens",
        "irrit",     "replac",  "depend",  "adopt",  "homolog", "commun",   "activ",  "angular",
        "effect",    "bowdler", "prob",    "ceas",   "control", "ro",       "fil",    "fail",
        "hop",       "tann",    "fall",    "hiss",   "fizz",    "plaster",  "motor",  "agr",
        "fe",        "s",       "sp",      "tr",     "happ",    "enjo",     "geo",    "theo",
        "archaeo",   "philo",   "b",       "by",     "syzyg",   "to",       "yy",     "ab1",
        "x9",        "gener",   "organ",   "nation", "ration",  "cri",      "di",     "ti",
        "generaliz", "univers", "sky",     "news",   "inn",     "out",      "cann",   "how",
        "proc",      "exc",     "succ",    "abl",    "ment",    "e",        "i",      "a"};
    const std::vector<std::string> suffixes = {
        "",        "s",       "es",       "ies",   "sses",   "ss",    "ied",     "ed",
        "eed",     "ing",     "ings",     "y",     "ly",     "ily",   "ational", "tional",
        "enci",    "anci",    "izer",     "bli",   "abli",   "alli",  "entli",   "eli",
        "ousli",   "ization", "izations", "ation", "ations", "ator",  "alism",   "iveness",
        "fulness", "ousness", "aliti",    "iviti", "biliti", "fulli", "logi",    "logy",
        "icate",   "ative",   "alize",    "iciti", "ical",   "ful",   "ness",    "al",
        "ance",    "ence",    "er",       "ers",   "ic",     "able",  "ible",    "ant",
        "ement",   "ment",    "ent",      "ion",   "sion",   "tion",  "ou",      "ism",
        "ate",     "iti",     "ous",      "ive",   "ize",    "e",     "ll",      "lled",
        "lling",   "at",      "bl",       "iz",    "ating",  "bling", "izing",   "ated",
        "yed",     "ying",    "eer",      "edly",  "ingly",  "ities"};
    std::vector<std::string> words;
    for (const auto& stem : stems)
        for (const auto& suffix : suffixes)
            words.push_back(stem + suffix);
    for (const char* w :
         {"yyyy",    "yyyyy",  "ayyy",    "y",     "ay",      "ya",      "yes",      "eyes",
          "ies",     "ied",    "sses",    "ss",    "s",       "ed",      "ing",      "eed",
          "tie",     "ties",   "tied",    "pies",  "spies",   "spied",   "died",     "dies",
          "dying",   "lying",  "tying",   "skies", "innings", "outings", "cannings", "howe",
          "proceed", "exceed", "succeed", "ll",    "all",     "fall",    "falll",    "controll",
          "1234",    "12ing",  "ab",      "abc"})
        words.emplace_back(w);
    return words;
}

std::vector<json> quantileSets()
{
    std::mt19937_64 rng(5);
    std::vector<json> sets;
    for (size_t n : {size_t(1), size_t(2), size_t(5), size_t(40), size_t(1000)}) {
        std::vector<double> values;
        for (size_t i = 0; i < n; ++i)
            values.push_back(double(rng() % 1000) / 7.0 - 50.0);  // ties included
        sets.push_back(
            {{"values", values},
             {"q", {0.0, 0.025, 0.05, 0.1, 0.25, 1.0 / 3.0, 0.5, 0.75, 0.95, 0.975, 1.0}}});
    }
    return sets;
}

tb::eval::MetricInput inputOf(const Case& c)
{
    tb::eval::MetricInput input;
    input.prediction = c.prediction;
    input.references = c.references;
    return input;
}

std::string quoted(const std::string& s)
{
    return json(s).dump();
}

}  // namespace

class TestEvalMetricsInterop : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void rougeMatchesRougeScore();
    void squadMatchesOfficialArithmetic();
    void porterStemmerMatchesNltk();
    void quantilesMatchNumpy();

private:
    std::vector<Case> m_cases;
    json m_oracle;
};

void TestEvalMetricsInterop::initTestCase()
{
    if (!QFileInfo::exists(QStringLiteral(TB_PYTHON)))
        QSKIP("the Python oracle venv is missing (run scripts/setup)");
    m_cases = corpus();
    json cases = json::array();
    for (const Case& c : m_cases)
        cases.push_back({{"prediction", c.prediction}, {"references", c.references}});
    const json input = {{"cases", cases}, {"words", stemmerWords()}, {"quantiles", quantileSets()}};
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = tbtest::writeText(dir, "input.json", input.dump());
    QString error;
    const QByteArray out = tbtest::runOracleScript(QStringLiteral("eval_metrics_oracle.py"),
                                                   {QString::fromStdString(path)}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_oracle = json::parse(out.toStdString());
    QCOMPARE(m_oracle["cases"].size(), m_cases.size());
}

// Per example and for the corpus mean, each variant within 1e-9 of rouge-score.
void TestEvalMetricsInterop::rougeMatchesRougeScore()
{
    QVERIFY(m_cases.size() >= 500);
    for (bool stemmer : {false, true}) {
        for (int n : {1, 2, tb::eval::kRougeL}) {
            const auto metric = tb::eval::makeRougeMetric(n, stemmer);
            const std::string key = metric->name() + (stemmer ? "_stem" : "");
            std::vector<double> sum(2, 0.0);
            int mismatches = 0;
            std::string first;
            for (size_t i = 0; i < m_cases.size(); ++i) {
                const tb::eval::MetricInput input = inputOf(m_cases[i]);
                const auto stats = metric->stats(input);
                sum[0] += stats[0];
                sum[1] += stats[1];
                const double expected = m_oracle["cases"][i][key].get<double>();
                if (std::abs(metric->exampleScore(input) - expected) > 1e-9) {
                    if (mismatches++ == 0)
                        first = tb::cat("case ", i, ": ", quoted(m_cases[i].prediction), " vs ",
                                        json(m_cases[i].references).dump(), ": ours ",
                                        metric->exampleScore(input), ", rouge-score ", expected);
                }
            }
            QVERIFY2(mismatches == 0, qPrintable(QString::fromStdString(
                                          tb::cat(key, ": ", mismatches, " mismatches; ", first))));
            const double mean = m_oracle["means"][key].get<double>();
            QVERIFY2(std::abs(metric->score(sum) - mean) <= 1e-9,
                     qPrintable(QString::fromStdString(
                         tb::cat(key, ": mean ", metric->score(sum), " vs ", mean))));
            // not a constant: the corpus spans the range
            QVERIFY2(mean > 0.05 && mean < 0.95, key.c_str());
        }
    }
}

// Exact match and token F1 per example and as corpus means, within 1e-9.
void TestEvalMetricsInterop::squadMatchesOfficialArithmetic()
{
    for (const auto& metric : {tb::eval::makeExactMatchMetric(), tb::eval::makeTokenF1Metric()}) {
        std::vector<double> sum(2, 0.0);
        int mismatches = 0, ones = 0;
        std::string first;
        for (size_t i = 0; i < m_cases.size(); ++i) {
            const tb::eval::MetricInput input = inputOf(m_cases[i]);
            const auto stats = metric->stats(input);
            sum[0] += stats[0];
            sum[1] += stats[1];
            ones += stats[0] == 1.0;
            const double expected = m_oracle["cases"][i][metric->name()].get<double>();
            if (std::abs(stats[0] - expected) > 1e-9 && mismatches++ == 0)
                first = tb::cat("case ", i, ": ", quoted(m_cases[i].prediction), " vs ",
                                json(m_cases[i].references).dump(), ": ours ", stats[0],
                                ", reference ", expected, "; normalised ",
                                quoted(tb::eval::normalizeSquadAnswer(m_cases[i].prediction)));
        }
        QVERIFY2(mismatches == 0, qPrintable(QString::fromStdString(tb::cat(
                                      metric->name(), ": ", mismatches, " mismatches; ", first))));
        const double mean = m_oracle["means"][metric->name()].get<double>();
        QVERIFY(std::abs(metric->score(sum) - mean) <= 1e-9);
        QVERIFY2(ones > 20 && ones < int(m_cases.size()) - 20, metric->name().c_str());
    }
}

void TestEvalMetricsInterop::porterStemmerMatchesNltk()
{
    const json& stems = m_oracle["stems"];
    QVERIFY2(stems.size() > 8000, qPrintable(QString::number(stems.size())));
    int mismatches = 0, changed = 0;
    std::string examples;
    for (const auto& pair : stems) {
        const std::string word = pair[0].get<std::string>();
        const std::string expected = pair[1].get<std::string>();
        const std::string ours = tb::eval::porterStem(word);
        changed += ours != word;
        if (ours != expected && mismatches++ < 10)
            examples += word + " -> " + ours + " (nltk " + expected + "); ";
    }
    QVERIFY2(mismatches == 0,
             qPrintable(QString::fromStdString(tb::cat(mismatches, " mismatches: ", examples))));
    QVERIFY(changed > int(stems.size()) / 2);
}

void TestEvalMetricsInterop::quantilesMatchNumpy()
{
    const auto sets = quantileSets();
    QCOMPARE(m_oracle["quantiles"].size(), sets.size());
    for (size_t s = 0; s < sets.size(); ++s) {
        std::vector<double> values = sets[s]["values"].get<std::vector<double>>();
        std::sort(values.begin(), values.end());
        const auto qs = sets[s]["q"].get<std::vector<double>>();
        for (size_t k = 0; k < qs.size(); ++k) {
            const double expected = m_oracle["quantiles"][s][k].get<double>();
            const double ours = tb::eval::quantileSorted(values, qs[k]);
            QVERIFY2(std::abs(ours - expected) <= 1e-12 * std::max(1.0, std::abs(expected)),
                     qPrintable(QString::fromStdString(tb::cat("n=", values.size(), " q=", qs[k],
                                                               ": ", ours, " vs ", expected))));
        }
    }
}

QTEST_GUILESS_MAIN(TestEvalMetricsInterop)
#include "test_eval_metrics_interop.moc"
