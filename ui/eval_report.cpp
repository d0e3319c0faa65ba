// Report writers: the score table from a scorecard or a single result, Markdown, HTML and CSV
// text, atomic writes and the word diff.
#include "eval_report.h"

#include "eval_controller.h"
#include "metric_units.h"

#include "eval/metric.h"

#include <QSaveFile>
#include <QStringBuilder>

#include <algorithm>
#include <exception>

namespace tb {

bool metricHigherIsBetter(const std::string& name)
{
    try {
        return eval::makeMetric(name)->higherIsBetter();
    } catch (const std::exception&) {
        return true;  // terminology (needs its glossary) and names of newer metrics
    }
}

bool metricDirectional(const std::string& name)
{
    try {
        return eval::makeMetric(name)->directional();
    } catch (const std::exception&) {
        return true;
    }
}

ScoreTable scoreTable(const EvalOutcome& outcome)
{
    ScoreTable t;
    if (outcome.scorecard) {
        const eval::Scorecard& sc = *outcome.scorecard;
        t.metrics = sc.metrics;
        t.higherIsBetter = sc.higherIsBetter;
        t.directional = sc.directional;
        t.examples = sc.examples;
        for (const eval::ScorecardSystem& s : sc.systems)
            t.systems << QString::fromStdString(s.label);
        for (size_t m = 0; m < sc.metrics.size(); ++m) {
            std::vector<ScoreCell> row;
            for (const eval::ScorecardCell& c : sc.cells[m]) {
                ScoreCell cell{c.score.score, c.score.ci.lo, c.score.ci.hi, {}, 0, 0, false, false};
                if (c.delta) {
                    cell.delta = c.delta->delta;
                    cell.deltaLo = c.delta->ci.lo;
                    cell.deltaHi = c.delta->ci.hi;
                    cell.excludesZero = c.delta->excludesZero;
                    cell.directional = sc.directional[m];
                    cell.better = cell.directional && c.delta->excludesZero &&
                                  (c.delta->delta > 0) == sc.higherIsBetter[m];
                }
                row.push_back(cell);
            }
            t.cells.push_back(std::move(row));
        }
        return t;
    }
    if (outcome.results.empty())
        return t;
    const eval::EvalResult& r = outcome.results.front();
    t.systems << (outcome.labels.isEmpty() ? QStringLiteral("base") : outcome.labels.front());
    t.examples = static_cast<int64_t>(r.predictions.size());
    for (const std::string& name : r.metricOrder) {
        const auto it = r.metrics.find(name);
        if (it == r.metrics.end())
            continue;
        t.metrics.push_back(name);
        t.higherIsBetter.push_back(metricHigherIsBetter(name));
        t.directional.push_back(metricDirectional(name));
        ScoreCell cell;
        cell.score = it->second.score;
        cell.lo = it->second.ci.lo;
        cell.hi = it->second.ci.hi;
        t.cells.push_back({cell});
    }
    return t;
}

QString verdictText(const ScoreCell& cell)
{
    if (!cell.delta)
        return {};
    if (!cell.excludesZero)
        return QStringLiteral("no clear difference");
    if (!cell.directional)
        return *cell.delta > 0 ? QStringLiteral("longer") : QStringLiteral("shorter");
    return cell.better ? QStringLiteral("better") : QStringLiteral("worse");
}

QString promptText(const eval::EvalCase& c)
{
    if (!c.source.empty())
        return QString::fromStdString(c.source);
    QStringList turns;
    for (const ChatMessage& m : c.prompt)
        turns << QString::fromStdString(m.content);
    return turns.join(QLatin1Char('\n'));
}

QString referenceText(const eval::EvalCase& c)
{
    QStringList refs;
    for (const std::string& r : c.references)
        refs << QString::fromStdString(r);
    return refs.join(QStringLiteral(" | "));
}

QString htmlEscape(const QString& text)
{
    QString out;
    out.reserve(text.size());
    for (const QChar ch : text) {
        switch (ch.unicode()) {
        case '&':
            out += QStringLiteral("&amp;");
            break;
        case '<':
            out += QStringLiteral("&lt;");
            break;
        case '>':
            out += QStringLiteral("&gt;");
            break;
        case '"':
            out += QStringLiteral("&quot;");
            break;
        case '\'':
            out += QStringLiteral("&#39;");
            break;
        default:
            out += ch;
        }
    }
    return out;
}

QString csvField(const QString& text)
{
    const bool quote = text.contains(QLatin1Char(',')) || text.contains(QLatin1Char('"')) ||
                       text.contains(QLatin1Char('\n')) || text.contains(QLatin1Char('\r'));
    if (!quote)
        return text;
    QString inner = text;
    inner.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + inner + QLatin1Char('"');
}

namespace {

QString interval(const std::string& metric, double v, double lo, double hi)
{
    return formatScore(metric, v) + QStringLiteral(" [") + formatScore(metric, lo) +
           QStringLiteral(", ") + formatScore(metric, hi) + QLatin1Char(']');
}

QString signedScore(const std::string& metric, double v)
{
    return (v >= 0 ? QStringLiteral("+") : QString()) + formatScore(metric, v);
}

// The metrics scored per example (those of the first system), in order.
std::vector<std::string> exampleMetrics(const EvalOutcome& o)
{
    return o.scorecard
               ? o.scorecard->metrics
               : (o.results.empty() ? std::vector<std::string>{} : o.results.front().metricOrder);
}

double exampleScore(const eval::EvalPrediction& p, const std::string& metric)
{
    const auto it = p.scores.find(metric);
    return it == p.scores.end() ? 0.0 : it->second;
}

}  // namespace

QString reportMarkdown(const EvalOutcome& outcome)
{
    if (outcome.scorecard)
        return QString::fromStdString(eval::scorecardMarkdown(*outcome.scorecard));
    const ScoreTable t = scoreTable(outcome);
    QString md = QStringLiteral("# Evaluation\n\n%1 held-out cases, 95% bootstrap intervals.\n\n"
                                "| metric | %2 |\n|---|---|\n")
                     .arg(t.examples)
                     .arg(t.systems.value(0));
    for (size_t m = 0; m < t.metrics.size(); ++m) {
        const ScoreCell& c = t.cells[m][0];
        md += QStringLiteral("| %1 | %2 |\n")
                  .arg(QString::fromStdString(t.metrics[m]),
                       interval(t.metrics[m], c.score, c.lo, c.hi));
    }
    return md;
}

QString reportHtml(const EvalOutcome& outcome)
{
    const ScoreTable t = scoreTable(outcome);
    QString h = QStringLiteral(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Tunebench evaluation</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "th,td{border:1px solid #bbb;padding:4px 8px;vertical-align:top;text-align:left}"
        "th{background:#eee}.better{background:#d5f5e3}.worse{background:#fadbd8}"
        "td.text{white-space:pre-wrap;max-width:28em}</style></head><body>\n"
        "<h1>Evaluation</h1>\n");
    h += QStringLiteral("<p>%1 held-out cases; results in %2. Intervals are 95% bootstrap "
                        "intervals; differences are paired.</p>\n")
             .arg(t.examples)
             .arg(htmlEscape(outcome.dir));
    h += QStringLiteral("<h2>Scorecard</h2>\n<table><tr><th>metric</th>");
    for (const QString& s : t.systems)
        h += QStringLiteral("<th>") + htmlEscape(s) + QStringLiteral("</th>");
    for (qsizetype s = 1; s < t.systems.size(); ++s)
        h += QStringLiteral("<th>&Delta; ") + htmlEscape(t.systems[s]) + QStringLiteral("</th>");
    h += QStringLiteral("</tr>\n");
    for (size_t m = 0; m < t.metrics.size(); ++m) {
        const std::string& name = t.metrics[m];
        h += QStringLiteral("<tr><td>") + htmlEscape(QString::fromStdString(name)) +
             (!t.directional[m]     ? QStringLiteral(" (tokens)")
              : t.higherIsBetter[m] ? QString()
                                    : QStringLiteral(" (lower is better)")) +
             QStringLiteral("</td>");
        for (const ScoreCell& c : t.cells[m])
            h += QStringLiteral("<td>") + interval(name, c.score, c.lo, c.hi) +
                 QStringLiteral("</td>");
        for (size_t s = 1; s < t.cells[m].size(); ++s) {
            const ScoreCell& c = t.cells[m][s];
            const QString verdict = verdictText(c);
            const QString cls = !c.excludesZero || !c.directional ? QString()
                                : c.better ? QStringLiteral(" class=\"better\"")
                                           : QStringLiteral(" class=\"worse\"");
            h += QStringLiteral("<td%1>%2 [%3, %4] %5</td>")
                     .arg(cls, signedScore(name, *c.delta), formatScore(name, c.deltaLo),
                          formatScore(name, c.deltaHi), verdict);
        }
        h += QStringLiteral("</tr>\n");
    }
    h += QStringLiteral("</table>\n<h2>Cases</h2>\n<table><tr><th>id</th><th>prompt</th>"
                        "<th>reference</th>");
    const std::vector<std::string> metrics = exampleMetrics(outcome);
    for (const QString& s : outcome.labels)
        h += QStringLiteral("<th>") + htmlEscape(s) + QStringLiteral(" answer</th>");
    for (const std::string& m : metrics)
        for (const QString& s : outcome.labels)
            h += QStringLiteral("<th>") + htmlEscape(QString::fromStdString(m)) + QLatin1Char(' ') +
                 htmlEscape(s) + QStringLiteral("</th>");
    h += QStringLiteral("</tr>\n");
    const size_t rows = outcome.results.empty() ? 0 : outcome.results.front().predictions.size();
    for (size_t i = 0; i < rows; ++i) {
        const eval::EvalCase& c = outcome.results.front().predictions[i].input;
        h += QStringLiteral("<tr><td>") + htmlEscape(QString::fromStdString(c.id)) +
             QStringLiteral("</td><td class=\"text\">") + htmlEscape(promptText(c)) +
             QStringLiteral("</td><td class=\"text\">") + htmlEscape(referenceText(c)) +
             QStringLiteral("</td>");
        for (const eval::EvalResult& r : outcome.results)
            h += QStringLiteral("<td class=\"text\">") +
                 htmlEscape(QString::fromStdString(r.predictions[i].prediction)) +
                 QStringLiteral("</td>");
        for (const std::string& m : metrics)
            for (const eval::EvalResult& r : outcome.results)
                h += QStringLiteral("<td>") + formatScore(m, exampleScore(r.predictions[i], m)) +
                     QStringLiteral("</td>");
        h += QStringLiteral("</tr>\n");
    }
    h += QStringLiteral("</table>\n</body></html>\n");
    return h;
}

QString examplesCsv(const EvalOutcome& outcome)
{
    const std::vector<std::string> metrics = exampleMetrics(outcome);
    QStringList header{QStringLiteral("id"), QStringLiteral("record_id"), QStringLiteral("prompt"),
                       QStringLiteral("reference")};
    for (const QString& s : outcome.labels)
        header << s + QStringLiteral(" answer");
    for (const std::string& m : metrics)
        for (const QString& s : outcome.labels)
            header << QString::fromStdString(m) + QLatin1Char(' ') + s;
    auto line = [](const QStringList& fields) -> QString {
        QStringList quoted;
        for (const QString& f : fields)
            quoted << csvField(f);
        return quoted.join(QLatin1Char(',')) + QStringLiteral("\r\n");
    };
    QString out = line(header);
    const size_t rows = outcome.results.empty() ? 0 : outcome.results.front().predictions.size();
    for (size_t i = 0; i < rows; ++i) {
        const eval::EvalCase& c = outcome.results.front().predictions[i].input;
        QStringList f{QString::fromStdString(c.id),
                      c.recordId > 0 ? QString::number(c.recordId) : QString(), promptText(c),
                      referenceText(c)};
        for (const eval::EvalResult& r : outcome.results)
            f << QString::fromStdString(r.predictions[i].prediction);
        for (const std::string& m : metrics)
            for (const eval::EvalResult& r : outcome.results)
                f << QString::number(exampleScore(r.predictions[i], m), 'g', 10);
        out += line(f);
    }
    return out;
}

bool writeTextFile(const QString& path, const QString& text, QString* error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error)
            *error = file.errorString();
        return false;
    }
    file.write(text.toUtf8());
    if (!file.commit()) {
        if (error)
            *error = file.errorString();
        return false;
    }
    return true;
}

std::pair<QString, QString> wordDiffHtml(const QString& a, const QString& b)
{
    const QStringList wa = a.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    const QStringList wb = b.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    const qsizetype n = std::min<qsizetype>(wa.size(), 2000),
                    m = std::min<qsizetype>(wb.size(), 2000);
    // Longest common subsequence of words; the words outside it differ.
    std::vector<std::vector<int>> lcs(size_t(n + 1), std::vector<int>(size_t(m + 1), 0));
    for (qsizetype i = n - 1; i >= 0; --i)
        for (qsizetype j = m - 1; j >= 0; --j)
            lcs[i][j] =
                wa[i] == wb[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    QStringList outA, outB;
    qsizetype i = 0, j = 0;
    const QString del = QStringLiteral("<span style=\"background:#fadbd8;text-decoration:"
                                       "line-through\">%1</span>");
    const QString ins = QStringLiteral("<span style=\"background:#d5f5e3\">%1</span>");
    while (i < n || j < m) {
        if (i < n && j < m && wa[i] == wb[j]) {
            outA << htmlEscape(wa[i++]);
            outB << htmlEscape(wb[j++]);
        } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
            outB << ins.arg(htmlEscape(wb[j++]));
        } else {
            outA << del.arg(htmlEscape(wa[i++]));
        }
    }
    for (qsizetype k = n; k < wa.size(); ++k)
        outA << htmlEscape(wa[k]);
    for (qsizetype k = m; k < wb.size(); ++k)
        outB << htmlEscape(wb[k]);
    return {outA.join(QLatin1Char(' ')), outB.join(QLatin1Char(' '))};
}

}  // namespace tb
