// loadTunedModel: a run folder back into a usable model.
#include "train/tuned_model.h"

#include "model/model_impl.h"
#include "train/setup.h"
#include "util/error.h"
#include "util/file_util.h"

namespace tb {

std::unique_ptr<Model> loadTunedModel(const std::string& runDir, const LoadOptions& options,
                                      bool quantizedBase)
{
    if (options.dtype != "fp32")
        fail(runDir,
             ": a tuned model loads in fp32 (the precision its trainable weights were kept in)");
    PreparedModel prepared = loadRun(runDir, options.device, "load", quantizedBase).model;
    for (auto& p : prepared.module->parameters())
        p.set_requires_grad(false);
    auto impl = std::make_unique<Model::Impl>();
    impl->module = prepared.module;
    impl->device = prepared.device;
    impl->dtype = torch::kFloat32;
    return Model::fromImpl(std::move(impl));
}

}  // namespace tb
