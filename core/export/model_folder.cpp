// Model folders from a model in memory: random weights, or the base's quantisation error baked in.
#include "export/model_folder.h"

#include "model/causal_lm.h"
#include "model/registry.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/file_util.h"

#include <filesystem>
#include <vector>

namespace tb {

const std::vector<std::string>& tokenizerFileNames()
{
    static const std::vector<std::string> names{"tokenizer.model",        "tokenizer.json",
                                                "tokenizer_config.json",  "special_tokens_map.json",
                                                "generation_config.json", "chat_template.jinja"};
    return names;
}

namespace {

// model.safetensors with every parameter in fp32, under the names the model loads from.
void writeWeights(CausalLM& model, const std::string& outDir)
{
    std::vector<TensorBlob> blobs;
    for (const auto& item : model.named_parameters())
        blobs.push_back(tensorToBlob(item.key(), item.value()));
    writeSafetensors(joinPath(outDir, "model.safetensors"), blobs, {{"format", "pt"}});
}

void copyFiles(const std::string& fromDir, const std::string& outDir, bool withConfig)
{
    if (withConfig)
        writeFileAtomic(joinPath(outDir, "config.json"),
                        readFile(joinPath(fromDir, "config.json")));
    for (const std::string& f : tokenizerFileNames()) {
        const std::string from = joinPath(fromDir, f);
        if (fileExists(from))
            writeFileAtomic(joinPath(outDir, f), readFile(from));
    }
}

void makeFolder(const std::string& dir)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        fail(dir, ": cannot create folder (", ec.message(), ")");
}

}  // namespace

void writeRandomModel(const std::string& configJson, uint64_t seed, const std::string& tokenizerDir,
                      const std::string& outDir)
{
    makeFolder(outDir);
    writeFileAtomic(joinPath(outDir, "config.json"), configJson);
    torch::NoGradGuard noGrad;
    auto model = createCausalLM(loadModelConfig(outDir));
    model->initRandom(seed, torch::kFloat32, torch::kCPU);
    writeWeights(*model, outDir);
    copyFiles(tokenizerDir, outDir, false);
}

double writeDequantizedBase(const std::string& modelDir, const QuantOptions& options,
                            const std::string& outDir)
{
    torch::NoGradGuard noGrad;
    const ModelConfig config = loadModelConfig(modelDir);
    auto original = createCausalLM(config);
    original->loadWeights(Checkpoint::open(modelDir), torch::kFloat32, torch::kCPU);
    auto quantized = createCausalLM(config);
    quantized->setQuantization(options);
    quantized->loadWeights(Checkpoint::open(modelDir), torch::kFloat32, torch::kCPU);
    quantized->dequantizeLinears(torch::kFloat32);
    makeFolder(outDir);
    double change = 0;
    auto before = original->named_parameters();
    for (const auto& item : quantized->named_parameters())
        change = std::max(change, (item.value() - before[item.key()]).abs().max().item<double>());
    writeWeights(*quantized, outDir);
    copyFiles(modelDir, outDir, true);
    return change;
}

}  // namespace tb
