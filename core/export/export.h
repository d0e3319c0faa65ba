// Export of a finished (or stopped) run: a PEFT adapter folder (LoRA, prompt tuning), a merged
// Hugging Face model folder that transformers loads, or a merged GGUF file that llama.cpp loads.
// Torch-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct ExportOptions {
    // peft | merged | gguf (merged model) | gguf-lora (llama.cpp LoRA adapter) | gguf-base (the
    // run's base model)
    std::string format = "peft";
    std::string outDir;  // peft, merged: a folder; gguf*: the file to write (ends in .gguf)
    bool force = false;  // merged, gguf: export even when the weights equal the base model's
    int64_t maxShardBytes = 2000000000;  // merged: shard model.safetensors above this size
    std::string dtype =
        "f32";  // gguf*: f32 | f16 | bf16 | q8_0 (not gguf-lora) for 2-D weights (norms stay f32)
};

struct ExportReport {
    std::string outDir;
    std::string format;
    std::string checkpoint;  // the checkpoint folder exported (gguf-base: the base model's folder)
    std::vector<std::string> files;
    int64_t tensors = 0;
    double maxAbsChange = 0;  // merged, gguf, gguf-lora: largest |tuned - base| over all weights
    int64_t bytes = 0;        // gguf*: file size
    std::vector<std::string>
        warnings;  // gguf q8_0: matrices written f16 instead (rows not whole blocks)
    // gguf q8_0: the quantisation's cost, as the mean loss per loss-carrying token of the run's
    // validation sequences (its training sequences when it has none), up to 8,192 of those tokens,
    // with the merged fp32 weights and with every Q8_0 tensor replaced by what the file gives back.
    // 0 tokens: not measured (the reason is in warnings).
    double lossFp32 = 0, lossQuantized = 0;
    int64_t lossTokens = 0;
    // A run on a quantised base (QLoRA): "nf4", "fp4" or "int8", else empty. Merged exports
    // (merged, gguf) dequantise the base into fp32 before merging, so the quantisation error is in
    // the merged weights: measured on the same validation tokens as the adapter on the quantised
    // base (what training saw) against the merged model, and as the largest |logit| difference
    // between the two on the first batch. The PEFT adapter applies to the original base instead.
    // lossAdapterOriginal: the adapter on the original base, as PEFT applies it.
    std::string quant;
    double lossAdapterQuantized = 0, lossMerged = 0, lossAdapterOriginal = 0, logitsMaxDiff = 0;
    int64_t quantLossTokens = 0;
    std::vector<std::string> notes;  // sentences for the user, e.g. what a quantised base means
};

// Loads the run's base model and its newest complete checkpoint and writes the export. Throws
// tb::Error with the reason when the method cannot be exported in that format (e.g. bottleneck
// adapters as PEFT), or when a merged export would equal the base model and `force` is off.
ExportReport exportRun(const std::string& runDir, const ExportOptions& options);

// A model folder (no run) as one GGUF file, as --format gguf-base writes a run's base model;
// options.outDir is the file, options.dtype f32 | f16 | bf16 | q8_0 (options.format is ignored).
ExportReport exportModelGguf(const std::string& modelDir, const ExportOptions& options);

}  // namespace tb
