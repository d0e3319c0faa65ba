// Evaluating a given model on a held-out set: the cases (a prompt and its references), generation
// in batches, the chosen metrics with bootstrap intervals, and the results folder (results.json +
// predictions.jsonl, written atomically). Knows models and folders, not runs.
#pragma once

#include "eval/bootstrap.h"
#include "eval/metric.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tb {
class ChatTemplate;
class Tokenizer;
struct Example;
}  // namespace tb

namespace tb::eval {

// One held-out case: the conversation before the answer, and what the answer is compared with.
struct EvalCase {
    std::string id;                       // "file.jsonl:12", "store#snapshot:record 7"
    int64_t recordId = 0;                 // the store record; 0 when not from a store
    std::vector<ChatMessage> prompt;      // the turns before the answer
    std::vector<std::string> references;  // the reference answer(s)
    std::string source;                   // the last user turn (terminology adherence)
};

// The cases of examples whose conversation ends with an assistant turn (that turn is the
// reference); plain texts and conversations without one are skipped. limit > 0 keeps the first
// `limit`.
std::vector<EvalCase> casesFromExamples(const std::vector<Example>& examples, int64_t limit = 0);
// A fixed, seeded sample of n cases (all of them when n <= 0 or n >= size), in their order.
std::vector<EvalCase> sampleCases(const std::vector<EvalCase>& cases, int64_t n, uint64_t seed);
// SHA-256 of the cases' prompts and references (canonical JSON): equal for equal held-out sets,
// whatever file or snapshot they came from.
std::string casesSha256(const std::vector<EvalCase>& cases);

struct EvalSettings {
    std::vector<std::string> metrics = {"exact_match", "f1"};
    GenerateOptions generation = greedyGeneration();
    int batch = 8;         // prompts per generation batch
    int resamples = 1000;  // bootstrap resamples for the 95% intervals
    uint64_t seed = 0;     // bootstrap (and sampling) seed
    MetricOptions metricOptions;
    std::string glossaryPath;  // recorded in the settings when terminology is scored
    static GenerateOptions greedyGeneration()
    {
        GenerateOptions o;
        o.greedy = true;
        o.maxNewTokens = 128;
        return o;
    }
};
nlohmann::json toJson(const EvalSettings& settings);

// One case with the model's answer and its per-example scores.
struct EvalPrediction {
    EvalCase input;
    std::string prediction;
    bool stopped = false;      // ended with a stop token within the budget
    std::string stopReason;    // as GenerateResult::stopReason ("" for predictions made elsewhere)
    int64_t answerTokens = 0;  // generated tokens
    std::map<std::string, double> scores;  // metric -> exampleScore
};
MetricInput metricInput(const EvalPrediction& p);

struct EvalResult {
    std::string name;                      // eval/NAME
    std::string model;                     // model folder or run
    std::vector<std::string> metricOrder;  // as requested
    std::map<std::string, CorpusScore> metrics;
    std::vector<EvalPrediction> predictions;
    nlohmann::json settings = nlohmann::json::object();
    nlohmann::json data = nlohmann::json::object();  // {"source", "sha256", "file_sha256"?}
    double seconds = 0;                              // generation wall time
    bool cancelled = false;
};

// The metrics of settings.metrics, each built once (throws naming an unknown metric).
std::vector<std::unique_ptr<Metric>> buildMetrics(const std::vector<std::string>& names,
                                                  const MetricOptions& options);

// Progress after each batch: cases done of total. Return false to cancel: evaluateModel then
// returns the cases answered so far, unscored, with cancelled set.
using EvalProgress = std::function<bool(int64_t done, int64_t total)>;

// Generates an answer for every case (the chat template's prompt with its generation prompt,
// stopping at its end-of-turn ids), then scores them.
EvalResult evaluateModel(const Model& model, const Tokenizer& tokenizer, const ChatTemplate& chat,
                         const std::vector<EvalCase>& cases, const EvalSettings& settings,
                         const EvalProgress& progress = {});
// Scores predictions (made here or elsewhere): per-example scores and corpus scores with their
// bootstrap intervals. Throws when a reference-based metric meets a prediction without references.
void scorePredictions(EvalResult& result, const EvalSettings& settings);

// results.json: {"metrics": {NAME: {"score", "ci": [lo, hi]}}, "examples", "name", "model",
// "settings", "data", "seconds"}.
nlohmann::json toJson(const EvalResult& result);
nlohmann::json toJson(const EvalPrediction& prediction);
// Writes DIR/results.json and DIR/predictions.jsonl, each atomically.
void writeEvalResult(const EvalResult& result, const std::string& dir);
// Reads a results folder back (results.json + predictions.jsonl); errors name the file and line.
EvalResult readEvalResult(const std::string& dir);
// Each non-blank line of a JSONL file as an object, with "FILE:LINE" for messages; a line that is
// not a JSON object is an error naming it.
void forEachJsonLine(
    const std::string& path,
    const std::function<void(const nlohmann::json& row, const std::string& where)>& f);
// Messages as JSON ([{role, content}]) and back; a string is one user turn. Errors name `where`.
nlohmann::json messagesToJson(const std::vector<ChatMessage>& messages);
std::vector<ChatMessage> messagesFromJson(const nlohmann::json& j, const std::string& where);

// Predictions made elsewhere: JSONL rows with "prediction" and "reference" (string) or
// "references" (list of strings); optional "prompt", "source", "stopped", "answer_tokens", "id".
// Errors name the file and line; an empty file is an error.
std::vector<EvalPrediction> readPredictions(const std::string& path);

}  // namespace tb::eval
