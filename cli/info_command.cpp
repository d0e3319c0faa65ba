// `tunebench info` (a model folder or a GGUF file's header) and `tunebench tokenize`.
#include "cli/commands.h"

#include "export/gguf.h"
#include "model/config.h"
#include "model/layer_list.h"
#include "model/rope_text.h"
#include "tokenizer/tokenizer.h"
#include <map>
#include <nlohmann/json.hpp>

namespace tb {

using nlohmann::json;

namespace {

// A GGUF file's header: what llama.cpp will see (architecture, whether it is an adapter, tensor
// types).
int ggufInfo(const std::string& path, bool asJson, std::ostream& out)
{
    const GgufSummary s = readGgufSummary(path);
    auto meta = [&s](const std::string& key) {
        const auto it = s.metadata.find(key);
        return it == s.metadata.end() ? std::string() : it->second;
    };
    const std::map<uint32_t, std::string> names = {
        {0, "F32"}, {1, "F16"}, {8, "Q8_0"}, {30, "BF16"}};
    std::map<std::string, int64_t> types;
    for (const GgufTensorInfo& t : s.tensors) {
        const auto it = names.find(t.type);
        ++types[it == names.end() ? "type " + std::to_string(t.type) : it->second];
    }
    const std::string kind = meta("general.type").empty() ? "model" : meta("general.type");
    if (asJson) {
        json tensors = json::array();
        for (const GgufTensorInfo& t : s.tensors)
            tensors.push_back({{"name", t.name}, {"dims", t.dims}, {"type", t.type}});
        out << json{{"gguf_version", s.version},
                    {"bytes", s.fileSize},
                    {"architecture", meta("general.architecture")},
                    {"name", meta("general.name")},
                    {"type", kind},
                    {"tensor_count", s.tensors.size()},
                    {"tensor_types", types},
                    {"metadata", s.metadata},
                    {"tensors", tensors}}
                   .dump()
            << "\n";
        return 0;
    }
    out << "GGUF          v" << s.version << ", " << s.fileSize << " bytes\n"
        << "architecture  " << meta("general.architecture") << "\n"
        << "name          " << meta("general.name") << "\n"
        << "type          " << kind << "\n"
        << "tensors       " << s.tensors.size() << " (";
    bool first = true;
    for (const auto& [type, count] : types) {
        out << (first ? "" : ", ") << count << " " << type;
        first = false;
    }
    out << ")\n"
        << "metadata      " << s.metadata.size() << " keys\n";
    return 0;
}

}  // namespace

int cmdInfo(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "json"});
    if (args.has("model") && args.value("model").ends_with(".gguf"))
        return ggufInfo(args.value("model"), args.flag("json"), out);
    ModelConfig c = loadModelConfig(modelArg(args));
    const int64_t params = parameterCount(c);
    if (args.flag("json")) {
        json noRope = json::array();  // the layers without a rotary embedding (SmolLM3's NoPE)
        for (size_t i = 0; i < c.noRopeLayers.size(); ++i)
            if (c.noRopeLayers[i])
                noRope.push_back(i);
        out << json{{"architecture", c.modelType},
                    {"parameters", params},
                    {"layers", c.numLayers},
                    {"hidden_size", c.hiddenSize},
                    {"vocab_size", c.vocabSize},
                    {"dtype", c.torchDtype},
                    {"context", c.maxPositions},
                    {"sliding_window", c.slidingWindow},
                    {"no_rope_layers", noRope},
                    {"rotary_dim", c.rotatedDim()},
                    {"rope_scaling", c.ropeScaling.type}}
                   .dump()
            << "\n";
        return 0;
    }
    out << "architecture  " << c.modelType << "\n"
        << "parameters    " << params << "\n"
        << "layers        " << c.numLayers << "\n"
        << "hidden size   " << c.hiddenSize << "\n"
        << "heads         " << c.numHeads << " (kv " << c.numKvHeads << ", head dim " << c.headDim
        << ")\n"
        << "vocab size    " << c.vocabSize << "\n"
        << "context       " << c.maxPositions << "\n"
        << (c.slidingWindow > 0 ? "sliding window " + std::to_string(c.slidingWindow) + " (" +
                                      c.slidingLayerText() + ")\n"
                                : std::string())
        << (ropeText(c).empty() ? std::string() : "rotary        " + ropeText(c) + "\n")
        << (c.noRopeLayers.empty() ? std::string()
                                   : "no rotary     " + layerListText(c.noRopeLayers) + " (NoPE)\n")
        << "dtype         " << c.torchDtype << "\n"
        << "tied head     " << (c.tieWordEmbeddings ? "yes" : "no") << "\n";
    return 0;
}

int cmdTokenize(const Args& args, std::ostream& out)
{
    args.allowOnly({"model", "text", "json", "no-special"});
    auto tok = loadTokenizer(modelArg(args));
    auto ids = tok->encode(args.value("text"), !args.flag("no-special"));
    if (args.flag("json")) {
        out << json{{"ids", ids}}.dump() << "\n";
        return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i)
        out << ids[i] << "\t" << tok->idToPiece(ids[i]) << "\n";
    return 0;
}

}  // namespace tb
