// loadTunedModel: a run folder back into a usable model.
#include "train/tuned_model.h"

#include "model/model_impl.h"
#include "peft/peft.h"
#include "train/checkpoint.h"
#include "train/run_store.h"
#include "train/setup.h"
#include "util/error.h"
#include "util/file_util.h"

namespace tb {

std::unique_ptr<Model> loadTunedModel(const std::string& runDir, const LoadOptions& options)
{
    if (options.dtype != "fp32")
        fail(runDir,
             ": a tuned model loads in fp32 (the precision its trainable weights were kept in)");
    RunStore store(runDir);
    TrainConfig run = runConfig(store.readRunInfo(), runDir);
    run.device = options.device;
    auto checkpoint = store.loadLatestCheckpoint();
    if (!checkpoint)
        fail(runDir, ": no complete checkpoint");
    PreparedModel prepared = prepareModel(run);
    loadTrainableTensors(trainableParameters(*prepared.module),
                         tensorFile(*checkpoint, "trainable"), checkpoint->dir);
    for (auto& p : prepared.module->parameters())
        p.set_requires_grad(false);
    prepared.module->eval();
    auto impl = std::make_unique<Model::Impl>();
    impl->module = prepared.module;
    impl->device = prepared.device;
    impl->dtype = torch::kFloat32;
    return Model::fromImpl(std::move(impl));
}

}  // namespace tb
