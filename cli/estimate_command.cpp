// `tunebench estimate`: options -> method and run shape -> the memory estimate as a table or JSON.
#include "cli/commands.h"

#include "memory/estimator.h"
#include "model/catalog.h"
#include "model/config.h"
#include "peft/trainable_count.h"
#include "peft/trainable_tokens.h"
#include "util/error.h"
#include "util/join.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace tb {
namespace {

// ordered: the keys print in the documented order.
using json = nlohmann::ordered_json;

std::vector<std::string> splitList(const std::string& text)
{
    std::vector<std::string> items;
    std::string item;
    for (char c : text + ",") {
        if (c == ',') {
            if (!item.empty())
                items.push_back(item);
            item.clear();
        } else if (c != ' ') {
            item += c;
        }
    }
    return items;
}

// An integer option from `least` to `most` (sizes are int in the run config; 2^30 by default).
int64_t intOption(const Args& args, const std::string& name, int64_t fallback, int64_t least,
                  int64_t most = int64_t(1) << 30)
{
    const long long v = args.integer(name, fallback);
    if (v < least)
        fail("option --", name, " is ", v, " (must be at least ", least, ")");
    if (v > most)
        fail("option --", name, " is ", v, " (at most ", most, ")");
    return v;
}

Method methodOption(const std::string& name)
{
    if (auto method = parseMethod(name))
        return *method;
    fail("option --method is '", name, "' (allowed: full, partial, lora, adapter, prompt)");
}

MethodOptions methodFromArgs(const Args& args)
{
    MethodOptions run;
    run.method = methodOption(args.value("method"));
    const std::pair<const char*, Method> owners[] = {{"lora-rank", Method::Lora},
                                                     {"lora-targets", Method::Lora},
                                                     {"adapter-size", Method::Adapter},
                                                     {"prompt-tokens", Method::Prompt},
                                                     {"trainable-blocks", Method::Partial}};
    for (const auto& [name, owner] : owners)
        if (args.has(name) && run.method != owner)
            fail("option --", name, " applies to --method ", methodName(owner), " only");
    run.lora.rank = static_cast<int>(intOption(args, "lora-rank", 8, 1));
    if (args.has("lora-targets")) {
        run.lora.targets = splitList(args.value("lora-targets"));
        if (run.lora.targets.empty())
            fail("option --lora-targets is empty (e.g. q_proj,v_proj)");
    }
    if (args.has("adapter-size"))
        run.adapter.size = static_cast<int>(intOption(args, "adapter-size", 0, 1));
    run.prompt.numTokens = static_cast<int>(intOption(args, "prompt-tokens", 16, 1));
    run.partial.trainableBlocks = static_cast<int>(intOption(args, "trainable-blocks", 1, 1));
    // --quant nf4 | fp4 | int8 (QLoRA: --method lora --quant nf4 --quant-double).
    if (args.has("quant")) {
        const auto kind = parseQuantKind(args.value("quant"));
        if (!kind)
            fail("option --quant is '", args.value("quant"), "' (allowed: none, nf4, fp4, int8)");
        run.quant.kind = *kind;
    }
    run.quant.doubleQuant = args.flag("quant-double");
    run.quant.head = args.flag("quant-head");
    if ((run.quant.doubleQuant || run.quant.head) && !run.quant.enabled())
        fail("options --quant-double and --quant-head need --quant nf4, fp4 or int8");
    if (run.quant.doubleQuant && run.quant.kind == QuantKind::Int8)
        fail("option --quant-double applies to --quant nf4 or fp4, not int8");
    // auto (the model's stop tokens) | none | ids and token texts, comma-separated.
    const std::string tokens = args.value("trainable-tokens", "auto");
    if (tokens != "auto") {
        run.trainableTokens = {false, {}};
        if (tokens != "none")
            for (const auto& t : splitList(tokens)) {
                const bool id = !t.empty() && std::all_of(t.begin(), t.end(), [](char ch) {
                    return ch >= '0' && ch <= '9';
                });
                if (id && t.size() > 12)  // no vocabulary comes near 10^12 tokens
                    fail("option --trainable-tokens: '", t, "' is too large for a token id");
                run.trainableTokens.tokens.push_back(id ? TokenRef{std::stoll(t), ""}
                                                        : TokenRef{-1, t});
            }
    }
    return run;
}

EstimateOptions optionsFromArgs(const Args& args)
{
    EstimateOptions o;
    o.precision = args.value("precision", o.precision);
    o.optimizer = args.value("optimizer", o.optimizer);
    o.batch = intOption(args, "batch", o.batch, 1);
    o.seq = intOption(args, "seq", o.seq, 1);
    o.gradAccum = intOption(args, "grad-accum", o.gradAccum, 1);
    o.gradientCheckpointing = args.flag("grad-checkpointing");
    o.packing = args.flag("packing");
    o.attention = args.value("attention", o.attention);
    o.loss = args.value("loss", o.loss);
    o.lossChunk = intOption(args, "loss-chunk", o.lossChunk, 1);
    o.gpus = intOption(args, "gpus", o.gpus, 1);
    o.zero = static_cast<int>(intOption(args, "zero", o.zero, 0));
    if (o.zero > 3)
        fail("option --zero is ", o.zero, " (allowed: 0, 1, 2, 3)");
    o.objective = args.value("objective", o.objective);
    if (args.has("reference")) {
        if (o.objective != "dpo" && o.objective != "ipo")
            fail("option --reference applies to --objective dpo or ipo only");
        o.reference = args.value("reference");
        if (o.reference == "none")
            fail("option --reference is 'none' (allowed: auto, off, copy, precomputed)");
    }
    if (args.has("device-memory")) {
        try {
            o.deviceMemory = parseByteSize(args.value("device-memory"));
        } catch (const Error& e) {
            fail("option --device-memory: ", e.what());
        }
    }
    return o;
}

// Words wrapped at `width` columns: the first line starts with `first`, the others with `indent`.
std::string wrap(const std::string& text, const std::string& first, const std::string& indent,
                 size_t width = 100)
{
    std::string out, line = first, word;
    size_t start = first.size();
    auto flush = [&]() {
        if (word.empty())
            return;
        if (line.size() > start && line.size() + 1 + word.size() > width) {
            out += line + "\n";
            line = indent;
            start = indent.size();
        }
        line += (line.size() > start ? " " : "") + word;
        word.clear();
    };
    for (char c : text) {
        if (c == ' ')
            flush();
        else
            word += c;
    }
    flush();
    return out + line + "\n";
}

std::string row(const std::string& name, int64_t bytes)
{
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, "%-18s %20s B %12s\n", name.c_str(),
                  groupDigits(bytes).c_str(), formatBytes(bytes).c_str());
    return buffer;
}

void printTable(const ModelConfig& model, const MethodOptions& run, const EstimateOptions& o,
                const MemoryEstimate& e, bool explain, std::ostream& out)
{
    std::string rows;
    if (e.trainableTokens > 0) {
        for (int64_t id : trainableTokenIds(model, run))
            rows += (rows.empty() ? "" : ", ") + std::to_string(id);
        rows = cat("; ", e.trainableTokens, " trainable token row",
                   e.trainableTokens == 1 ? "" : "s", " (", rows, ")");
    }
    out << model.sourcePath << ": " << model.modelType << ", " << groupDigits(e.parameters)
        << " parameters, " << groupDigits(e.trainableParameters) << " trainable ("
        << methodName(run.method) << rows << ")"
        << (run.quant.enabled() ? cat(", base ", quantKindName(run.quant.kind),
                                      run.quant.doubleQuant ? " with double quantisation" : "",
                                      run.quant.head ? ", head too" : "")
                                : std::string())
        << "\n"
        << o.precision << ", " << o.optimizer << ", micro-batch " << o.batch << " x seq " << o.seq
        << ", accumulation " << o.gradAccum << ", " << o.attention << " attention, " << o.loss
        << " loss" << (o.gradientCheckpointing ? ", gradient checkpointing" : "")
        << (o.packing ? ", packed rows" : "");
    if (o.gpus > 1 || o.zero > 0)
        out << ", " << o.gpus << " GPUs with ZeRO-" << o.zero << " (per GPU)";
    if (e.objective != "sft")
        out << "\nobjective " << e.objective
            << (e.reference != "none" ? cat(" (reference: ", e.reference, ")") : std::string())
            << ": micro-batch " << o.batch << " pair" << (o.batch == 1 ? "" : "s") << " = "
            << e.sequences << " sequences (chosen and rejected)";
    out << "\n\n";
    for (const auto& item : e.items) {
        out << row(item.key, item.bytes) << wrap(item.explanation, "    ", "    ");
        if (explain)
            out << wrap(item.formula, "    = ", "      ");
    }
    out << row("total", e.total);
    out << wrap(cat("The peak (phase '", e.peakPhase,
                    "'): weights + optimizer states + master weights + the largest of these phases",
                    o.cudaOverhead ? ", + overhead:" : ":"),
                "    ", "    ");
    for (const auto& ph : e.phases)
        out << wrap(cat(formatBytes(ph.bytes), " at ", ph.what), "      ", "        ");
    out << "\n" << row("inference", e.inference);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f",
                  double(e.total) / double(std::max<int64_t>(e.inference, 1)));
    out << wrap(cat("For comparison: generating with the same model on one device at the same "
                    "batch and sequence "
                    "length. Training needs ",
                    ratio,
                    "x that: gradients, optimizer states and saved activations "
                    "are training's own."),
                "    ", "    ");
    if (explain)
        out << wrap(e.inferenceFormula, "    = ", "      ");
    if (e.fits) {
        const int64_t limit = *o.deviceMemory;
        out << "\nfits in " << formatBytes(limit) << ": "
            << (*e.fits ? cat("yes (", formatBytes(limit - e.total), " to spare)")
                        : cat("no (", formatBytes(e.total - limit), " short)"))
            << "\n";
        if (!*e.fits) {
            if (e.advice.empty())
                out << "no single change tried (checkpointing, smaller micro-batch, LoRA, ZeRO on "
                       "up "
                       "to 8 GPUs) makes it fit\n";
            for (const auto& a : e.advice)
                out << wrap(a, "  - ", "    ");
        }
    }
    if (explain)
        out << "\n" << wrap(trainingMemoryPrimer(), "", "");
}

}  // namespace

int cmdEstimate(const Args& args, std::ostream& out)
{
    args.allowOnly({"model",
                    "method",
                    "lora-rank",
                    "lora-targets",
                    "adapter-size",
                    "prompt-tokens",
                    "trainable-blocks",
                    "trainable-tokens",
                    "quant",
                    "quant-double",
                    "quant-head",
                    "precision",
                    "optimizer",
                    "batch",
                    "seq",
                    "grad-accum",
                    "grad-checkpointing",
                    "packing",
                    "attention",
                    "loss",
                    "loss-chunk",
                    "gpus",
                    "zero",
                    "device-memory",
                    "objective",
                    "reference",
                    "explain",
                    "json"});
    // --model: a folder, a config.json or a catalog id (datasets/model-configs).
    const ModelConfig model = loadModelConfig(resolveModelPath(args.value("model")));
    const MethodOptions run = methodFromArgs(args);
    const auto known = loraTargetNames(model);
    for (const auto& t : run.lora.targets)
        if (std::find(known.begin(), known.end(), t) == known.end())
            fail("option --lora-targets has '", t, "', which matches no layer of this ",
                 model.modelType, " model (allowed: ", join(known), ")");
    const EstimateOptions options = optionsFromArgs(args);
    const MemoryEstimate e = estimateMemory(model, run, options);
    const bool explain = args.flag("explain");
    if (!args.flag("json")) {
        printTable(model, run, options, e, explain, out);
        return 0;
    }
    json bytes = {{"weights", e.weights},
                  {"gradients", e.gradients},
                  {"optimizer_states", e.optimizerStates},
                  {"master_weights", e.masterWeights},
                  {"activations", e.activations},
                  {"logits", e.logits}};
    // The objective's own items, only where they apply (docs/memory.md).
    for (const auto& item : e.items)
        if (item.key == "dequantized" || item.key == "reference" || item.key == "logprobs" ||
            item.key == "head")
            bytes[item.key] = item.bytes;
    bytes["overhead"] = e.overhead;
    bytes["total"] = e.total;
    json result = {{"parameters", e.parameters},
                   {"trainable_parameters", e.trainableParameters},
                   {"bytes", bytes},
                   {"fits", e.fits ? json(*e.fits) : json(nullptr)},
                   {"advice", e.advice}};
    if (run.quant.enabled())
        result["quant"] = {
            {"kind", quantKindName(run.quant.kind)},
            {"double_quant", run.quant.doubleQuant},
            {"head", run.quant.head},
            {"quantized_parameters", e.quantizedParameters},
            {"bytes",
             {{"codes", e.quantizedBytes.data},
              {"absmax", e.quantizedBytes.absmax},
              {"absmax2", e.quantizedBytes.absmax2},
              {"code2", e.quantizedBytes.code2}}},
            {"bits_per_parameter", 8.0 * static_cast<double>(e.quantizedBytes.total()) /
                                       static_cast<double>(e.quantizedParameters)}};
    if (e.objective != "sft") {
        result["objective"] = e.objective;
        result["reference"] = e.reference;
        result["sequences_per_micro_batch"] = e.sequences;
        if (e.headParameters > 0)
            result["head_parameters"] = e.headParameters;
    }
    if (explain) {
        json items = json::array();
        for (const auto& item : e.items)
            items.push_back({{"key", item.key},
                             {"bytes", item.bytes},
                             {"explanation", item.explanation},
                             {"formula", item.formula}});
        result["items"] = items;
        result["peak_phase"] = e.peakPhase;
        json phases = json::array();
        for (const auto& ph : e.phases)
            phases.push_back({{"name", ph.name}, {"bytes", ph.bytes}, {"what", ph.what}});
        result["phases"] = phases;
        result["activations_per_block"] = e.activationsPerBlock;
        result["activations_checkpointing"] = e.activationsCheckpointing;
        result["activations_no_checkpointing"] = e.activationsNoCheckpointing;
        result["step_workspace"] = e.stepWorkspace;
        result["trainable_tokens"] = trainableTokenIds(model, run);
        result["primer"] = trainingMemoryPrimer();
        result["inference_bytes"] =
            e.inference;  // beside the contract's keys, as the rest of --explain
        result["inference_formula"] = e.inferenceFormula;
    }
    out << result.dump() << "\n";
    return 0;
}

}  // namespace tb
