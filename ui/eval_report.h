// The Evaluate page's report writers and text helpers as plain functions (testable without a
// window): the scorecard as Markdown (core's), a self-contained HTML page of the scorecard and the
// per-example rows (escaped), the per-example rows as CSV (RFC 4180 quoting), and a word-level diff
// of two answers.
#pragma once

#include "eval/evaluate.h"
#include "eval/scorecard.h"

#include <QString>
#include <QStringList>

#include <optional>
#include <utility>
#include <vector>

namespace tb {

struct EvalOutcome;

// One row of the scorecard view: each system's score with its interval and, for tuned systems,
// the paired difference from the base.
struct ScoreCell {
    double score = 0, lo = 0, hi = 0;
    std::optional<double> delta;
    double deltaLo = 0, deltaHi = 0;
    bool excludesZero = false;
    bool better = false;      // excludes zero and in the metric's better direction
    bool directional = true;  // false for the length: longer / shorter, neither better nor worse
};
struct ScoreTable {
    std::vector<std::string> metrics;
    QStringList systems;                        // systems[0] is the base (or the one model)
    std::vector<std::vector<ScoreCell>> cells;  // [metric][system]
    std::vector<bool> higherIsBetter;           // per metric
    std::vector<bool> directional;              // per metric (Metric::directional)
    int64_t examples = 0;
};
ScoreTable scoreTable(const EvalOutcome& outcome);
// Metric::higherIsBetter / directional of a metric by name (true for one that cannot be built
// without options).
bool metricHigherIsBetter(const std::string& name);
bool metricDirectional(const std::string& name);
// "better", "worse" or "no clear difference"; "longer" or "shorter" for the length (a cell
// without a delta: empty).
QString verdictText(const ScoreCell& cell);

// The case's prompt as shown: its last user turn, else its turns' text joined.
QString promptText(const eval::EvalCase& c);
// The references joined by " | ".
QString referenceText(const eval::EvalCase& c);

// &, <, >, " and ' as entities.
QString htmlEscape(const QString& text);
// RFC 4180: quoted when the field holds a comma, a quote, CR or LF (quotes doubled).
QString csvField(const QString& text);

// core's scorecard Markdown for a comparison; a metric table for one model.
QString reportMarkdown(const EvalOutcome& outcome);
// A self-contained HTML page: the scorecard table (with intervals and verdicts) and every case's
// prompt, reference, answers and scores.
QString reportHtml(const EvalOutcome& outcome);
// One line per case (CRLF line ends): id, record id, prompt, reference, each system's answer,
// each metric's score per system.
QString examplesCsv(const EvalOutcome& outcome);
// Writes UTF-8 text atomically (QSaveFile); false with the reason in *error.
bool writeTextFile(const QString& path, const QString& text, QString* error = nullptr);

// Word-level difference of two answers as HTML (escaped): a's words missing from b struck out in
// the first, b's words missing from a marked in the second.
std::pair<QString, QString> wordDiffHtml(const QString& a, const QString& b);

}  // namespace tb
