// `tunebench reward score`: a reward-model run's scores for answers in a JSONL file: preference
// pairs (their chosen and rejected answers, and how often the chosen one scores higher) or rows
// {"prompt", "response"} / {"prompt", "responses": [...]}.
#include "cli/commands.h"

#include "data/pairs.h"
#include "eval/evaluate.h"
#include "train/reward_scorer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

namespace tb {

using nlohmann::json;

namespace {

std::string answerText(const std::vector<ChatMessage>& turns)
{
    std::string text;
    for (const ChatMessage& m : turns)
        text += m.content;
    return text;
}

}  // namespace

int cmdReward(const Args& args, std::ostream& out, std::ostream& err)
{
    if (args.positional().size() < 2 || args.positional()[1] != "score")
        fail("reward: usage: tunebench reward score --run RUN_DIR --data FILE.jsonl [--device D] "
             "[--json]");
    args.allowOnly({"run", "data", "json", "device"});
    const RewardScorer scorer(args.value("run"),
                              args.has("device") ? args.value("device") : "auto");
    const std::string path = args.value("data");
    std::istringstream lines(readFile(path));
    std::string line;
    int64_t lineNo = 0, pairs = 0, correct = 0, rows = 0;
    const bool asJson = args.flag("json");
    while (std::getline(lines, line)) {
        ++lineNo;
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        const std::string where = path + ":" + std::to_string(lineNo);
        checkJsonDepth(line, where);
        const json row = json::parse(line, nullptr, false);
        if (!row.is_object()) {
            err << "skipped " << where << ": not a JSON object\n";
            continue;
        }
        json result = {{"line", lineNo}};
        if (row.contains("chosen") && row.contains("rejected")) {
            PairExample pair;
            try {
                pair = parsePairRow(row);
            } catch (const Error& e) {
                err << "skipped " << where << ": " << e.what() << "\n";
                continue;
            }
            const std::vector<ChatMessage> prompt =
                pair.plainText ? std::vector<ChatMessage>{{"text", pair.promptText}} : pair.prompt;
            const std::vector<double> s = scorer.score(
                prompt, {pair.plainText ? pair.chosenText : answerText(pair.chosen),
                         pair.plainText ? pair.rejectedText : answerText(pair.rejected)});
            result["chosen"] = s[0];
            result["rejected"] = s[1];
            ++pairs;
            correct += s[0] > s[1] ? 1 : 0;
        } else if (row.contains("prompt") &&
                   (row.contains("response") || row.contains("responses"))) {
            std::vector<std::string> answers;
            const json& r =
                row.contains("responses") ? row["responses"] : json::array({row["response"]});
            if (!r.is_array() || r.empty()) {
                err << "skipped " << where
                    << ": \"responses\" must be a non-empty list of strings\n";
                continue;
            }
            for (const json& a : r) {
                if (!a.is_string())
                    fail(where, ": responses must be strings");
                answers.push_back(a.get<std::string>());
            }
            result["scores"] = scorer.score(eval::messagesFromJson(row["prompt"], where), answers);
        } else {
            err << "skipped " << where
                << ": expected a preference pair or \"prompt\" with \"response\"/\"responses\"\n";
            continue;
        }
        ++rows;
        if (asJson) {
            out << result.dump() << "\n";
        } else if (result.contains("chosen")) {
            char text[160];
            std::snprintf(text, sizeof text, "line %lld: chosen %.4f  rejected %.4f%s\n",
                          static_cast<long long>(lineNo), result["chosen"].get<double>(),
                          result["rejected"].get<double>(),
                          result["chosen"].get<double>() > result["rejected"].get<double>()
                              ? ""
                              : "  (rejected scores higher)");
            out << text;
        } else {
            out << "line " << lineNo << ":";
            for (const json& s : result["scores"])
                out << " " << s.get<double>();
            out << "\n";
        }
    }
    if (rows == 0)
        fail(path, ": no row to score");
    if (pairs > 0) {
        const double accuracy = static_cast<double>(correct) / static_cast<double>(pairs);
        if (asJson)
            out << json{{"pairs", pairs}, {"accuracy", accuracy}}.dump() << "\n";
        else
            out << "accuracy " << accuracy << " (" << correct << " of " << pairs
                << " pairs score the chosen answer higher)\n";
    }
    return 0;
}

}  // namespace tb
