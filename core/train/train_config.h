// TrainConfig: everything a fine-tuning run needs, read from a run JSON (with key=value overrides)
// and validated before anything loads; errors name the key and the allowed values.
#pragma once

#include "data/example.h"
#include "dist/dist_options.h"
#include "memory/estimator.h"
#include "peft/method.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/model_template.h"
#include "train/objective.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// The run's closed choices, each with one name function (as run.json spells it) and one parse
// function (nullopt for an unknown name), like methodName / parseMethod.

// fp32; bf16: autocast over fp32 weights; fp16: autocast on CUDA with dynamic loss scaling.
enum class Precision { Fp32, Bf16, Fp16 };
const char* precisionName(Precision precision);  // "fp32", "bf16", "fp16"
std::optional<Precision> parsePrecision(const std::string& name);

// full: through the [tokens, vocab] logits; chunked: cross-entropy in chunks, logits never whole.
enum class LossKind { Full, Chunked };
const char* lossKindName(LossKind loss);  // "full", "chunked"
std::optional<LossKind> parseLossKind(const std::string& name);

enum class OptimizerKind { AdamW, Sgd };
const char* optimizerKindName(OptimizerKind optimizer);  // "adamw", "sgd"
std::optional<OptimizerKind> parseOptimizerKind(const std::string& name);

enum class ScheduleKind { Constant, Linear, Cosine };
const char* scheduleKindName(ScheduleKind schedule);  // "constant", "linear", "cosine"
std::optional<ScheduleKind> parseScheduleKind(const std::string& name);

// data.chat_template as run.json spells it: a family's name, or "model" for nullopt (the model's
// own Jinja template; older run.json files wrote "auto"); its parse is parseChatTemplateName after
// "model".
const char* chatTemplateChoiceName(std::optional<ChatTemplateFamily> family);

struct DataOptions {
    // Either a dataset store with snapshot ids (what the run saw is then recorded by id and
    // SHA-256)...
    std::string store;        // dataset store file (tunebench data ...)
    std::string snapshot;     // training snapshot id, e.g. "train-v3"
    std::string valSnapshot;  // optional validation snapshot; else val_ratio of the training one
    std::string generalSnapshot;  // optional general-text holdout snapshot
    // ...or JSONL files (hashed into run.json).
    std::string trainFile;  // JSONL; relative paths resolve against the config file's folder
    std::string valFile;    // optional; else val_ratio of train
    std::string
        generalFile;  // optional holdout of general text: base-vs-tuned loss shows forgetting
    double valRatio = 0.1;
    ExampleFormat format = ExampleFormat::Auto;
    std::optional<ChatTemplateFamily> chatTemplate;  // nullopt: the model's own template
    TrainOn trainOn = TrainOn::All;                  // which assistant turns carry loss
    bool lossOnResponsesOnly = true;
    bool packing = false;        // whole examples in bins of max_length tokens (not with prompt)
    bool groupByLength = false;  // unpacked: batches of similar length (lengthGroupedOrder)
    int maxLength = 256;

    bool operator==(const DataOptions&) const = default;
};

struct OptimOptions {
    OptimizerKind optimizer = OptimizerKind::AdamW;
    double lr = 1e-3;
    double weightDecay = 0.0;  // decoupled (AdamW); never applied to biases and norms
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    double momentum = 0.0;  // sgd
    double l2 = 0.0;        // L2 penalty added to the loss (distinct from decoupled decay)
    ScheduleKind schedule = ScheduleKind::Cosine;
    int64_t warmupSteps = 0;
    double warmupRatio = 0.0;  // used when warmup_steps is 0
    double minLr = 0.0;
    double clipNorm = 1.0;  // 0 = no clipping (the norm is still reported)

    bool operator==(const OptimOptions&) const = default;
};

// Generation-based evaluation during training (run.json's "eval"): every generate_every steps the
// model answers a fixed seeded sample of the validation split and the metrics are logged.
struct GenerationEvalOptions {
    int64_t generateEvery = 0;  // steps; 0 = off
    int sample = 16;            // validation cases, the same ones every time (seeded)
    std::vector<std::string> metrics = {"exact_match", "f1"};
    int maxNewTokens = 64;

    bool operator==(const GenerationEvalOptions&) const = default;
};

// A run: the method and its options (MethodOptions: method, lora, adapter, prompt, partial) and the
// rest.
struct TrainConfig : MethodOptions {
    std::string name = "run";
    // sft trains on examples; the others on preference pairs (data files or snapshots of pairs).
    Objective objective = Objective::Sft;
    PreferenceOptions preference;
    std::string model;               // model folder
    std::string outputDir = "runs";  // run directory = output_dir/name
    DataOptions data;
    OptimOptions optim;
    int batchSize = 8;     // sequences per micro-batch
    int gradAccum = 1;     // micro-batches per optimizer step
    int64_t maxSteps = 0;  // optimizer steps; 0 = epochs x steps per epoch
    int epochs = 1;
    Precision precision = Precision::Fp32;
    std::string device = "auto";
    bool gradientCheckpointing = false;
    LossKind loss = LossKind::Full;
    int lossChunkTokens = 1024;  // chunked: tokens per chunk
    int64_t evalEvery = 0;       // steps; 0 = only at the end
    GenerationEvalOptions eval;
    DistOptions dist;  // data parallelism (several processes); ignored by a single process
    int64_t logEvery = 1;
    int64_t saveEvery = 0;  // steps; 0 = only at the end
    int keepCheckpoints = 2;
    uint64_t seed = 0;
    double spikeFactor = 4.0;  // divergence guard: loss > factor x recent mean pauses; 0 = off
    int spikeWindow = 20;
    std::string sourcePath;  // the config file, for error messages and relative paths

    bool operator==(const TrainConfig&) const = default;
};

// Parses a run config. Keys are snake_case, nested objects for
// lora/adapter/prompt/partial/data/optim (e.g. {"lora": {"rank": 8}}); a few common keys are also
// accepted at top level (lr, max_steps). Unknown keys, wrong types and out-of-range values throw
// tb::Error naming the key and what is allowed.
TrainConfig parseTrainConfig(const nlohmann::json& json, const std::string& sourcePath);
TrainConfig loadTrainConfig(const std::string& path,
                            const std::vector<std::string>& overrides = {});
// Applies "key=value" (dotted keys for nested: "lora.rank=4"); the value is parsed as JSON when it
// parses, else taken as a string.
void applyOverride(nlohmann::json& json, const std::string& keyEqualsValue);
nlohmann::json toJson(const TrainConfig& config);  // the resolved config (run.json)

// The estimate options a training run implies, as the trainer's own memory report uses them: fp32
// stays fp32, bf16 / fp16 become the autocast (-mixed) conventions; the optimizer (sgd with
// momentum: sgd-momentum), micro-batch, accumulation, checkpointing and loss from the run. seq:
// tokens per sequence.
EstimateOptions estimateOptionsFor(const TrainConfig& run, int64_t seq);

// The chat template a run renders with: data.chat_template's family, or the model's own (parsed
// now). Throws tb::Error naming the config, the key and the model folder when the model has none
// or its template does not parse.
ChatTemplate runChatTemplate(const TrainConfig& config);

}  // namespace tb
