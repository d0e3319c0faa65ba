// Evaluating a model on held-out cases: prompts rendered with the chat template, answers generated
// in batches, scored by the chosen metrics with bootstrap intervals, written as a results folder.
#include "eval/evaluate.h"

#include "data/example.h"
#include "tokenizer/model_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"
#include "util/sha256.h"
#include "util/staged_folder.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <random>
#include <sstream>

namespace tb::eval {
namespace {

std::string lastUserTurn(const std::vector<ChatMessage>& messages)
{
    for (auto it = messages.rbegin(); it != messages.rend(); ++it)
        if (it->role == "user")
            return it->content;
    return {};
}

}  // namespace

std::vector<EvalCase> casesFromExamples(const std::vector<Example>& examples, int64_t limit)
{
    std::vector<EvalCase> out;
    for (const Example& e : examples) {
        if (limit > 0 && static_cast<int64_t>(out.size()) >= limit)
            break;
        if (e.plainText || e.messages.empty() || e.messages.back().role != "assistant")
            continue;
        EvalCase c;
        c.id = e.source;
        const auto hash = e.source.rfind(":record ");
        if (hash != std::string::npos)
            c.recordId = std::stoll(e.source.substr(hash + 8));
        c.prompt.assign(e.messages.begin(), e.messages.end() - 1);
        c.references = {e.messages.back().content};
        c.source = lastUserTurn(c.prompt);
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<EvalCase> sampleCases(const std::vector<EvalCase>& cases, int64_t n, uint64_t seed)
{
    if (n <= 0 || n >= static_cast<int64_t>(cases.size()))
        return cases;
    std::vector<size_t> order(cases.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    order.resize(static_cast<size_t>(n));
    std::sort(order.begin(), order.end());
    std::vector<EvalCase> out;
    for (size_t i : order)
        out.push_back(cases[i]);
    return out;
}

std::string casesSha256(const std::vector<EvalCase>& cases)
{
    nlohmann::json all = nlohmann::json::array();
    for (const EvalCase& c : cases)
        all.push_back({{"prompt", messagesToJson(c.prompt)}, {"references", c.references}});
    return sha256Hex(all.dump());
}

nlohmann::json toJson(const EvalSettings& s)
{
    const GenerateOptions& g = s.generation;
    nlohmann::json j = {{"metrics", s.metrics},     {"max_new_tokens", g.maxNewTokens},
                        {"greedy", g.greedy},       {"batch", s.batch},
                        {"resamples", s.resamples}, {"seed", s.seed}};
    if (!g.greedy) {
        j["temperature"] = g.temperature;
        j["top_k"] = g.topK;
        j["top_p"] = g.topP;
        j["generation_seed"] = g.seed;
    }
    if (g.repetitionPenalty != 1.0)
        j["repetition_penalty"] = g.repetitionPenalty;
    if (!s.glossaryPath.empty())
        j["glossary"] = s.glossaryPath;
    if (s.metricOptions.rougeStemmer)
        j["rouge_stemmer"] = true;
    return j;
}

MetricInput metricInput(const EvalPrediction& p)
{
    return MetricInput{p.prediction, p.input.references, p.input.source, p.stopped, p.answerTokens};
}

std::vector<std::unique_ptr<Metric>> buildMetrics(const std::vector<std::string>& names,
                                                  const MetricOptions& options)
{
    if (names.empty())
        fail(
            "no metrics chosen (known: ",
            [] {
                std::string all;
                for (const auto& n : metricNames())
                    all += (all.empty() ? "" : ", ") + n;
                return all;
            }(),
            ")");
    std::vector<std::unique_ptr<Metric>> out;
    for (size_t i = 0; i < names.size(); ++i) {
        if (std::find(names.begin(), names.begin() + ptrdiff_t(i), names[i]) !=
            names.begin() + ptrdiff_t(i))
            fail("metric '", names[i], "' is listed twice");
        out.push_back(makeMetric(names[i], options));
    }
    return out;
}

EvalResult evaluateModel(const Model& model, const Tokenizer& tokenizer, const ChatTemplate& chat,
                         const std::vector<EvalCase>& cases, const EvalSettings& settings,
                         const EvalProgress& progress)
{
    if (cases.empty())
        fail("evaluation: no held-out case (a conversation ending with an assistant answer)");
    if (settings.batch < 1)
        fail("evaluation: the batch size must be at least 1");
    buildMetrics(settings.metrics, settings.metricOptions);  // unknown names fail before generating
    EvalResult r;
    r.metricOrder = settings.metrics;
    r.settings = toJson(settings);
    r.data["sha256"] = casesSha256(cases);
    GenerateOptions options = settings.generation;
    const std::vector<int32_t> stops = chatStopIds(chat, tokenizer);
    options.stopTokenIds.insert(options.stopTokenIds.end(), stops.begin(), stops.end());
    const auto t0 = std::chrono::steady_clock::now();
    const auto total = static_cast<int64_t>(cases.size());
    for (size_t start = 0; start < cases.size(); start += static_cast<size_t>(settings.batch)) {
        const size_t end = std::min(cases.size(), start + static_cast<size_t>(settings.batch));
        std::vector<std::vector<int32_t>> prompts;
        for (size_t i = start; i < end; ++i) {
            try {
                prompts.push_back(chatPromptIds(chat, tokenizer, messagesValue(cases[i].prompt)));
            } catch (const Error& e) {
                fail(cases[i].id, ": ", e.what());
            }
        }
        const std::vector<GenerateResult> answers =
            model.generateBatch(prompts, options, &tokenizer);
        for (size_t i = start; i < end; ++i) {
            const GenerateResult& g = answers[i - start];
            EvalPrediction p;
            p.input = cases[i];
            p.prediction = g.text;
            p.stopReason = g.stopReason;
            p.stopped = g.stopReason == "eos";
            p.answerTokens = static_cast<int64_t>(g.tokens.size());
            r.predictions.push_back(std::move(p));
        }
        if (progress && !progress(static_cast<int64_t>(end), total)) {
            r.cancelled = true;
            break;
        }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.cancelled)
        scorePredictions(r, settings);
    return r;
}

void scorePredictions(EvalResult& result, const EvalSettings& settings)
{
    const auto metrics = buildMetrics(settings.metrics, settings.metricOptions);
    if (result.predictions.empty())
        fail("evaluation: no predictions to score");
    result.metricOrder = settings.metrics;
    result.metrics.clear();
    for (const auto& metric : metrics) {
        std::vector<std::vector<double>> stats;
        stats.reserve(result.predictions.size());
        for (EvalPrediction& p : result.predictions) {
            if (metric->needsReferences() && p.input.references.empty())
                fail(p.input.id, ": metric '", metric->name(),
                     "' needs a reference, and this prediction has none");
            const MetricInput in = metricInput(p);
            try {
                stats.push_back(metric->stats(in));
                p.scores[metric->name()] = metric->exampleScore(in);
            } catch (const Error& e) {  // which example (its id, or file:line when it has none)
                fail(p.input.id, ": ", e.what());
            }
        }
        if (settings.resamples > 0) {
            result.metrics[metric->name()] =
                bootstrapScore(*metric, stats, settings.resamples, settings.seed);
        } else {  // no interval asked for: the score alone
            std::vector<double> sum(stats.front().size(), 0.0);
            for (const auto& s : stats)
                for (size_t i = 0; i < s.size(); ++i)
                    sum[i] += s[i];
            const double score = metric->score(sum);
            result.metrics[metric->name()] = CorpusScore{score, Interval{score, score}};
        }
    }
}

nlohmann::json toJson(const EvalPrediction& p)
{
    nlohmann::json j = {
        {"id", p.input.id},
        {"prompt", messagesToJson(p.input.prompt)},
        {"reference", p.input.references.empty() ? std::string() : p.input.references.front()},
        {"references", p.input.references},
        {"prediction", p.prediction},
        {"stopped", p.stopped},
        {"answer_tokens", p.answerTokens},
        {"scores", p.scores}};
    if (p.input.recordId > 0)
        j["record_id"] = p.input.recordId;
    if (!p.input.source.empty())
        j["source"] = p.input.source;
    if (!p.stopReason.empty())
        j["stop_reason"] = p.stopReason;
    return j;
}

nlohmann::json toJson(const EvalResult& r)
{
    nlohmann::json metrics = nlohmann::json::object();
    for (const std::string& name : r.metricOrder) {
        auto it = r.metrics.find(name);
        if (it != r.metrics.end())
            metrics[name] = {{"score", it->second.score},
                             {"ci", {it->second.ci.lo, it->second.ci.hi}}};
    }
    return {{"metrics", metrics},
            {"metric_order", r.metricOrder},
            {"examples", static_cast<int64_t>(r.predictions.size())},
            {"name", r.name},
            {"model", r.model},
            {"settings", r.settings},
            {"data", r.data},
            {"seconds", r.seconds}};
}

void writeEvalResult(const EvalResult& result, const std::string& dir)
{
    std::string lines;
    for (const EvalPrediction& p : result.predictions)
        lines += toJson(p).dump() + "\n";
    nlohmann::json results = toJson(result);
    // The pair belongs together: readEvalResult refuses predictions another evaluation wrote.
    results["predictions_sha256"] = sha256Hex(lines);
    const std::string text = results.dump(2) + "\n";
    // A folder of this evaluation's own files is replaced whole (a kill leaves the old pair or
    // the new one); a folder holding other files too gets the two files one after the other.
    const auto ours = [](const std::string& name) {
        return name == "predictions.jsonl" || name == "results.json" ||
               name.rfind("predictions.jsonl.tmp.", 0) == 0 ||
               name.rfind("results.json.tmp.", 0) == 0;
    };
    // The folder by its real path ("." and a symlinked folder are replaced where they point).
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::weakly_canonical(
        std::filesystem::absolute(std::filesystem::path(dir)), ec);
    bool whole = !ec && real.has_filename() && real.has_parent_path() && real != real.root_path();
    try {
        if (whole)
            checkReplaceableFolder(real.string(), ours, "evaluation");
    } catch (const Error&) {
        whole = false;
    }
    if (whole) {
        StagedFolder staged(real.string());
        writeFileAtomic(joinPath(staged.path(), "predictions.jsonl"), lines);
        writeFileAtomic(joinPath(staged.path(), "results.json"), text);
        staged.commit();
        return;
    }
    makeDirectories(dir);
    writeFileAtomic(joinPath(dir, "predictions.jsonl"), lines);
    writeFileAtomic(joinPath(dir, "results.json"), text);
}

nlohmann::json messagesToJson(const std::vector<ChatMessage>& messages)
{
    nlohmann::json out = nlohmann::json::array();
    for (const ChatMessage& m : messages)
        out.push_back({{"role", m.role}, {"content", m.content}});
    return out;
}

std::vector<ChatMessage> messagesFromJson(const nlohmann::json& j, const std::string& where)
{
    std::vector<ChatMessage> out;
    if (j.is_string()) {
        out.push_back({"user", j.get<std::string>()});
        return out;
    }
    if (!j.is_array() || j.empty())
        fail(where, ": 'prompt' must be a string or a non-empty list of {role, content} messages");
    for (const auto& m : j) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
            !m.contains("content") || !m["content"].is_string())
            fail(where, ": key 'prompt': each message needs string 'role' and 'content'");
        out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    return out;
}

void forEachJsonLine(
    const std::string& path,
    const std::function<void(const nlohmann::json& row, const std::string& where)>& f)
{
    std::istringstream in(readFile(path));
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        const std::string where = path + ":" + std::to_string(number);
        checkJsonDepth(line, where);
        nlohmann::json row;
        try {
            row = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            fail(where, ": not valid JSON (", e.what(), ")");
        }
        if (!row.is_object())
            fail(where, ": each line must be a JSON object");
        f(row, where);
    }
}

namespace {

// An optional key of a predictions row: absent or null is the default; another type, or a count
// out of range, is refused naming the line and the key.
const nlohmann::json* optionalKey(const nlohmann::json& row, const char* key)
{
    const auto it = row.find(key);
    return it == row.end() || it->is_null() ? nullptr : &*it;
}

std::string optionalString(const nlohmann::json& row, const char* key, const std::string& where,
                           const std::string& fallback = {})
{
    const nlohmann::json* v = optionalKey(row, key);
    if (!v)
        return fallback;
    if (!v->is_string())
        fail(where, ": '", key, "' must be a string, not ", v->type_name());
    return v->get<std::string>();
}

int64_t optionalCount(const nlohmann::json& row, const char* key, const std::string& where)
{
    const nlohmann::json* v = optionalKey(row, key);
    if (!v)
        return 0;
    constexpr int64_t kMax = int64_t(1) << 40;
    if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(kMax)))
        fail(where, ": '", key, "' must be a whole number from 0 to 2^40, not ", v->dump());
    const int64_t n = v->get<int64_t>();
    if (n < 0 || n > kMax)
        fail(where, ": '", key, "' must be a whole number from 0 to 2^40, not ", n);
    return n;
}

}  // namespace

std::vector<EvalPrediction> readPredictions(const std::string& path)
{
    std::vector<EvalPrediction> out;
    forEachJsonLine(path, [&](const nlohmann::json& row, const std::string& where) {
        if (!row.contains("prediction") || !row["prediction"].is_string())
            fail(where, ": missing string 'prediction'");
        EvalPrediction p;
        p.prediction = row["prediction"].get<std::string>();
        if (const nlohmann::json* id = optionalKey(row, "id"))
            p.input.id = id->is_number_integer() ? std::to_string(id->get<int64_t>())
                                                 : optionalString(row, "id", where);
        else
            p.input.id = where;
        const nlohmann::json* references = optionalKey(row, "references");
        const nlohmann::json* reference = optionalKey(row, "reference");
        if (references) {
            if (!references->is_array() ||
                std::any_of(references->begin(), references->end(),
                            [](const auto& v) { return !v.is_string(); }))
                fail(where, ": 'references' must be a list of strings");
            for (const auto& v : *references)
                p.input.references.push_back(v.get<std::string>());
        }
        if (reference) {
            if (!reference->is_string())
                fail(where, ": 'reference' must be a string");
            const std::string one = reference->get<std::string>();
            // Both keys: 'reference' must be one of 'references' (Tunebench writes the first),
            // or empty beside an empty list; anything else is two answers to one question.
            if (!references)
                p.input.references = {one};
            else if (p.input.references.empty()
                         ? !one.empty()
                         : std::find(p.input.references.begin(), p.input.references.end(), one) ==
                               p.input.references.end())
                fail(where, ": 'reference' \"", one,
                     "\" is not among 'references': give one of the two keys");
        }
        if (row.contains("prompt"))
            p.input.prompt = messagesFromJson(row["prompt"], where);
        p.input.source = optionalString(row, "source", where, lastUserTurn(p.input.prompt));
        p.input.recordId = optionalCount(row, "record_id", where);
        if (const nlohmann::json* stopped = optionalKey(row, "stopped")) {
            if (!stopped->is_boolean())
                fail(where, ": 'stopped' must be true or false, not ", stopped->dump());
            p.stopped = stopped->get<bool>();
        }
        p.stopReason = optionalString(row, "stop_reason", where);
        p.answerTokens = optionalCount(row, "answer_tokens", where);
        if (const nlohmann::json* scores = optionalKey(row, "scores")) {
            if (!scores->is_object())
                fail(where, ": 'scores' must be an object of numbers");
            for (const auto& [name, v] : scores->items())
                if (v.is_number())
                    p.scores[name] = v.get<double>();
        }
        out.push_back(std::move(p));
    });
    if (out.empty())
        fail(path, ": no predictions (the file is empty)");
    return out;
}

EvalResult readEvalResult(const std::string& dir)
{
    const std::string resultsPath = joinPath(dir, "results.json");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(readFile(resultsPath));
    } catch (const nlohmann::json::exception& e) {
        fail(resultsPath, ": not valid JSON (", e.what(), ")");
    }
    EvalResult r;
    r.name = j.value("name", std::string());
    r.model = j.value("model", std::string());
    r.settings = j.value("settings", nlohmann::json::object());
    r.data = j.value("data", nlohmann::json::object());
    r.seconds = j.value("seconds", 0.0);
    r.metricOrder = j.value("metric_order", std::vector<std::string>());
    const nlohmann::json metrics = j.value("metrics", nlohmann::json::object());
    for (const auto& [name, m] : metrics.items()) {
        const auto ci = m.value("ci", std::vector<double>{0, 0});
        r.metrics[name] = CorpusScore{m.value("score", 0.0), Interval{ci.at(0), ci.at(1)}};
    }
    const std::string predictionsPath = joinPath(dir, "predictions.jsonl");
    if (j.contains("predictions_sha256") && j["predictions_sha256"].is_string() &&
        sha256File(predictionsPath) != j["predictions_sha256"].get<std::string>())
        fail(predictionsPath, ": does not belong to ", resultsPath,
             " (another evaluation wrote it, or one was stopped between its two files); run the "
             "evaluation again");
    r.predictions = readPredictions(predictionsPath);
    return r;
}

}  // namespace tb::eval
