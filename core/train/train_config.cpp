
// Run config parsing and validation (keys, types, ranges, closed choices read into their enums),
// the names of those enums, overrides, run.json (toJson) and the estimate options of a run.
#include "train/train_config.h"

#include "eval/metric.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/join.h"
#include "util/json_depth.h"
#include "util/paths.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <string_view>

namespace tb {
namespace {

using nlohmann::json;
using Names = std::vector<std::string>;

// The names of `values`, in order: what a closed choice admits and its messages list.
template <typename Enum> Names namesOf(const std::vector<Enum>& values, const char* (*nameOf)(Enum))
{
    Names out;
    for (Enum v : values)
        out.push_back(nameOf(v));
    return out;
}

// The enum value that nameOf spells `name`; nullopt when none does.
template <typename Enum>
std::optional<Enum> parseName(const std::string& name, const std::vector<Enum>& values,
                              const char* (*nameOf)(Enum))
{
    for (Enum v : values)
        if (name == nameOf(v))
            return v;
    return std::nullopt;
}

const std::vector<Precision> kPrecisionValues{Precision::Fp32, Precision::Bf16, Precision::Fp16};
const std::vector<LossKind> kLossValues{LossKind::Full, LossKind::Chunked};
const std::vector<OptimizerKind> kOptimizerValues{OptimizerKind::AdamW, OptimizerKind::Sgd};
const std::vector<ScheduleKind> kScheduleValues{ScheduleKind::Constant, ScheduleKind::Linear,
                                                ScheduleKind::Cosine};

const Names kMethods = namesOf(
    {Method::Full, Method::Partial, Method::Lora, Method::Adapter, Method::Prompt}, methodName);
const Names kLosses = namesOf(kLossValues, lossKindName);
const Names kQuantKinds =
    namesOf({QuantKind::None, QuantKind::Nf4, QuantKind::Fp4, QuantKind::Int8}, quantKindName);
const Names kPrecisions = namesOf(kPrecisionValues, precisionName);
const Names kAdapterKinds = namesOf({AdapterKind::Houlsby, AdapterKind::Pfeiffer}, adapterKindName);
const Names kActivations = namesOf({AdapterActivation::Relu, AdapterActivation::Gelu,
                                    AdapterActivation::Silu, AdapterActivation::Tanh},
                                   adapterActivationName);
const Names kPartialModules{"embeddings", "lm_head", "norms"};
const Names kFormats = namesOf({ExampleFormat::Auto, ExampleFormat::Alpaca, ExampleFormat::Messages,
                                ExampleFormat::PromptCompletion, ExampleFormat::Text},
                               exampleFormatName);
const Names kChatTemplates =
    namesOf({std::nullopt, ChatTemplateFamily::ChatML, ChatTemplateFamily::Llama3,
             ChatTemplateFamily::Inst, ChatTemplateFamily::Alpaca, ChatTemplateFamily::Plain},
            chatTemplateChoiceName);
const Names kTrainOn = namesOf({TrainOn::All, TrainOn::Last}, trainOnName);
const Names kOptimizers = namesOf(kOptimizerValues, optimizerKindName);
const Names kSchedules = namesOf(kScheduleValues, scheduleKindName);

const Names kTopKeys{"name",
                     "objective",
                     "preference",
                     "model",
                     "output_dir",
                     "method",
                     "quant",
                     "quant_double",
                     "quant_head",
                     "batch_size",
                     "grad_accum",
                     "max_steps",
                     "epochs",
                     "precision",
                     "device",
                     "gradient_checkpointing",
                     "loss",
                     "loss_chunk_tokens",
                     "eval_every",
                     "eval",
                     "dist",
                     "log_every",
                     "save_every",
                     "keep_checkpoints",
                     "seed",
                     "spike_factor",
                     "spike_window",
                     "lora",
                     "adapter",
                     "prompt",
                     "partial",
                     "data",
                     "optim",
                     "lr",
                     "trainable_tokens"};
const Names kLoraKeys{"rank", "alpha", "dropout", "targets", "rslora"};
const Names kAdapterKeys{"kind", "size", "reduction_factor", "activation"};
const Names kPromptKeys{"num_tokens", "init_text"};
const Names kPartialKeys{"trainable_blocks", "modules"};
const std::vector<Objective> kObjectiveValues{Objective::Sft,   Objective::Dpo,  Objective::Ipo,
                                              Objective::Simpo, Objective::Orpo, Objective::Reward};
const std::vector<ReferenceKind> kReferenceValues{ReferenceKind::Auto, ReferenceKind::Copy,
                                                  ReferenceKind::Precomputed};
const Names kObjectives = namesOf(kObjectiveValues, objectiveName);
const Names kReferences = namesOf(kReferenceValues, referenceKindName);
const Names kPairLayouts =
    namesOf({PairLayout::Auto, PairLayout::Standard, PairLayout::HhRlhf, PairLayout::UltraFeedback},
            pairLayoutName);
const Names kPreferenceKeys{"beta",       "label_smoothing", "gamma",
                            "sft_weight", "reference",       "layout"};
const Names kDistKeys{"zero", "timeout_s", "bucket_mb"};
const Names kEvalKeys{"generate_every", "sample", "metrics", "max_new_tokens"};
const Names kDataKeys{"store",
                      "snapshot",
                      "val_snapshot",
                      "general_snapshot",
                      "train_file",
                      "val_file",
                      "general_file",
                      "val_ratio",
                      "format",
                      "chat_template",
                      "loss_on_responses_only",
                      "packing",
                      "group_by_length",
                      "max_length",
                      "train_on"};
const Names kOptimKeys{"optimizer",    "lr",       "weight_decay", "beta1",    "beta2",
                       "eps",          "momentum", "l2",           "schedule", "warmup_steps",
                       "warmup_ratio", "min_lr",   "clip_norm"};

// A value as it appears in messages, with its JSON type: `string "abc"`, `number 4.5`, `array
// [1,2]`.
std::string describe(const json& value)
{
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60)
        text = text.substr(0, 57) + "...";
    if (value.is_null())
        return "null";
    if (value.is_number())
        return "number " + text;
    return std::string(value.type_name()) + " " + text;
}

// Shortest text that reads back as v: "0", "1", "0.5", "1e-08".
std::string formatNumber(double v)
{
    if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 1e15)
        return std::to_string(static_cast<int64_t>(v));
    return json(v).dump();
}

size_t editDistance(const std::string& a, const std::string& b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// One JSON object of the config ("" for the top level, else "lora", "data", ...): typed reads with
// messages that name the full dotted key.
class Section {
public:
    Section(const json& object, std::string prefix, const std::string& source)
        : m_object(object), m_prefix(std::move(prefix)), m_source(source)
    {
    }

    std::string key(std::string_view name) const
    {
        return m_prefix.empty() ? std::string(name) : m_prefix + "." + std::string(name);
    }

    template <typename... Parts>
    [[noreturn]] void bad(std::string_view name, Parts&&... parts) const
    {
        fail(m_source, ": key '", key(name), "' ", std::forward<Parts>(parts)...);
    }

    void checkKeys(const Names& allowed) const
    {
        for (const auto& [name, value] : m_object.items()) {
            if (std::find(allowed.begin(), allowed.end(), name) != allowed.end())
                continue;
            std::string hint;
            for (const auto& candidate : allowed)
                if (editDistance(name, candidate) <= 2) {
                    hint = " (did you mean '" + key(candidate) + "'?)";
                    break;
                }
            fail(m_source, ": unknown key '", key(name), "'", hint, "; allowed keys of ",
                 m_prefix.empty() ? std::string("the top level") : "'" + m_prefix + "'", ": ",
                 join(allowed));
        }
    }

    // nullptr when absent or null (null means "use the default").
    const json* find(std::string_view name) const
    {
        auto it = m_object.find(name);
        return it == m_object.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(std::string_view name) const { return find(name) != nullptr; }

    int64_t integer(std::string_view name, int64_t fallback, int64_t min,
                    int64_t max = INT64_MAX) const
    {
        const json* v = find(name);
        if (!v)
            return fallback;
        int64_t out = 0;
        if (v->is_number_unsigned()) {
            if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
                bad(name, "must be <= ", max, " (got ", v->dump(), ")");
            out = v->get<int64_t>();
        } else if (v->is_number_integer()) {
            out = v->get<int64_t>();
        } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
                   v->get<double>() == std::trunc(v->get<double>()) &&
                   std::fabs(v->get<double>()) < 9e15) {
            out = static_cast<int64_t>(v->get<double>());  // 4.0 is accepted as 4
        } else {
            bad(name, "must be an integer (got ", describe(*v), ")");
        }
        if (out < min)
            bad(name, "must be >= ", min, " (got ", out, ")");
        if (out > max)
            bad(name, "must be <= ", max, " (got ", out, ")");
        return out;
    }
    int intValue(std::string_view name, int fallback, int min) const
    {
        return static_cast<int>(integer(name, fallback, min, INT_MAX));
    }

    double number(std::string_view name, double fallback) const
    {
        const json* v = find(name);
        if (!v)
            return fallback;
        if (!v->is_number())
            bad(name, "must be a number (got ", describe(*v), ")");
        double out = v->get<double>();
        if (!std::isfinite(out))
            bad(name, "must be finite (got ", v->dump(), ")");
        return out;
    }

    bool boolean(std::string_view name, bool fallback) const
    {
        const json* v = find(name);
        if (!v)
            return fallback;
        if (!v->is_boolean())
            bad(name, "must be true or false (got ", describe(*v), ")");
        return v->get<bool>();
    }

    std::string string(std::string_view name, const std::string& fallback) const
    {
        const json* v = find(name);
        if (!v)
            return fallback;
        if (!v->is_string())
            bad(name, "must be a string (got ", describe(*v), ")");
        return v->get<std::string>();
    }

    std::string choice(std::string_view name, const std::string& fallback,
                       const Names& allowed) const
    {
        std::string out = string(name, fallback);
        if (std::find(allowed.begin(), allowed.end(), out) == allowed.end())
            bad(name, "must be one of ", join(allowed, " | "), " (got '", out, "')");
        return out;
    }

    // A closed choice into its enum: `allowed` holds nameOf's names, all of which parse reads
    // (parse may read aliases too, which the config does not admit).
    template <typename Enum>
    Enum choice(std::string_view name, Enum fallback, const Names& allowed,
                const char* (*nameOf)(Enum), std::optional<Enum> (*parse)(const std::string&)) const
    {
        return parse(choice(name, nameOf(fallback), allowed)).value_or(fallback);
    }

    // An array of strings, or one comma-separated string ("q_proj, v_proj"); blanks are dropped.
    Names list(std::string_view name, const Names& fallback) const
    {
        const json* v = find(name);
        if (!v)
            return fallback;
        Names raw;
        if (v->is_string()) {
            std::string text = v->get<std::string>();
            size_t start = 0;
            while (start <= text.size()) {
                size_t comma = std::min(text.find(',', start), text.size());
                raw.push_back(text.substr(start, comma - start));
                start = comma + 1;
            }
        } else if (v->is_array()) {
            for (size_t i = 0; i < v->size(); ++i) {
                if (!(*v)[i].is_string())
                    bad(name, "must be an array of strings or a comma-separated string (item ", i,
                        " is ", describe((*v)[i]), ")");
                raw.push_back((*v)[i].get<std::string>());
            }
        } else {
            bad(name, "must be an array of strings or a comma-separated string (got ", describe(*v),
                ")");
        }
        Names out;
        for (auto& item : raw) {
            size_t first = item.find_first_not_of(" \t");
            if (first == std::string::npos)
                continue;
            size_t last = item.find_last_not_of(" \t");
            out.push_back(item.substr(first, last - first + 1));
        }
        return out;
    }

    // A nested object; an empty one when absent.
    Section child(std::string_view name) const
    {
        static const json kEmpty = json::object();
        const json* v = find(name);
        if (v && !v->is_object())
            bad(name, "must be an object (got ", describe(*v), ")");
        return Section(v ? *v : kEmpty, key(name), m_source);
    }

    // Range checks; written as !(ok) so that NaN fails too.
    void atLeast(std::string_view name, double v, double min) const
    {
        if (!(v >= min))
            bad(name, "must be >= ", formatNumber(min), " (got ", formatNumber(v), ")");
    }
    void above(std::string_view name, double v, double min) const
    {
        if (!(v > min))
            bad(name, "must be > ", formatNumber(min), " (got ", formatNumber(v), ")");
    }
    void halfOpen(std::string_view name, double v, double lo, double hi) const
    {
        if (!(v >= lo && v < hi))
            bad(name, "must be in [", formatNumber(lo), ", ", formatNumber(hi), ") (got ",
                formatNumber(v), ")");
    }

private:
    const json& m_object;
    std::string m_prefix;
    const std::string& m_source;
};

// trainable_tokens: "auto", or an array of token ids (integers >= 0) and token texts.
TrainableTokensOptions parseTrainableTokens(const Section& s,
                                            const TrainableTokensOptions& fallback)
{
    const char* name = "trainable_tokens";
    const json* v = s.find(name);
    if (!v)
        return fallback;
    if (v->is_string() && v->get<std::string>() == "auto")
        return {};
    if (!v->is_array())
        s.bad(name, "must be \"auto\" or an array of token ids and token texts, [] for none (got ",
              describe(*v), ")");
    TrainableTokensOptions o;
    o.automatic = false;
    for (size_t i = 0; i < v->size(); ++i) {
        const json& item = (*v)[i];
        if (item.is_number_integer() && item.get<int64_t>() >= 0)
            o.tokens.push_back({item.get<int64_t>(), ""});
        else if (item.is_string() && !item.get<std::string>().empty())
            o.tokens.push_back({-1, item.get<std::string>()});
        else
            s.bad(name, "item ", i, " must be a token id (an integer >= 0) or a token's text (got ",
                  describe(item), ")");
    }
    return o;
}

json trainableTokensJson(const TrainableTokensOptions& o)
{
    if (o.automatic)
        return "auto";
    json out = json::array();
    for (const auto& t : o.tokens)
        out.push_back(t.id >= 0 ? json(t.id) : json(t.text));
    return out;
}

bool validDevice(const std::string& device)
{
    if (device == "cpu" || device == "cuda" || device == "auto")
        return true;
    if (device.rfind("cuda:", 0) != 0 || device.size() == 5 || device.size() > 8)
        return false;
    return std::all_of(device.begin() + 5, device.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

// Relative paths resolve against the config file's folder; results are absolute and normalized, so
// resolving again (run.json re-read from the run directory) changes nothing.
std::string resolvePath(const std::string& path, const std::string& sourcePath)
{
    if (path.empty())
        return path;
    namespace fs = std::filesystem;
    fs::path p(path);
    if (p.is_relative())
        p = fs::path(sourcePath).parent_path() / p;
    std::error_code ec;
    fs::path absolute = fs::absolute(p, ec);
    return (ec ? p : absolute).lexically_normal().string();
}

void parseLora(const Section& s, LoraOptions& o)
{
    s.checkKeys(kLoraKeys);
    o.rank = static_cast<int>(s.integer("rank", o.rank, 1, 1 << 16));
    o.alpha = s.number("alpha", o.alpha);
    s.above("alpha", o.alpha, 0);
    o.dropout = s.number("dropout", o.dropout);
    s.halfOpen("dropout", o.dropout, 0, 1);
    o.targets = s.list("targets", o.targets);
    o.rslora = s.boolean("rslora", o.rslora);
}

// quant, quant_double, quant_head: after `method`, which decides whether the base may be quantised.
void parseQuant(const Section& top, TrainConfig& c)
{
    c.quant.kind = top.choice("quant", c.quant.kind, kQuantKinds, quantKindName, parseQuantKind);
    c.quant.doubleQuant = top.boolean("quant_double", c.quant.doubleQuant);
    c.quant.head = top.boolean("quant_head", c.quant.head);
    if (!c.quant.enabled()) {
        if (top.has("quant_double") && c.quant.doubleQuant)
            top.bad("quant_double", "needs quant nf4 or fp4");
        if (top.has("quant_head") && c.quant.head)
            top.bad("quant_head", "needs quant nf4, fp4 or int8");
        return;
    }
    if (c.method == Method::Full || c.method == Method::Partial)
        top.bad("quant", quantKindName(c.quant.kind),
                " holds the frozen base weights quantised, "
                "but method '",
                methodName(c.method),
                "' trains base weights, which cannot be "
                "held quantised; use lora, adapter or prompt (QLoRA is lora with quant nf4)");
    if (c.quant.kind == QuantKind::Int8 && c.quant.doubleQuant)
        top.bad("quant_double", "applies to the 4-bit formats (nf4, fp4), not int8");
}

void parseAdapter(const Section& s, AdapterOptions& o)
{
    s.checkKeys(kAdapterKeys);
    o.kind = s.choice("kind", o.kind, kAdapterKinds, adapterKindName, parseAdapterKind);
    o.size = static_cast<int>(s.integer("size", o.size, 0, 1 << 20));
    o.reductionFactor = s.intValue("reduction_factor", o.reductionFactor, 1);
    o.activation = s.choice("activation", o.activation, kActivations, adapterActivationName,
                            parseAdapterActivation);
}

void parsePrompt(const Section& s, PromptOptions& o)
{
    s.checkKeys(kPromptKeys);
    o.numTokens = static_cast<int>(s.integer("num_tokens", o.numTokens, 1, 1 << 20));
    o.initText = s.string("init_text", o.initText);
}

void parsePartial(const Section& s, PartialOptions& o)
{
    s.checkKeys(kPartialKeys);
    o.trainableBlocks = s.intValue("trainable_blocks", o.trainableBlocks, 0);
    o.modules = s.list("modules", o.modules);
    for (const auto& m : o.modules)
        if (std::find(kPartialModules.begin(), kPartialModules.end(), m) == kPartialModules.end())
            s.bad("modules", "items must be among ", join(kPartialModules, " | "), " (got '", m,
                  "')");
}

void parseEval(const Section& s, GenerationEvalOptions& o)
{
    s.checkKeys(kEvalKeys);
    o.generateEvery = s.integer("generate_every", o.generateEvery, 0);
    o.sample = s.intValue("sample", o.sample, 1);
    o.metrics = s.list("metrics", o.metrics);
    const auto& known = eval::metricNames();
    for (const auto& m : o.metrics)
        if (std::find(known.begin(), known.end(), m) == known.end())
            s.bad("metrics", "items must be among ", join(known, " | "), " (got '", m, "')");
    // Each metric once: the evaluation refuses a list that names one twice. A config file says
    // so (loadTrainConfig); a run.json written before that check keeps the first of each.
    std::vector<std::string> once;
    for (const auto& m : o.metrics)
        if (std::find(once.begin(), once.end(), m) == once.end())
            once.push_back(m);
    o.metrics = std::move(once);
    if (o.generateEvery > 0 && o.metrics.empty())
        s.bad("metrics", "must name at least one metric when 'eval.generate_every' is set");
    o.maxNewTokens = s.intValue("max_new_tokens", o.maxNewTokens, 1);
}

void parseDist(const Section& s, DistOptions& o)
{
    s.checkKeys(kDistKeys);
    o.zero = s.intValue("zero", o.zero, 0);
    if (o.zero == 3)
        s.bad("zero", "3 is not offered: ZeRO-3 shards the weights themselves and gathers every "
                      "layer's weights in each forward and backward pass; Tunebench offers 0 "
                      "(replicate), 1 (shard optimizer states) and 2 (also gradients)");
    if (o.zero > 2)
        s.bad("zero", "must be 0, 1 or 2 (got ", o.zero, ")");
    o.timeoutSeconds = s.intValue("timeout_s", o.timeoutSeconds, 1);
    o.bucketMiB = s.integer("bucket_mb", o.bucketMiB, 1);
}

void parsePreference(const Section& s, PreferenceOptions& o)
{
    s.checkKeys(kPreferenceKeys);
    o.beta = s.number("beta", o.beta);
    s.above("beta", o.beta, 0);
    o.labelSmoothing = s.number("label_smoothing", o.labelSmoothing);
    s.halfOpen("label_smoothing", o.labelSmoothing, 0, 0.5);
    o.gamma = s.number("gamma", o.gamma);
    o.sftWeight = s.number("sft_weight", o.sftWeight);
    if (o.sftWeight < 0)
        s.bad("sft_weight", "must be >= 0 (got ", formatNumber(o.sftWeight), ")");
    o.reference =
        s.choice("reference", o.reference, kReferences, referenceKindName, parseReferenceKind);
    o.layout = s.choice("layout", o.layout, kPairLayouts, pairLayoutName, parsePairLayout);
}

void parseData(const Section& s, DataOptions& o)
{
    s.checkKeys(kDataKeys);
    o.store = s.string("store", o.store);
    o.snapshot = s.string("snapshot", o.snapshot);
    o.valSnapshot = s.string("val_snapshot", o.valSnapshot);
    o.generalSnapshot = s.string("general_snapshot", o.generalSnapshot);
    o.trainFile = s.string("train_file", o.trainFile);
    if (!o.store.empty()) {
        if (o.snapshot.empty())
            s.bad("snapshot", "is required with 'store' (a snapshot id such as train-v1: tunebench "
                              "data snapshot)");
        if (!o.trainFile.empty())
            s.bad(
                "train_file",
                "cannot be combined with 'store': train from a snapshot or from a file, not both");
    } else {
        if (!o.snapshot.empty() || !o.valSnapshot.empty() || !o.generalSnapshot.empty())
            s.bad("store", "is required for snapshots (the dataset store file)");
        if (o.trainFile.empty())
            s.bad("train_file",
                  "is required (a JSONL file of training examples), or 'store' + 'snapshot'");
    }
    o.valFile = s.string("val_file", o.valFile);
    o.generalFile = s.string("general_file", o.generalFile);
    o.valRatio = s.number("val_ratio", o.valRatio);
    s.halfOpen("val_ratio", o.valRatio, 0, 1);
    o.format = s.choice("format", o.format, kFormats, exampleFormatName, parseExampleFormat);
    // "auto" is how run.json files before the model's own templates spelled "model".
    std::string chat = s.string("chat_template", chatTemplateChoiceName(o.chatTemplate));
    if (chat != "auto")
        chat = s.choice("chat_template", chatTemplateChoiceName(o.chatTemplate), kChatTemplates);
    if (chat == "auto" || chat == chatTemplateChoiceName(std::nullopt))
        o.chatTemplate = std::nullopt;
    else
        o.chatTemplate = parseChatTemplateName(chat);
    o.trainOn = s.choice("train_on", o.trainOn, kTrainOn, trainOnName, parseTrainOn);
    o.lossOnResponsesOnly = s.boolean("loss_on_responses_only", o.lossOnResponsesOnly);
    o.packing = s.boolean("packing", o.packing);
    o.groupByLength = s.boolean("group_by_length", o.groupByLength);
    if (o.packing && o.groupByLength)
        s.bad("group_by_length",
              "groups unpacked sequences by length and cannot be combined with "
              "'packing' (packed bins are all near max_length): set one of them");
    o.maxLength = s.intValue("max_length", o.maxLength, 8);
}

void parseOptim(const Section& s, OptimOptions& o)
{
    s.checkKeys(kOptimKeys);
    o.optimizer =
        s.choice("optimizer", o.optimizer, kOptimizers, optimizerKindName, parseOptimizerKind);
    o.lr = s.number("lr", o.lr);
    s.above("lr", o.lr, 0);
    o.weightDecay = s.number("weight_decay", o.weightDecay);
    s.atLeast("weight_decay", o.weightDecay, 0);
    o.beta1 = s.number("beta1", o.beta1);
    s.halfOpen("beta1", o.beta1, 0, 1);
    o.beta2 = s.number("beta2", o.beta2);
    s.halfOpen("beta2", o.beta2, 0, 1);
    o.eps = s.number("eps", o.eps);
    s.above("eps", o.eps, 0);
    o.momentum = s.number("momentum", o.momentum);
    s.halfOpen("momentum", o.momentum, 0, 1);
    o.l2 = s.number("l2", o.l2);
    s.atLeast("l2", o.l2, 0);
    o.schedule = s.choice("schedule", o.schedule, kSchedules, scheduleKindName, parseScheduleKind);
    o.warmupSteps = s.integer("warmup_steps", o.warmupSteps, 0);
    o.warmupRatio = s.number("warmup_ratio", o.warmupRatio);
    s.halfOpen("warmup_ratio", o.warmupRatio, 0, 1);
    o.minLr = s.number("min_lr", o.minLr);
    s.atLeast("min_lr", o.minLr, 0);
    if (o.minLr > o.lr)
        s.bad("min_lr", "must be <= optim.lr = ", formatNumber(o.lr), " (got ",
              formatNumber(o.minLr), ")");
    o.clipNorm = s.number("clip_norm", o.clipNorm);
    s.atLeast("clip_norm", o.clipNorm, 0);
}

}  // namespace

const char* precisionName(Precision precision)
{
    switch (precision) {
    case Precision::Fp32:
        return "fp32";
    case Precision::Bf16:
        return "bf16";
    case Precision::Fp16:
        return "fp16";
    }
    return "fp32";
}
std::optional<Precision> parsePrecision(const std::string& name)
{
    return parseName(name, kPrecisionValues, precisionName);
}

const char* lossKindName(LossKind loss)
{
    switch (loss) {
    case LossKind::Full:
        return "full";
    case LossKind::Chunked:
        return "chunked";
    }
    return "full";
}
std::optional<LossKind> parseLossKind(const std::string& name)
{
    return parseName(name, kLossValues, lossKindName);
}

const char* optimizerKindName(OptimizerKind optimizer)
{
    switch (optimizer) {
    case OptimizerKind::AdamW:
        return "adamw";
    case OptimizerKind::Sgd:
        return "sgd";
    }
    return "adamw";
}
std::optional<OptimizerKind> parseOptimizerKind(const std::string& name)
{
    return parseName(name, kOptimizerValues, optimizerKindName);
}

const char* scheduleKindName(ScheduleKind schedule)
{
    switch (schedule) {
    case ScheduleKind::Constant:
        return "constant";
    case ScheduleKind::Linear:
        return "linear";
    case ScheduleKind::Cosine:
        return "cosine";
    }
    return "cosine";
}
std::optional<ScheduleKind> parseScheduleKind(const std::string& name)
{
    return parseName(name, kScheduleValues, scheduleKindName);
}

ChatTemplate runChatTemplate(const TrainConfig& config)
{
    if (config.data.chatTemplate)
        return ChatTemplate::fromFamily(*config.data.chatTemplate);
    std::optional<ChatTemplate> own;
    try {
        own = ChatTemplate::fromModel(config.model);
    } catch (const Error& e) {
        fail(config.sourcePath,
             ": key 'data.chat_template' is model, but the model's template "
             "cannot be used: ",
             e.what());
    }
    if (!own)
        fail(config.sourcePath, ": key 'data.chat_template' is model, but the model at ",
             config.model,
             " has no chat template (tokenizer_config.json has no chat_template): set it to "
             "chatml, llama3, inst, alpaca or plain");
    return *own;
}

const char* objectiveName(Objective objective)
{
    switch (objective) {
    case Objective::Sft:
        return "sft";
    case Objective::Dpo:
        return "dpo";
    case Objective::Ipo:
        return "ipo";
    case Objective::Simpo:
        return "simpo";
    case Objective::Orpo:
        return "orpo";
    case Objective::Reward:
        return "reward";
    }
    return "sft";
}
std::optional<Objective> parseObjective(const std::string& name)
{
    return parseName(name, kObjectiveValues, objectiveName);
}

const char* referenceKindName(ReferenceKind kind)
{
    switch (kind) {
    case ReferenceKind::Auto:
        return "auto";
    case ReferenceKind::Copy:
        return "copy";
    case ReferenceKind::Precomputed:
        return "precomputed";
    }
    return "auto";
}
std::optional<ReferenceKind> parseReferenceKind(const std::string& name)
{
    return parseName(name, kReferenceValues, referenceKindName);
}

const char* chatTemplateChoiceName(std::optional<ChatTemplateFamily> family)
{
    return family ? chatTemplateName(*family) : "model";
}

TrainConfig parseTrainConfig(const nlohmann::json& json, const std::string& sourcePath)
{
    const std::string source = sourcePath.empty() ? std::string("config") : sourcePath;
    if (!json.is_object())
        fail(source, ": the run config must be a JSON object (got ", describe(json), ")");
    TrainConfig c;
    c.sourcePath = sourcePath;
    Section top(json, "", source);
    top.checkKeys(kTopKeys);

    c.name = top.string("name", c.name);
    c.objective = top.choice("objective", c.objective, kObjectives, objectiveName, parseObjective);
    parsePreference(top.child("preference"), c.preference);
    if (c.name.empty() || c.name == "." || c.name == ".." || c.name.find('/') != std::string::npos)
        top.bad("name", "must be a non-empty folder name without '/' (got '", c.name, "')");
    c.model = top.string("model", c.model);
    if (c.model.empty())
        top.bad("model", "is required (a model folder)");
    c.outputDir = top.string("output_dir", c.outputDir);
    if (c.outputDir.empty())
        top.bad("output_dir", "must not be empty");
    c.method = top.choice("method", c.method, kMethods, methodName, parseMethod);
    parseQuant(top, c);
    // Sequences a step: far beyond any device's memory above these, and their products with the
    // world size and with each other stay inside the counters.
    c.batchSize = static_cast<int>(top.integer("batch_size", c.batchSize, 1, 1 << 16));
    c.gradAccum = static_cast<int>(top.integer("grad_accum", c.gradAccum, 1, 1 << 16));
    c.maxSteps = top.integer("max_steps", c.maxSteps, 0);
    c.epochs = top.intValue("epochs", c.epochs, 1);
    c.precision = top.choice("precision", c.precision, kPrecisions, precisionName, parsePrecision);
    c.device = top.string("device", c.device);
    if (!validDevice(c.device))
        top.bad("device", "must be one of cpu | cuda | auto | cuda:N (got '", c.device, "')");
    c.gradientCheckpointing = top.boolean("gradient_checkpointing", c.gradientCheckpointing);
    c.loss = top.choice("loss", c.loss, kLosses, lossKindName, parseLossKind);
    c.lossChunkTokens = top.intValue("loss_chunk_tokens", c.lossChunkTokens, 16);
    c.evalEvery = top.integer("eval_every", c.evalEvery, 0);
    parseEval(top.child("eval"), c.eval);
    parseDist(top.child("dist"), c.dist);
    c.logEvery = top.integer("log_every", c.logEvery, 1);
    c.saveEvery = top.integer("save_every", c.saveEvery, 0);
    c.keepCheckpoints = top.intValue("keep_checkpoints", c.keepCheckpoints, 0);
    if (const auto* seed = top.find("seed")) {
        if (!seed->is_number_integer() || (!seed->is_number_unsigned() && seed->get<int64_t>() < 0))
            top.bad("seed", "must be an integer >= 0 (got ", describe(*seed), ")");
        c.seed = seed->get<uint64_t>();
    }
    c.spikeFactor = top.number("spike_factor", c.spikeFactor);
    if (!(c.spikeFactor == 0 || c.spikeFactor > 1))
        top.bad("spike_factor", "must be 0 (off) or > 1 (got ", formatNumber(c.spikeFactor), ")");
    c.spikeWindow = top.intValue("spike_window", c.spikeWindow, 1);

    parseLora(top.child("lora"), c.lora);
    parseAdapter(top.child("adapter"), c.adapter);
    parsePrompt(top.child("prompt"), c.prompt);
    parsePartial(top.child("partial"), c.partial);
    c.trainableTokens = parseTrainableTokens(top, c.trainableTokens);
    if (c.method == Method::Partial && c.partial.trainableBlocks == 0 && c.partial.modules.empty())
        fail(source, ": key 'partial.trainable_blocks' is 0 and 'partial.modules' is empty: "
                     "method 'partial' would train nothing");
    parseData(top.child("data"), c.data);
    if (trainsOnPairs(c.objective) && c.data.packing)
        fail(source, ": key 'data.packing' cannot be used with objective '",
             objectiveName(c.objective),
             "': the chosen and rejected answers of a pair are scored as whole sequences (set "
             "data.packing to false)");
    if (c.data.packing && c.method == Method::Prompt)
        fail(source, ": key 'data.packing' cannot be used with method 'prompt': the soft prompt is "
                     "prepended once per row, so a bin's later examples would not see it (set "
                     "data.packing to false)");

    Section optim = top.child("optim");
    if (top.has("lr")) {
        if (optim.has("lr"))
            fail(source, ": keys 'lr' and 'optim.lr' are both set; 'lr' is an alias of 'optim.lr', "
                         "use one");
        c.optim.lr = top.number("lr", c.optim.lr);  // the fallback parseOptim reads optim.lr with
        top.above("lr", c.optim.lr, 0);
    }
    parseOptim(optim, c.optim);

    c.model = resolvePath(c.model, sourcePath);
    // A model's config.json names its folder (the weights and the tokenizer are beside it).
    if (std::filesystem::path(c.model).filename() == "config.json" && fileExists(c.model) &&
        !isDirectory(c.model))
        c.model = std::filesystem::path(c.model).parent_path().string();
    // A bundled example's runs go to the user's data folder when installed (util/paths.h).
    c.outputDir = userOutputPath(resolvePath(c.outputDir, sourcePath));
    c.data.store = resolvePath(c.data.store, sourcePath);
    c.data.trainFile = resolvePath(c.data.trainFile, sourcePath);
    c.data.valFile = resolvePath(c.data.valFile, sourcePath);
    c.data.generalFile = resolvePath(c.data.generalFile, sourcePath);
    return c;
}

TrainConfig loadTrainConfig(const std::string& path, const std::vector<std::string>& overrides)
{
    if (isDirectory(path))
        fail(path, ": is a folder, expected a run config file (JSON)");
    const std::string text = readFile(path);
    checkJsonDepth(text, path);
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        fail(path, ": invalid JSON (", e.what(), ")");
    }
    if (const std::string key = repeatedJsonKey(text); !key.empty())
        fail(path, ": key '", key,
             "' is given twice (JSON keeps only the last; remove the one you do not mean)");
    // A path typed on the command line is relative to where it was typed (the shell's working
    // folder), as every command's paths are; the file's own paths stay relative to the file.
    const auto pathKey = [](const std::string& key) {
        return key == "model" || key == "output_dir" || key == "data.store" ||
               key == "data.train_file" || key == "data.val_file" || key == "data.general_file";
    };
    const auto absolutize = [](json& value) {
        if (!value.is_string() || value.get<std::string>().empty() ||
            !std::filesystem::path(value.get<std::string>()).is_relative())
            return false;
        std::error_code ec;
        const auto absolute = std::filesystem::absolute(value.get<std::string>(), ec);
        if (ec)
            return false;
        value = absolute.string();
        return true;
    };
    for (const auto& o : overrides) {
        const size_t eq = o.find('=');
        const std::string key = eq == std::string::npos ? std::string() : o.substr(0, eq);
        // The path keys alone, or inside a whole "data" object (data={"train_file": ...}).
        if (pathKey(key) || key == "data") {
            json value = json::parse(o.substr(eq + 1), nullptr, false);
            if (value.is_discarded())
                value = o.substr(eq + 1);
            bool changed = false;
            if (key != "data")
                changed = absolutize(value);
            else if (value.is_object())
                for (const char* file : {"store", "train_file", "val_file", "general_file"})
                    if (value.contains(file))
                        changed = absolutize(value[file]) || changed;
            if (changed) {
                applyOverride(j, key + "=" + value.dump());
                continue;
            }
        }
        applyOverride(j, o);
    }
    if (const json* eval = j.is_object() && j.contains("eval") ? &j["eval"] : nullptr;
        eval && eval->is_object() && eval->contains("metrics") && (*eval)["metrics"].is_array()) {
        const json& metrics = (*eval)["metrics"];
        for (size_t i = 0; i < metrics.size(); ++i)
            for (size_t k = 0; k < i; ++k)
                if (metrics[k] == metrics[i] && metrics[i].is_string())
                    fail(path, ": key 'eval.metrics' names '", metrics[i].get<std::string>(),
                         "' twice");
    }
    TrainConfig c = parseTrainConfig(j, path);
    // Data files are read later, but naming the key now saves a model load before the failure.
    const std::pair<const char*, const std::string*> files[] = {
        {"data.store", &c.data.store},
        {"data.train_file", &c.data.trainFile},
        {"data.val_file", &c.data.valFile},
        {"data.general_file", &c.data.generalFile}};
    for (const auto& [key, file] : files)
        if (!file->empty() && !fileExists(*file))
            fail(path, ": key '", key, "': file not found: ", *file);
    return c;
}

void applyOverride(nlohmann::json& json, const std::string& keyEqualsValue)
{
    const size_t eq = keyEqualsValue.find('=');
    if (eq == std::string::npos || eq == 0)
        fail("override '", keyEqualsValue, "': expected key=value (e.g. lora.rank=4)");
    std::string key = keyEqualsValue.substr(0, eq);
    const std::string value = keyEqualsValue.substr(eq + 1);
    if (key == "lr")
        key = "optim.lr";  // the alias; at the top level it would clash with optim.lr in the file

    if (json.is_null())
        json = json::object();
    nlohmann::json* node = &json;
    size_t start = 0;
    while (true) {
        const size_t dot = key.find('.', start);
        const std::string part = key.substr(start, dot == std::string::npos ? dot : dot - start);
        if (part.empty())
            fail("override '", keyEqualsValue, "': empty component in key '", key, "'");
        if (!node->is_object())
            fail("override '", keyEqualsValue, "': '", key.substr(0, start == 0 ? 0 : start - 1),
                 "' is not an object");
        if (dot == std::string::npos) {
            checkJsonDepth(value, "override '" + key + "'");
            nlohmann::json parsed = json::parse(value, nullptr, false);
            (*node)[part] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
            return;
        }
        node = &(*node)[part];
        if (node->is_null())
            *node = json::object();
        start = dot + 1;
    }
}

nlohmann::json toJson(const TrainConfig& c)
{
    nlohmann::json j;
    j["name"] = c.name;
    j["objective"] = objectiveName(c.objective);
    j["preference"] = {{"beta", c.preference.beta},
                       {"label_smoothing", c.preference.labelSmoothing},
                       {"gamma", c.preference.gamma},
                       {"sft_weight", c.preference.sftWeight},
                       {"reference", referenceKindName(c.preference.reference)},
                       {"layout", pairLayoutName(c.preference.layout)}};
    j["model"] = c.model;
    j["output_dir"] = c.outputDir;
    j["method"] = methodName(c.method);
    j["quant"] = quantKindName(c.quant.kind);
    j["quant_double"] = c.quant.doubleQuant;
    j["quant_head"] = c.quant.head;
    j["batch_size"] = c.batchSize;
    j["grad_accum"] = c.gradAccum;
    j["max_steps"] = c.maxSteps;
    j["epochs"] = c.epochs;
    j["precision"] = precisionName(c.precision);
    j["device"] = c.device;
    j["gradient_checkpointing"] = c.gradientCheckpointing;
    j["loss"] = lossKindName(c.loss);
    j["loss_chunk_tokens"] = c.lossChunkTokens;
    j["eval_every"] = c.evalEvery;
    j["eval"] = {{"generate_every", c.eval.generateEvery},
                 {"sample", c.eval.sample},
                 {"metrics", c.eval.metrics},
                 {"max_new_tokens", c.eval.maxNewTokens}};
    j["dist"] = {{"zero", c.dist.zero},
                 {"timeout_s", c.dist.timeoutSeconds},
                 {"bucket_mb", c.dist.bucketMiB}};
    j["log_every"] = c.logEvery;
    j["save_every"] = c.saveEvery;
    j["keep_checkpoints"] = c.keepCheckpoints;
    j["seed"] = c.seed;
    j["spike_factor"] = c.spikeFactor;
    j["spike_window"] = c.spikeWindow;
    j["lora"] = {{"rank", c.lora.rank},
                 {"alpha", c.lora.alpha},
                 {"dropout", c.lora.dropout},
                 {"targets", c.lora.targets},
                 {"rslora", c.lora.rslora}};
    j["adapter"] = {{"kind", adapterKindName(c.adapter.kind)},
                    {"size", c.adapter.size},
                    {"reduction_factor", c.adapter.reductionFactor},
                    {"activation", adapterActivationName(c.adapter.activation)}};
    j["prompt"] = {{"num_tokens", c.prompt.numTokens}, {"init_text", c.prompt.initText}};
    j["partial"] = {{"trainable_blocks", c.partial.trainableBlocks},
                    {"modules", c.partial.modules}};
    j["trainable_tokens"] = trainableTokensJson(c.trainableTokens);
    j["data"] = {{"train_file", c.data.trainFile},
                 {"val_file", c.data.valFile},
                 {"general_file", c.data.generalFile},
                 {"val_ratio", c.data.valRatio},
                 {"format", exampleFormatName(c.data.format)},
                 {"chat_template", chatTemplateChoiceName(c.data.chatTemplate)},
                 {"train_on", trainOnName(c.data.trainOn)},
                 {"loss_on_responses_only", c.data.lossOnResponsesOnly},
                 {"packing", c.data.packing},
                 {"group_by_length", c.data.groupByLength},
                 {"max_length", c.data.maxLength}};
    if (!c.data.store.empty()) {
        // A store-backed run: its snapshots instead of files.
        j["data"].erase("train_file");
        j["data"].erase("val_file");
        j["data"].erase("general_file");
        j["data"]["store"] = c.data.store;
        j["data"]["snapshot"] = c.data.snapshot;
        j["data"]["val_snapshot"] = c.data.valSnapshot;
        j["data"]["general_snapshot"] = c.data.generalSnapshot;
    }
    j["optim"] = {{"optimizer", optimizerKindName(c.optim.optimizer)},
                  {"lr", c.optim.lr},
                  {"weight_decay", c.optim.weightDecay},
                  {"beta1", c.optim.beta1},
                  {"beta2", c.optim.beta2},
                  {"eps", c.optim.eps},
                  {"momentum", c.optim.momentum},
                  {"l2", c.optim.l2},
                  {"schedule", scheduleKindName(c.optim.schedule)},
                  {"warmup_steps", c.optim.warmupSteps},
                  {"warmup_ratio", c.optim.warmupRatio},
                  {"min_lr", c.optim.minLr},
                  {"clip_norm", c.optim.clipNorm}};
    return j;
}

EstimateOptions estimateOptionsFor(const TrainConfig& run, int64_t seq)
{
    EstimateOptions o;
    o.precision = run.precision == Precision::Fp32
                      ? std::string("fp32")
                      : precisionName(run.precision) + std::string("-mixed");
    o.optimizer = run.optim.optimizer == OptimizerKind::AdamW
                      ? "adamw"
                      : (run.optim.momentum > 0 ? "sgd-momentum" : "sgd");
    o.batch = run.batchSize;
    o.seq = seq;
    o.gradAccum = run.gradAccum;
    o.gradientCheckpointing = run.gradientCheckpointing;
    o.packing = run.data.packing;
    o.loss = lossKindName(run.loss);
    o.lossChunk = run.lossChunkTokens;
    o.objective = objectiveName(run.objective);
    if (needsReference(run.objective)) {
        switch (run.preference.reference) {
        case ReferenceKind::Auto:
            o.reference = methodCanSwitchOff(run.method) ? "off" : "copy";
            break;
        case ReferenceKind::Copy:
            o.reference = "copy";
            break;
        case ReferenceKind::Precomputed:
            o.reference = "precomputed";
            break;
        }
    }
    return o;
}

}  // namespace tb
