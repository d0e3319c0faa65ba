// Terminology adherence: a glossary of source terms and the target terms a translation must use
// for them, and the metric that counts how often it does.
#pragma once

#include "eval/metric.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tb::eval {

using Glossary = std::vector<std::pair<std::string, std::string>>;  // source term, target term

// Reads a glossary, in file order:
// - a JSON file (name ending .json, or text starting with '{' or '['): an object
//   {"source": "target", ...} or a list [["source", "target"], ...];
// - otherwise one pair a line, "source<TAB>target" (a line with a tab) or "source,target" (CSV:
//   a field may be double-quoted, "" inside it standing for one quote); terms are trimmed; blank
//   lines and lines starting with '#' are skipped, and so is a first line "source<sep>target".
// Throws tb::Error naming the file and the line (or JSON key or entry) for an empty source term,
// a missing or empty target term, extra fields, invalid UTF-8 or bad JSON.
Glossary loadGlossary(const std::string& path);

// Whether `term` occurs in `text`, both compared after Python's casefold() ("Straße" matches
// "STRASSE"), on word boundaries: where the term starts with a word character (\w), the character
// before the match (if any) is not one, and where it ends with one, the character after it is not
// one either. So "cat" is not found in "cats", while "C++" is found in "C++17" (its last
// character is no word character). An empty term never occurs.
bool containsTerm(std::string_view text, std::string_view term);

// "terminology" (needs MetricInput::source; no references): for each glossary pair whose source
// term occurs in the source, whether its target term occurs in the prediction. Statistics
// {satisfied, present}; score satisfied / present, and 1.0 when no source term is present in any
// example (nothing was required, nothing was missed). Throws tb::Error for an empty glossary.
std::unique_ptr<Metric> makeTerminologyMetric(Glossary glossary);

}  // namespace tb::eval
