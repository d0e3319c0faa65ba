// Export of a finished (or stopped) run: a PEFT adapter folder (LoRA, prompt tuning) or a merged Hugging
// Face model folder that transformers loads. Torch-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

struct ExportOptions {
    std::string format = "peft";      // peft | merged
    std::string outDir;
    bool force = false;               // merged: export even when the weights equal the base model's
    int64_t maxShardBytes = 2000000000;  // merged: shard model.safetensors above this size
};

struct ExportReport {
    std::string outDir;
    std::string format;
    std::string checkpoint;           // the checkpoint folder exported
    std::vector<std::string> files;
    int64_t tensors = 0;
    double maxAbsChange = 0;          // merged: largest |tuned - base| over all weights
};

// Loads the run's base model and its newest complete checkpoint and writes the export. Throws tb::Error
// with the reason when the method cannot be exported in that format (e.g. bottleneck adapters as PEFT),
// or when a merged export would equal the base model and `force` is off.
ExportReport exportRun(const std::string& runDir, const ExportOptions& options);

} // namespace tb
