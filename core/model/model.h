// Model: the public facade over a loaded causal LM (no LibTorch in this header): load, logits,
// generate (one prompt or a batch).
#pragma once

#include "model/config.h"
#include "quant/quant_format.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tb {

class Tokenizer;

// While a guard lives, every model load on its thread (Model::load, a run's tuned model, a
// reference copy) stops once *stop is true, checked between tensors, with tb::Error "<folder>:
// loading stopped": a worker's Cancel, or a window closing, need not wait for a large checkpoint
// to finish loading. Guards nest; the innermost one counts.
class LoadStopGuard {
public:
    explicit LoadStopGuard(const std::atomic<bool>* stop);
    ~LoadStopGuard();
    LoadStopGuard(const LoadStopGuard&) = delete;
    LoadStopGuard& operator=(const LoadStopGuard&) = delete;

private:
    const std::atomic<bool>* m_previous;
};
// Whether the innermost guard of this thread says stop (false without a guard).
bool loadStopRequested();

struct LoadOptions {
    std::string dtype = "fp32";   // fp32 | bf16 | fp16
    std::string device = "auto";  // cpu | cuda | cuda:N | auto (cuda when available)
    // The blocks' linear weights held quantised (CausalLM::setQuantization); none by default.
    QuantOptions quant = {};
};

struct GenerateOptions {
    int maxNewTokens = 64;
    bool greedy = false;  // argmax; ignores temperature, top-k and top-p
    double temperature = 1.0;
    int topK = 0;       // 0 = off
    double topP = 1.0;  // 1 = off
    double repetitionPenalty =
        1.0;  // 1 = off; as transformers: divide positive logits, multiply negative
    uint64_t seed = 0;
    bool stopAtEos = true;
    // More ids that end generation as EOS does (a chat template's end-of-turn tokens); the model's
    // eos_token_id list and the tokenizer's EOS always count.
    std::vector<int32_t> stopTokenIds;
    std::vector<std::string> stopStrings;  // need a tokenizer
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated ids (stop string tokens included, EOS excluded)
    std::string text;             // decoded continuation, cut before a stop string
    std::string stopReason;  // "eos" | "max_tokens" | "stop_string" | "cancelled" | "context_full"
    int64_t prefillTokens = 0;
    double prefillSeconds = 0;
    double decodeSeconds = 0;
};

// Called for each new token with its id and the text it completed (may be empty while a multi-byte
// character is incomplete). Return false to cancel.
using TokenCallback = std::function<bool(int32_t id, const std::string& text)>;
// Called after each step of batched generation (every running row took one token) with the number
// of rows finished so far. Return false to cancel: the rows still running stop as "cancelled".
using BatchCallback = std::function<bool(size_t finishedRows)>;

// The weights a loaded model holds, as they sit in memory: how they are stored and their bytes.
struct WeightFootprint {
    std::string dtype = "fp32";       // the unquantised weights' dtype
    QuantOptions quant;               // how the blocks' linear weights are held
    int64_t parameters = 0;           // every parameter, a quantised weight counted by its elements
    int64_t bytes = 0;                // all of them, quantised weights at their packed size
    int64_t quantizedParameters = 0;  // the quantised weights' elements
    int64_t quantizedBytes = 0;       // their codes and statistics (absmax, double-quant tables)
    // Bits per weight of the quantised layers (statistics included); the dtype's bits (32, 16)
    // when none is quantised.
    double bitsPerWeight() const;
};
// "NF4 (double quant) · 4.13 bits/weight (linear layers) · 1.2 MiB of weights", or
// "fp32 · 32 bits/weight · 3.4 MiB of weights".
std::string describeWeights(const WeightFootprint& weights);

class Model {
public:
    // Loads config.json + safetensors weights from a folder. Throws tb::Error with the file and
    // problem.
    static std::unique_ptr<Model> load(const std::string& dir, const LoadOptions& options = {});
    // A model with N(0, 0.02) weights for a config (tests and benchmarks).
    static std::unique_ptr<Model> createRandom(const ModelConfig& config,
                                               const LoadOptions& options, uint64_t seed);
    ~Model();

    const ModelConfig& config() const;
    std::string device() const;         // "cpu", "cuda:0"
    std::string dtype() const;          // "fp32", "bf16", "fp16"
    int64_t parameterCount() const;     // counted from the loaded tensors (quantised ones included)
    QuantOptions quantization() const;  // how the base weights are held
    WeightFootprint weightFootprint() const;

    // Logits of one sequence in fp32, row-major [ids.size(), vocab].
    std::vector<float> logits(const std::vector<int32_t>& ids) const;

    GenerateResult generate(const std::vector<int32_t>& prompt, const GenerateOptions& options,
                            const Tokenizer* tokenizer = nullptr,
                            const TokenCallback& onToken = {}) const;
    // Generates for several prompts at once (one batch, left-padded): result i holds the tokens,
    // text and stop reason that generate(prompts[i], options) gives (sampled rows too: each row
    // draws from its own generator seeded with options.seed), its own prefillTokens, and the
    // batch's prefill and decode seconds. Each row stops on its own and leaves the batch.
    std::vector<GenerateResult> generateBatch(const std::vector<std::vector<int32_t>>& prompts,
                                              const GenerateOptions& options,
                                              const Tokenizer* tokenizer = nullptr,
                                              const BatchCallback& onStep = {}) const;

    struct Impl;
    Impl& impl() const { return *m_impl; }
    static std::unique_ptr<Model> fromImpl(std::unique_ptr<Impl> impl);

private:
    explicit Model(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// "cuda" when LibTorch sees a CUDA device, else "cpu".
std::string defaultDevice();
bool cudaAvailable();

}  // namespace tb
