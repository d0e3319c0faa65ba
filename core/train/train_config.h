// TrainConfig: everything a fine-tuning run needs, read from a run JSON (with key=value overrides) and
// validated before anything loads; errors name the key and the allowed values.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

enum class Method { Full, Partial, Lora, Adapter, Prompt };
const char* methodName(Method method);  // "full", "partial", "lora", "adapter", "prompt"

struct LoraOptions {
    int rank = 8;
    double alpha = 16.0;
    double dropout = 0.0;
    std::vector<std::string> targets;  // empty: q_proj,v_proj (c_attn for gpt2)
    bool rslora = false;               // scaling alpha / sqrt(rank) instead of alpha / rank

    bool operator==(const LoraOptions&) const = default;
};

struct AdapterOptions {
    std::string kind = "houlsby";      // houlsby (after attention and MLP) | pfeiffer (after MLP)
    int size = 0;                      // bottleneck width; 0 = hidden_size / reduction_factor
    int reductionFactor = 16;
    std::string activation = "relu";   // relu | gelu | silu | tanh

    bool operator==(const AdapterOptions&) const = default;
};

struct PromptOptions {
    int numTokens = 16;
    std::string initText;              // empty: random init; else embeddings of this text's tokens (repeated)

    bool operator==(const PromptOptions&) const = default;
};

struct PartialOptions {
    int trainableBlocks = 1;           // the last N transformer blocks train
    std::vector<std::string> modules;  // also train: "embeddings", "lm_head", "norms"

    bool operator==(const PartialOptions&) const = default;
};

struct DataOptions {
    // Either a dataset store with snapshot ids (what the run saw is then recorded by id and SHA-256)...
    std::string store;                 // dataset store file (tunebench data ...)
    std::string snapshot;              // training snapshot id, e.g. "train-v3"
    std::string valSnapshot;           // optional validation snapshot; else val_ratio of the training one
    std::string generalSnapshot;       // optional general-text holdout snapshot
    // ...or JSONL files (hashed into run.json).
    std::string trainFile;             // JSONL; relative paths resolve against the config file's folder
    std::string valFile;               // optional; else val_ratio of train
    std::string generalFile;           // optional holdout of general text: base-vs-tuned loss shows forgetting
    double valRatio = 0.1;
    std::string format = "auto";       // auto | alpaca | messages | prompt_completion | text
    std::string chatTemplate = "auto"; // auto (from the model) | chatml | llama3 | inst | alpaca | plain
    bool lossOnResponsesOnly = true;
    bool packing = false;
    int maxLength = 256;

    bool operator==(const DataOptions&) const = default;
};

struct OptimOptions {
    std::string optimizer = "adamw";   // adamw | sgd
    double lr = 1e-3;
    double weightDecay = 0.0;          // decoupled (AdamW); never applied to biases and norms
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double momentum = 0.0;             // sgd
    double l2 = 0.0;                   // L2 penalty added to the loss (distinct from decoupled decay)
    std::string schedule = "cosine";   // constant | linear | cosine
    int64_t warmupSteps = 0;
    double warmupRatio = 0.0;          // used when warmup_steps is 0
    double minLr = 0.0;
    double clipNorm = 1.0;             // 0 = no clipping (the norm is still reported)

    bool operator==(const OptimOptions&) const = default;
};

struct TrainConfig {
    std::string name = "run";
    std::string model;                 // model folder
    std::string outputDir = "runs";    // run directory = output_dir/name
    Method method = Method::Lora;
    LoraOptions lora;
    AdapterOptions adapter;
    PromptOptions prompt;
    PartialOptions partial;
    DataOptions data;
    OptimOptions optim;
    int batchSize = 8;                 // sequences per micro-batch
    int gradAccum = 1;                 // micro-batches per optimizer step
    int64_t maxSteps = 0;              // optimizer steps; 0 = epochs x steps per epoch
    int epochs = 1;
    std::string precision = "fp32";    // fp32 | bf16 (autocast) | fp16 (CUDA, dynamic loss scaling)
    std::string device = "auto";
    bool gradientCheckpointing = false;
    std::string loss = "full";         // full | chunked (cross-entropy in chunks, logits never materialised)
    int lossChunkTokens = 1024;        // chunked: tokens per chunk
    int64_t evalEvery = 0;             // steps; 0 = only at the end
    int64_t logEvery = 1;
    int64_t saveEvery = 0;             // steps; 0 = only at the end
    int keepCheckpoints = 2;
    uint64_t seed = 0;
    double spikeFactor = 4.0;          // divergence guard: loss > factor x recent mean pauses; 0 = off
    int spikeWindow = 20;
    std::string sourcePath;            // the config file, for error messages and relative paths

    bool operator==(const TrainConfig&) const = default;
};

// Parses a run config. Keys are snake_case, nested objects for lora/adapter/prompt/partial/data/optim
// (e.g. {"lora": {"rank": 8}}); a few common keys are also accepted at top level (lr, max_steps).
// Unknown keys, wrong types and out-of-range values throw tb::Error naming the key and what is allowed.
TrainConfig parseTrainConfig(const nlohmann::json& json, const std::string& sourcePath);
TrainConfig loadTrainConfig(const std::string& path, const std::vector<std::string>& overrides = {});
// Applies "key=value" (dotted keys for nested: "lora.rank=4"); the value is parsed as JSON when it parses,
// else taken as a string.
void applyOverride(nlohmann::json& json, const std::string& keyEqualsValue);
nlohmann::json toJson(const TrainConfig& config);  // the resolved config (run.json)

// Learning-rate schedule: a pure function of the config and the planned number of optimizer steps.
int64_t warmupStepsFor(const OptimOptions& optim, int64_t totalSteps);
double learningRateAt(const OptimOptions& optim, int64_t step, int64_t totalSteps);  // step: 0-based
std::vector<double> plannedSchedule(const OptimOptions& optim, int64_t totalSteps);
// Optimizer steps a run will take: max_steps when set, else epochs x ceil(sequences / (batch x accum)).
int64_t plannedSteps(const TrainConfig& config, int64_t trainSequences);

} // namespace tb
