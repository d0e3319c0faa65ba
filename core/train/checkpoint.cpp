// Trainable tensors and the generator state of a checkpoint.
#include "train/checkpoint.h"

#include "util/error.h"

#include <cmath>
#include <cstring>
#include <map>

namespace tb {
const std::vector<TensorBlob>& tensorFile(const CheckpointLoad& checkpoint, const std::string& name)
{
    for (const auto& [n, blobs] : checkpoint.data.tensorFiles)
        if (n == name)
            return blobs;
    fail(checkpoint.dir, ": tensor file '", name, "' is missing");
}

void loadTrainableTensors(const std::vector<std::pair<std::string, torch::Tensor>>& params,
                          const std::vector<TensorBlob>& blobs, const std::string& where)
{
    torch::NoGradGuard noGrad;
    std::map<std::string, const TensorBlob*> byName;
    for (const auto& b : blobs)
        byName[b.name] = &b;
    for (const auto& [name, p] : params) {
        auto it = byName.find(name);
        if (it == byName.end())
            fail(where, ": trainable tensor '", name, "' is missing");
        auto t = blobToTensor(*it->second);
        if (t.sizes() != p.sizes())
            fail(where, ": trainable tensor '", name, "' has a different shape than the model's");
        p.copy_(t.to(p.device(), p.scalar_type()));
    }
}

TensorBlob cpuGeneratorState()
{
    auto rng = at::globalContext().defaultGenerator(torch::kCPU).get_state().contiguous();
    return TensorBlob{"cpu",
                      DType::U8,
                      {rng.numel()},
                      std::string(reinterpret_cast<const char*>(rng.data_ptr()),
                                  static_cast<size_t>(rng.numel()))};
}

void restoreCpuGenerator(const TensorBlob& blob)
{
    auto state = torch::empty({static_cast<int64_t>(blob.bytes.size())}, torch::kUInt8);
    std::memcpy(state.data_ptr(), blob.bytes.data(), blob.bytes.size());
    auto generator =
        at::globalContext().defaultGenerator(torch::kCPU);  // a handle on the global one
    generator.set_state(state);
}

std::string optimizerShardName(int rank)
{
    return "optimizer-rank-" + std::to_string(rank);
}

namespace {

constexpr const char* kMomentKinds[] = {".exp_avg_sq", ".exp_avg", ".momentum"};

// "<param>[@start].<kind>" -> (param, start or -1, kind); false for another name.
bool parseMomentName(const std::string& name, std::string& param, int64_t& start, std::string& kind)
{
    for (const char* k : kMomentKinds) {
        const std::string suffix(k);
        if (name.size() > suffix.size() && name.ends_with(suffix)) {
            kind = suffix;
            param = name.substr(0, name.size() - suffix.size());
            start = -1;
            if (const auto at = param.rfind('@'); at != std::string::npos) {
                start = std::stoll(param.substr(at + 1));
                param = param.substr(0, at);
            }
            return true;
        }
    }
    return false;
}

}  // namespace

std::vector<TensorBlob>
wholeOptimizerState(const CheckpointLoad& checkpoint,
                    const std::vector<std::pair<std::string, torch::Tensor>>& params)
{
    std::vector<const std::vector<TensorBlob>*> files;
    for (const auto& [name, blobs] : checkpoint.data.tensorFiles)
        if (name == "optimizer" || name.rfind("optimizer-rank-", 0) == 0)
            files.push_back(&blobs);
    if (files.empty())
        fail(checkpoint.dir, ": tensor file 'optimizer' is missing (and no optimizer shards)");
    std::map<std::string, torch::Tensor> shapes;
    for (const auto& [name, p] : params)
        shapes[name] = p;
    struct Whole {
        torch::Tensor flat;
        int64_t covered = 0;
    };
    std::map<std::string, Whole> wholes;  // "<param><kind>"
    for (const auto* blobs : files) {
        for (const TensorBlob& blob : *blobs) {
            std::string param, kind;
            int64_t start = -1;
            if (!parseMomentName(blob.name, param, start, kind))
                fail(checkpoint.dir, ": optimizer tensor '", blob.name, "' is not a moment");
            const auto it = shapes.find(param);
            if (it == shapes.end())
                fail(checkpoint.dir, ": optimizer tensor '", blob.name,
                     "' belongs to no trainable parameter");
            const int64_t numel = it->second.numel();
            const torch::Tensor piece = blobToTensor(blob).view({-1});
            const int64_t from = start < 0 ? 0 : start;
            if (from + piece.numel() > numel || (start < 0 && piece.numel() != numel))
                fail(checkpoint.dir, ": optimizer tensor '", blob.name, "' does not fit '", param,
                     "' (", numel, " elements)");
            Whole& w = wholes[param + kind];
            if (!w.flat.defined())
                w.flat = torch::full({numel}, std::nan(""), torch::kFloat32);
            w.flat.narrow(0, from, piece.numel()).copy_(piece);
            w.covered += piece.numel();
        }
    }
    std::vector<TensorBlob> out;
    for (auto& [key, w] : wholes) {
        std::string param, kind;
        int64_t start = 0;
        parseMomentName(key, param, start, kind);
        const torch::Tensor& like = shapes.at(param);
        if (w.covered != like.numel())
            fail(checkpoint.dir, ": the optimizer shards cover ", w.covered, " of the ",
                 like.numel(), " elements of '", key, "' (a shard is missing or overlaps)");
        out.push_back(tensorToBlob(key, w.flat.view(like.sizes())));
    }
    return out;
}

std::vector<TensorBlob>
segmentOptimizerState(const std::vector<TensorBlob>& whole,
                      const std::vector<std::pair<std::string, torch::Tensor>>& segments)
{
    std::map<std::string, const TensorBlob*> byName;
    for (const auto& b : whole)
        byName[b.name] = &b;
    std::vector<TensorBlob> out;
    for (const auto& [segment, view] : segments) {
        const auto at = segment.rfind('@');
        const std::string param = segment.substr(0, at);
        const int64_t start = std::stoll(segment.substr(at + 1));
        for (const char* kind : kMomentKinds) {
            const auto it = byName.find(param + kind);
            if (it == byName.end())
                continue;
            const torch::Tensor flat = blobToTensor(*it->second).view({-1});
            out.push_back(tensorToBlob(segment + kind, flat.narrow(0, start, view.numel())));
        }
    }
    return out;
}

}  // namespace tb
