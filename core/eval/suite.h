// Regression suites: golden cases (a prompt plus checks on the answer) run against a model; each
// case passes or fails with the reasons, and a tuned model's report says which cases regressed
// (passed on the base model, fail now) so that `tunebench eval suite` can gate an export or CI.
#pragma once

#include "eval/evaluate.h"
#include "eval/metric.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {
class ChatTemplate;
class Tokenizer;
}  // namespace tb

namespace tb::eval {

// One check on an answer. kind: contains | not_contains | regex (PCRE2, searched) | exact |
// starts_with (text in `value`) | max_tokens (`limit`) | metric (`metric` of the answer against
// `references` must reach `threshold`, in the metric's units; for a lower-is-better metric it must
// not exceed it).
struct SuiteCheck {
    std::string kind;
    std::string value;
    int64_t limit = 0;
    std::string metric;
    std::vector<std::string> references;
    double threshold = 0;
};

struct SuiteCase {
    std::string id;     // the row's "id", else "FILE:LINE"
    std::string where;  // "FILE:LINE"
    std::vector<ChatMessage> prompt;
    std::vector<SuiteCheck> checks;
    bool required = false;
    int maxNewTokens = 0;  // 0: the suite's default
};

// A suite file: JSONL, one case per line: {"id"?, "prompt": "text" | [{role, content}...],
// "checks": [{"contains": "x"}, {"not_contains": "y"}, {"regex": "^\\d+$"}, {"exact": "z"},
// {"starts_with": "w"}, {"max_tokens": 20}, {"metric": "bleu", "reference": "r" | "references":
// [...], "min": 30}], "required"?: bool, "max_new_tokens"?: N}. Errors name the file, line and key;
// an empty suite, an unknown check, a bad regex or an unknown metric are errors.
std::vector<SuiteCase> readSuite(const std::string& path);

struct CaseOutcome {
    std::string id;
    std::string answer;
    int64_t answerTokens = 0;
    bool stopped = false;
    bool passed = false;
    std::vector<std::string> failures;  // one line per failed check
};

// Applies the case's checks to an answer.
CaseOutcome checkAnswer(const SuiteCase& c, const std::string& answer, int64_t answerTokens,
                        bool stopped);
// Greedy answers to every case (in batches), checked. maxNewTokens: the default budget. progress
// after each batch (cases done of the suite); returning false stops with tb::Error "cancelled".
std::vector<CaseOutcome> runSuite(const Model& model, const Tokenizer& tokenizer,
                                  const ChatTemplate& chat, const std::vector<SuiteCase>& suite,
                                  int maxNewTokens = 128, int batch = 8,
                                  const EvalProgress& progress = {});

struct SuiteCaseReport {
    std::string id;
    bool required = false;
    std::optional<CaseOutcome> base;  // absent when no base model was run
    CaseOutcome tuned;
    bool regression = false;  // passed on the base, fails on the tuned model
    bool gate = false;        // fails the gate: a regression or a required case failing
};

struct SuiteReport {
    std::vector<SuiteCaseReport> cases;
    int64_t passed = 0, failed = 0, regressions = 0, requiredFailed = 0;
    int64_t basePassed = 0;
    bool gateFailed() const { return regressions > 0 || requiredFailed > 0; }
};
// base may be empty (no base model run); otherwise it has one outcome per case.
SuiteReport compareSuite(const std::vector<SuiteCase>& suite, const std::vector<CaseOutcome>& base,
                         const std::vector<CaseOutcome>& tuned);
nlohmann::json toJson(const SuiteReport& report);
std::string suiteMarkdown(const SuiteReport& report);

}  // namespace tb::eval
