// Trainable tensors and the generator state of a checkpoint.
#include "train/checkpoint.h"

#include "util/error.h"

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

}  // namespace tb
