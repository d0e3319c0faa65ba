// Plain model folders written from a model held in core: random weights for tests and benchmarks,
// and a base with the quantisation error baked in. Torch-free header.
#pragma once

#include "quant/quant_format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tb {

// The files beside config.json and the weights that make a model folder loadable with its tokenizer
// and template (each copied when the source folder has it).
const std::vector<std::string>& tokenizerFileNames();

// A model folder in `outDir`: config.json with `configJson` (a Hugging Face config), the tokenizer
// files of `tokenizerDir` (tokenizer.model / tokenizer.json / tokenizer_config.json ...) and
// model.safetensors with Model::createRandom's weights for that config and seed.
void writeRandomModel(const std::string& configJson, uint64_t seed, const std::string& tokenizerDir,
                      const std::string& outDir);

// Copies the model folder `modelDir` (config, tokenizer files) into `outDir` with the weights of
// every layer CausalLM::setQuantization(options) quantises replaced by their dequantised fp32
// values, the other tensors as they are (in fp32). Returns the largest |dequantised - original|.
double writeDequantizedBase(const std::string& modelDir, const QuantOptions& options,
                            const std::string& outDir);

}  // namespace tb
