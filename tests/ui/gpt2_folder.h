// A tiny random GPT-2 model folder for the studio's tests: config.json, model.safetensors with the
// tensors transformers' GPT2LMHeadModel saves (tied head), and GPT-2's tokenizer files.
#pragma once

#include "model/safetensors.h"
#include "util/file_util.h"

#include <QDir>
#include <QFile>
#include <QString>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tbtest {

// Writes the folder into `dir` (created) with hidden size 16, 2 blocks and a 32-token context;
// `tokenizerConfig`, when not empty, replaces the tokenizer_config.json copied from
// tests/data/tokenizers/gpt2 (e.g. to give the model a chat template). Returns false when a file
// could not be copied.
inline bool writeRandomGpt2(const QString& dir, const std::string& tokenizerConfig = {})
{
    const int64_t h = 16, layers = 2, positions = 32, vocab = 50257;
    if (!QDir().mkpath(dir))
        return false;
    const std::string d = dir.toStdString();
    tb::writeFileAtomic(d + "/config.json",
                        R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
  "vocab_size": 50257, "n_embd": 16, "n_layer": 2, "n_head": 2, "n_positions": 32,
  "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05, "bos_token_id": 50256,
  "eos_token_id": 50256, "torch_dtype": "float32"})");
    uint32_t state = 12345;  // a fixed LCG: the same weights every run
    auto tensor = [&state](const std::string& name, std::vector<int64_t> shape, float fill = 0) {
        int64_t n = 1;
        for (int64_t s : shape)
            n *= s;
        std::vector<float> values(static_cast<size_t>(n), fill);
        if (fill == 0)
            for (float& v : values) {
                state = state * 1664525u + 1013904223u;
                v = 0.04f * (float(state >> 8) / float(1u << 24) - 0.5f);  // about N(0, 0.01)
            }
        std::string bytes(values.size() * sizeof(float), '\0');
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return tb::TensorBlob{name, tb::DType::F32, std::move(shape), std::move(bytes)};
    };
    std::vector<tb::TensorBlob> blobs = {tensor("transformer.wte.weight", {vocab, h}),
                                         tensor("transformer.wpe.weight", {positions, h})};
    for (int64_t i = 0; i < layers; ++i) {
        const std::string p = "transformer.h." + std::to_string(i) + ".";
        for (const char* ln : {"ln_1", "ln_2"}) {
            blobs.push_back(tensor(p + ln + ".weight", {h}, 1.0f));
            blobs.push_back(tensor(p + ln + ".bias", {h}));
        }
        // Conv1D weights are [in, out].
        const std::pair<const char*, std::pair<int64_t, int64_t>> convs[] = {
            {"attn.c_attn", {h, 3 * h}},
            {"attn.c_proj", {h, h}},
            {"mlp.c_fc", {h, 4 * h}},
            {"mlp.c_proj", {4 * h, h}}};
        for (const auto& [name, shape] : convs) {
            blobs.push_back(tensor(p + name + ".weight", {shape.first, shape.second}));
            blobs.push_back(tensor(p + name + ".bias", {shape.second}));
        }
    }
    blobs.push_back(tensor("transformer.ln_f.weight", {h}, 1.0f));
    blobs.push_back(tensor("transformer.ln_f.bias", {h}));
    tb::writeSafetensors(d + "/model.safetensors", blobs);
    const QString tokenizer = QStringLiteral(TB_SOURCE_DIR "/tests/data/tokenizers/gpt2/");
    for (const char* file : {"vocab.json", "merges.txt", "tokenizer.json",
                             "special_tokens_map.json", "tokenizer_config.json"}) {
        const QString name = QLatin1String(file);
        if (name == QLatin1String("tokenizer_config.json") && !tokenizerConfig.empty())
            tb::writeFileAtomic(d + "/" + file, tokenizerConfig);
        else if (!QFile::copy(tokenizer + name, dir + QLatin1Char('/') + name))
            return false;
    }
    return true;
}

}  // namespace tbtest
