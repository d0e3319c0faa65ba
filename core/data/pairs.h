// A preference pair (a prompt with a chosen and a rejected answer), the row layouts it is read
// from (TRL's standard layout, HH-RLHF, UltraFeedback-binarised), and the checks every pair must
// pass before it is trained on or stored. Torch-free.
#pragma once

#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tb {

// auto: detected per row from its keys (standard: "prompt" + "chosen" + "rejected", strings or
// message lists; hh-rlhf: "chosen" + "rejected" only, both full conversations (message lists, or
// strings in Anthropic's "\n\nHuman: ... \n\nAssistant: ..." form); ultrafeedback: "chosen" +
// "rejected" message lists with "score_chosen" + "score_rejected").
enum class PairLayout { Auto, Standard, HhRlhf, UltraFeedback };
const char* pairLayoutName(PairLayout layout);  // "auto", "standard", "hh-rlhf", "ultrafeedback"
std::optional<PairLayout> parsePairLayout(const std::string& name);

struct PairExample {
    // Conversational pairs: the shared conversation before the answers (ends with a user turn) and
    // each answer as the assistant turn(s) that follow it.
    std::vector<ChatMessage> prompt;
    std::vector<ChatMessage> chosen, rejected;
    // Plain-text pairs (TRL's non-conversational standard layout: three strings): the texts as
    // they are, concatenated prompt + answer, no chat template.
    bool plainText = false;
    std::string promptText, chosenText, rejectedText;
    std::optional<double> scoreChosen, scoreRejected;  // UltraFeedback's ratings
    std::optional<double> margin;                      // reward models: "margin" key, optional
    PairLayout layout = PairLayout::Standard;          // the layout it was read as
    std::string source;                                // "file.jsonl:12", "store pair 7"
};

// One row as a pair. Throws tb::Error with the reason alone (the caller adds file:line): a missing
// or mistyped key, a message without role or content, HH-RLHF conversations that share no prefix
// or whose split is not at the last assistant turn, an empty prompt or answer, and chosen equal
// to rejected.
PairExample parsePairRow(const nlohmann::json& row, PairLayout layout = PairLayout::Auto);

// The row as TRL's standard layout writes it: {"prompt", "chosen", "rejected"} as message lists
// (or strings for plain text), plus "score_chosen", "score_rejected" and "margin" when set.
nlohmann::json pairToJson(const PairExample& pair);

// The text a pair is compared by (dedup, scans): prompt, chosen and rejected joined.
std::string pairText(const PairExample& pair);

struct PairRejection {
    std::string location;  // "file.jsonl:12"
    std::string reason;
};

struct PairFile {
    std::vector<PairExample> pairs;
    std::vector<PairRejection> rejected;  // bad rows, in file order; never fatal
};

// Reads a JSONL file (or a .json array) of pairs: each valid row kept with source "file:line",
// each bad row reported with its line and reason. Throws tb::Error naming the file when it is
// unreadable, empty, or holds no valid pair (the message then gives the first rejection).
PairFile readPairFile(const std::string& path, PairLayout layout = PairLayout::Auto);

}  // namespace tb
