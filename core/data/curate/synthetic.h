// Synthetic examples: the loaded model writes N new examples per seed record, from a prompt
// template or the seed's own prompt; they enter the store flagged synthetic and pending review.
#pragma once

#include "model/model.h"
#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tb {

class DataStore;
class Tokenizer;

struct SynthOptions {
    // With placeholders {field} filled from the seed's fields (e.g. "Write a question like:
    // {instruction}\n"). Empty: the seed's prompt side (instruction + input, user turns, prompt)
    // rendered with the chat template, and the generated reply replaces the seed's response.
    std::string promptTemplate;
    int perSeed = 1;
    std::string chatTemplate = "plain";  // chatml | llama3 | inst | alpaca | plain
    GenerateOptions generate;            // seed + k gives each of the N samples its own draw
    std::string who = "synthetic";
};

struct SynthReport {
    int64_t seeds = 0;
    int64_t generated = 0;
    std::vector<int64_t> ids;  // the new records
};

// Generates and stores (one transaction at the end: a cancelled run stores nothing). `progress`
// gets (done, total) and returns false to cancel.
SynthReport generateSynthetic(DataStore& store, const Model& model, const Tokenizer& tokenizer,
                              const std::vector<int64_t>& seedIds, const SynthOptions& options,
                              const std::function<bool(int64_t, int64_t)>& progress = {});

// K answers to one prompt, sampled from the loaded model (seed + k gives each its own draw) and
// rendered with options.chatTemplate, stored as one ranking that annotators order; every ordered
// pair of a recorded order becomes a preference pair (data/store/pairs_store.h). Returns the
// ranking's id. Throws for k < 2.
int64_t generateRanking(DataStore& store, const Model& model, const Tokenizer& tokenizer,
                        const std::vector<ChatMessage>& prompt, int k, const SynthOptions& options);

// The template with {field} replaced by the seed's field values; throws naming an unknown
// placeholder.
std::string fillTemplate(const std::string& promptTemplate, const nlohmann::json& fields);

}  // namespace tb
