// Conversion of llama2.c checkpoints (stories260K.bin + tok512.bin) into a Hugging Face Llama
// folder.
#pragma once

#include <string>

namespace tb {

struct Llama2cConvertReport {
    int dim = 0, hiddenDim = 0, layers = 0, heads = 0, kvHeads = 0, vocab = 0, seqLen = 0;
    bool sharedClassifier = true;
    long long parameters = 0;
};

// Writes config.json, model.safetensors (F32), tokenizer.model (sentencepiece BPE rebuilt from the
// llama2.c vocabulary), tokenizer_config.json and generation_config.json into outDir (created if
// missing). Query/key rows are permuted from llama2.c's interleaved rotary layout to transformers'
// rotate-half layout.
Llama2cConvertReport convertLlama2c(const std::string& checkpointPath,
                                    const std::string& tokenizerPath, const std::string& outDir);

}  // namespace tb
