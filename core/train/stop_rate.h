// Whether a tuned model ends its answers: greedy generation from held-out prompts, counting the
// answers that end with a stop token (EOS or the template's end-of-turn) before their budget.
#pragma once

#include "data/example.h"
#include "tokenizer/model_template.h"

#include <cstdint>
#include <vector>

namespace tb {

class Model;
class Tokenizer;

struct StopRate {
    int64_t prompts = 0;  // conversations probed
    int64_t stopped = 0;  // answers that ended with a stop token within their budget
    double rate() const { return prompts > 0 ? double(stopped) / double(prompts) : 0.0; }
};

// Examples whose conversation ends with an assistant turn, the first `limit` of them: the prompts a
// stop rate probes.
std::vector<Example> stopProbeExamples(const std::vector<Example>& examples, size_t limit = 16);

// For each example: its messages before the last assistant turn, rendered with the generation
// prompt, then greedy generation up to twice the reference answer's tokens plus 16 (at most 256).
StopRate measureStopRate(const Model& model, const Tokenizer& tokenizer, const ChatTemplate& chat,
                         const std::vector<Example>& examples);

}  // namespace tb
