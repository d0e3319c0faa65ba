// Regression suites: reading golden cases, checking answers, and comparing a tuned model's
// outcomes with the base model's.
#include "eval/suite.h"

#include "eval/evaluate.h"

#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/regex.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace tb::eval {
namespace {

const std::vector<std::string> kTextChecks{"contains", "not_contains", "regex", "exact",
                                           "starts_with"};

SuiteCheck checkFrom(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object())
        fail(where, ": each item of 'checks' must be an object such as {\"contains\": \"x\"}");
    // One check per object: {"contains": "a", "regex": "b"} would otherwise check only the first.
    std::vector<std::string> kinds;
    for (const auto& [k, v] : j.items())
        if (std::find(kTextChecks.begin(), kTextChecks.end(), k) != kTextChecks.end() ||
            k == "max_tokens" || k == "metric")
            kinds.push_back(k);
    if (kinds.size() > 1)
        fail(where, ": a check names one kind, this one names ", kinds.size(), " (", kinds[0], ", ",
             kinds[1], "); write each as its own item of 'checks'");
    const auto onlyKeys = [&](std::initializer_list<const char*> allowed) {
        for (const auto& [k, v] : j.items())
            if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }))
                fail(where, ": check '", kinds.empty() ? k : kinds[0], "' has unknown key '", k,
                     "'");
    };
    SuiteCheck c;
    for (const std::string& kind : kTextChecks) {
        if (!j.contains(kind))
            continue;
        if (!j[kind].is_string())
            fail(where, ": check '", kind, "' takes a string");
        onlyKeys({kind.c_str()});
        c.kind = kind;
        c.value = j[kind].get<std::string>();
        if (kind == "regex") {
            try {
                Regex{c.value};
            } catch (const Error& e) {
                fail(where, ": check 'regex' is not a valid pattern: ", e.what());
            }
        }
        return c;
    }
    if (j.contains("max_tokens")) {
        if (!j["max_tokens"].is_number_integer() || j["max_tokens"].get<int64_t>() < 0)
            fail(where, ": check 'max_tokens' takes an integer >= 0");
        onlyKeys({"max_tokens"});
        c.kind = "max_tokens";
        c.limit = j["max_tokens"].get<int64_t>();
        return c;
    }
    if (j.contains("metric")) {
        if (!j["metric"].is_string())
            fail(where, ": check 'metric' takes a metric name");
        onlyKeys({"metric", "reference", "references", "min"});
        c.kind = "metric";
        c.metric = j["metric"].get<std::string>();
        try {
            makeMetric(c.metric);
        } catch (const Error& e) {
            fail(where, ": ", e.what());
        }
        if (j.contains("references") && j.contains("reference"))
            fail(where, ": check 'metric' takes 'reference' or 'references', not both");
        if (j.contains("references")) {
            if (!j["references"].is_array())
                fail(where, ": check 'metric': 'references' must be a list of strings");
            for (const auto& r : j["references"]) {
                if (!r.is_string())
                    fail(where, ": check 'metric': 'references' must be strings");
                c.references.push_back(r.get<std::string>());
            }
        } else if (j.contains("reference")) {
            if (!j["reference"].is_string())
                fail(where, ": check 'metric': 'reference' must be a string");
            c.references = {j["reference"].get<std::string>()};
        }
        if (c.references.empty() && makeMetric(c.metric)->needsReferences())
            fail(where, ": check 'metric' ", c.metric, " needs 'reference' or 'references'");
        if (!j.contains("min") || !j["min"].is_number())
            fail(where, ": check 'metric' needs a number 'min' (the threshold)");
        c.threshold = j["min"].get<double>();
        return c;
    }
    std::string keys;
    for (const auto& [k, v] : j.items())
        keys += (keys.empty() ? "" : ", ") + k;
    fail(where, ": unknown check {", keys,
         "}; known: contains, not_contains, regex, exact, starts_with, max_tokens, metric");
}

}  // namespace

std::vector<SuiteCase> readSuite(const std::string& path)
{
    std::vector<SuiteCase> out;
    std::map<std::string, std::string> seenIds;  // id -> where it first appeared
    forEachJsonLine(path, [&](const nlohmann::json& row, const std::string& where) {
        for (const auto& [key, value] : row.items())
            if (key != "id" && key != "prompt" && key != "checks" && key != "required" &&
                key != "max_new_tokens")
                fail(where, ": unknown key '", key,
                     "' (known: id, prompt, checks, required, max_new_tokens)");
        SuiteCase c;
        c.where = where;
        c.id = row.contains("id") && row["id"].is_string() ? row["id"].get<std::string>()
               : row.contains("id")                        ? row["id"].dump()
                                                           : where;
        if (row.contains("id")) {
            const auto [first, fresh] = seenIds.emplace(c.id, where);
            if (!fresh)
                fail(where, ": case id ", c.id, " is already used at ", first->second,
                     " (each case's result is kept by its id)");
        }
        if (!row.contains("prompt"))
            fail(where, ": missing key 'prompt'");
        c.prompt = messagesFromJson(row["prompt"], where);
        if (!row.contains("checks") || !row["checks"].is_array() || row["checks"].empty())
            fail(where, ": key 'checks' must be a non-empty list");
        for (const auto& check : row["checks"])
            c.checks.push_back(checkFrom(check, where));
        if (row.contains("required")) {
            if (!row["required"].is_boolean())
                fail(where, ": key 'required' must be true or false");
            c.required = row["required"].get<bool>();
        }
        if (row.contains("max_new_tokens")) {
            const auto& m = row["max_new_tokens"];
            if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > (1 << 20))
                fail(where, ": key 'max_new_tokens' must be an integer from 1 to 1048576");
            c.maxNewTokens = m.get<int>();
        }
        out.push_back(std::move(c));
    });
    if (out.empty())
        fail(path, ": the suite has no cases");
    return out;
}

CaseOutcome checkAnswer(const SuiteCase& c, const std::string& answer, int64_t answerTokens,
                        bool stopped)
{
    CaseOutcome o;
    o.id = c.id;
    o.answer = answer;
    o.answerTokens = answerTokens;
    o.stopped = stopped;
    for (const SuiteCheck& k : c.checks) {
        std::string failure;
        if (k.kind == "contains" && answer.find(k.value) == std::string::npos)
            failure = "does not contain \"" + k.value + "\"";
        else if (k.kind == "not_contains" && answer.find(k.value) != std::string::npos)
            failure = "contains \"" + k.value + "\"";
        else if (k.kind == "exact" && answer != k.value)
            failure = "is not exactly \"" + k.value + "\"";
        else if (k.kind == "starts_with" && answer.rfind(k.value, 0) != 0)
            failure = "does not start with \"" + k.value + "\"";
        else if (k.kind == "regex") {
            std::string why;
            const std::optional<bool> found = Regex(k.value).search(answer, &why);
            if (!found)  // PCRE2's match limit: the check cannot pass
                failure = "cannot be matched against /" + k.value + "/ (" + why + ")";
            else if (!*found)
                failure = "does not match /" + k.value + "/";
        } else if (k.kind == "max_tokens" && answerTokens > k.limit)
            failure = "has " + std::to_string(answerTokens) + " tokens (max " +
                      std::to_string(k.limit) + ")";
        else if (k.kind == "metric") {
            const auto metric = makeMetric(k.metric);
            const double score =
                metric->exampleScore(MetricInput{answer, k.references, {}, stopped, answerTokens});
            const bool ok = metric->higherIsBetter() ? score >= k.threshold : score <= k.threshold;
            if (!ok)
                failure = k.metric + " " + std::to_string(score) +
                          (metric->higherIsBetter() ? " < " : " > ") + std::to_string(k.threshold);
        }
        if (!failure.empty())
            o.failures.push_back("answer " + failure);
    }
    o.passed = o.failures.empty();
    return o;
}

std::vector<CaseOutcome> runSuite(const Model& model, const Tokenizer& tokenizer,
                                  const ChatTemplate& chat, const std::vector<SuiteCase>& suite,
                                  int maxNewTokens, int batch, const EvalProgress& progress)
{
    int64_t done = 0;
    GenerateOptions o;
    o.greedy = true;
    o.stopTokenIds = chatStopIds(chat, tokenizer);
    std::vector<CaseOutcome> out(suite.size());
    // Cases with the same budget generate together.
    std::vector<int> budgets;
    for (const SuiteCase& c : suite)
        budgets.push_back(c.maxNewTokens > 0 ? c.maxNewTokens : maxNewTokens);
    std::vector<int> distinct = budgets;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (int budget : distinct) {
        std::vector<size_t> group;
        for (size_t i = 0; i < suite.size(); ++i)
            if (budgets[i] == budget)
                group.push_back(i);
        o.maxNewTokens = budget;
        for (size_t start = 0; start < group.size(); start += static_cast<size_t>(batch)) {
            const size_t end = std::min(group.size(), start + static_cast<size_t>(batch));
            std::vector<std::vector<int32_t>> prompts;
            for (size_t j = start; j < end; ++j) {
                const SuiteCase& c = suite[group[j]];
                try {
                    prompts.push_back(chatPromptIds(chat, tokenizer, messagesValue(c.prompt)));
                } catch (const Error& e) {
                    fail(c.where, ": ", e.what());
                }
            }
            const std::vector<GenerateResult> answers = model.generateBatch(prompts, o, &tokenizer);
            for (size_t j = start; j < end; ++j) {
                const GenerateResult& g = answers[j - start];
                out[group[j]] =
                    checkAnswer(suite[group[j]], g.text, static_cast<int64_t>(g.tokens.size()),
                                g.stopReason == "eos");
            }
            done += static_cast<int64_t>(end - start);
            if (progress && !progress(done, static_cast<int64_t>(suite.size())))
                fail("suite: cancelled");
        }
    }
    return out;
}

SuiteReport compareSuite(const std::vector<SuiteCase>& suite, const std::vector<CaseOutcome>& base,
                         const std::vector<CaseOutcome>& tuned)
{
    if (tuned.size() != suite.size() || (!base.empty() && base.size() != suite.size()))
        fail("suite: ", suite.size(), " cases but ", tuned.size(), " tuned and ", base.size(),
             " base outcomes");
    SuiteReport r;
    for (size_t i = 0; i < suite.size(); ++i) {
        SuiteCaseReport c;
        c.id = suite[i].id;
        c.required = suite[i].required;
        c.tuned = tuned[i];
        if (!base.empty()) {
            c.base = base[i];
            c.regression = base[i].passed && !tuned[i].passed;
            r.basePassed += base[i].passed ? 1 : 0;
        }
        c.gate = c.regression || (c.required && !tuned[i].passed);
        (tuned[i].passed ? r.passed : r.failed) += 1;
        r.regressions += c.regression ? 1 : 0;
        r.requiredFailed += c.required && !tuned[i].passed ? 1 : 0;
        r.cases.push_back(std::move(c));
    }
    return r;
}

namespace {

nlohmann::json outcomeJson(const CaseOutcome& o)
{
    return {{"answer", o.answer},
            {"answer_tokens", o.answerTokens},
            {"stopped", o.stopped},
            {"passed", o.passed},
            {"failures", o.failures}};
}

}  // namespace

nlohmann::json toJson(const SuiteReport& r)
{
    nlohmann::json cases = nlohmann::json::array();
    for (const SuiteCaseReport& c : r.cases) {
        nlohmann::json j = {{"id", c.id},
                            {"required", c.required},
                            {"tuned", outcomeJson(c.tuned)},
                            {"regression", c.regression},
                            {"gate", c.gate}};
        if (c.base)
            j["base"] = outcomeJson(*c.base);
        cases.push_back(j);
    }
    nlohmann::json j = {{"cases", cases},
                        {"summary",
                         {{"cases", static_cast<int64_t>(r.cases.size())},
                          {"passed", r.passed},
                          {"failed", r.failed},
                          {"regressions", r.regressions},
                          {"required_failed", r.requiredFailed},
                          {"gate_failed", r.gateFailed()}}}};
    if (!r.cases.empty() && r.cases.front().base)
        j["summary"]["base_passed"] = r.basePassed;
    return j;
}

std::string suiteMarkdown(const SuiteReport& r)
{
    const bool base = !r.cases.empty() && r.cases.front().base.has_value();
    std::string md = "# Regression suite\n\n" + std::to_string(r.passed) + " of " +
                     std::to_string(r.cases.size()) + " cases pass";
    if (base)
        md += " (base model: " + std::to_string(r.basePassed) + ")";
    md += "; " + std::to_string(r.regressions) + " regressions, " +
          std::to_string(r.requiredFailed) + " required cases failing: the gate " +
          (r.gateFailed() ? "fails" : "passes") +
          ".\n\n| case | base | tuned | why |\n|---|---|---|---|\n";
    for (const SuiteCaseReport& c : r.cases) {
        std::string why;
        for (const auto& f : c.tuned.failures)
            why += (why.empty() ? "" : "; ") + f;
        md += "| " + c.id + (c.required ? " (required)" : "") + " | " +
              (c.base ? (c.base->passed ? "pass" : "fail") : "–") + " | " +
              (c.tuned.passed ? "pass"
               : c.regression ? "**REGRESSED**"
                              : "fail") +
              " | " + why + " |\n";
    }
    return md;
}

}  // namespace tb::eval
