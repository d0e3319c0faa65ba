// SftRecipe's data-parallel parts: joining the group, agreeing on the run folder and on what is
// trained, the optimizer over whole parameters or a ZeRO shard, stopping together, and checkpoints
// whose optimizer state is written by every rank.
#include "train/sft.h"

#include "dist/fingerprint.h"
#include "model/safetensors.h"
#include "peft/peft.h"
#include "train/recipe_parts.h"
#include "util/error.h"
#include "util/file_util.h"

namespace tb {

void SftRecipe::connect()
{
    m_distEnv = distEnvFromEnvironment();
    if (!m_distEnv)
        return;
    const DistEnv& env = *m_distEnv;
    torch::Device device = runDevice(m_config);
    if (device.is_cuda()) {
        const auto gpus = static_cast<int>(torch::cuda::device_count());
        if (env.localWorldSize > gpus)
            fail(m_config.sourcePath, ": ", env.localWorldSize, " ranks on this machine but only ",
                 gpus,
                 " CUDA device(s): data parallelism on CUDA takes one GPU per local rank (use "
                 "--nproc ",
                 gpus, " or fewer, or device: cpu)");
        device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.localRank));
        m_config.device = device.str();  // this rank's GPU
    }
    const int timeout = env.timeoutSeconds > 0 ? env.timeoutSeconds : m_config.dist.timeoutSeconds;
    m_group = std::make_unique<DistGroup>(env, device, timeout);
}

void SftRecipe::keepGlobalBatch(const nlohmann::json& runInfo)
{
    const auto dist = runInfo.find("dist");
    // RunStore::readRunInfo checked world_size: a whole number from 1 to 65536.
    const int before =
        dist != runInfo.end() && dist->is_object() ? dist->value("world_size", 1) : 1;
    // The batch the run's length-grouped order is cut for, as it started: recorded by launched
    // runs; else the batch_size it had (one process: the global batch; a launched run from before
    // order_batch was recorded cut it for the per-rank batch).
    const nlohmann::json recorded = dist != runInfo.end() && dist->is_object()
                                        ? dist->value("order_batch", nlohmann::json())
                                        : nlohmann::json();
    m_orderBatch = recorded.is_number_integer() && recorded.get<int64_t>() > 0
                       ? recorded.get<int64_t>()
                       : m_config.batchSize;
    const int now = worldSize();
    if (before == now)
        return;
    const int64_t global = int64_t(before) * m_config.batchSize;
    if (global % now != 0) {
        warn("resumed on " + std::to_string(now) + " rank(s) where the run had " +
             std::to_string(before) + ": its global batch of " + std::to_string(global) +
             " sequences does not divide evenly, so each rank keeps batch_size " +
             std::to_string(m_config.batchSize) + " (global batch " +
             std::to_string(int64_t(now) * m_config.batchSize) + ")");
        return;
    }
    m_config.batchSize = static_cast<int>(global / now);
    warn("resumed on " + std::to_string(now) + " rank(s) where the run had " +
         std::to_string(before) + ": batch_size " + std::to_string(m_config.batchSize) +
         " per rank keeps the global batch of " + std::to_string(global) + " sequences");
}

// Rank 0 creates (or, resuming, opens) the run folder; the others open it read-only once rank 0
// says where it is, or stop with rank 0's error.
void SftRecipe::openStore()
{
    if (!m_group) {
        m_store = openRunStore(m_config, m_resumeDir);
        return;
    }
    std::string answer;
    if (writer()) {
        try {
            m_store = openRunStore(m_config, m_resumeDir);
            answer = "ok:" + m_store->dir();
        } catch (const std::exception& e) {
            answer = std::string("error:") + e.what();
        }
    }
    const std::string first = m_group->exchange("run-dir", answer).front();
    if (first.rfind("error:", 0) == 0)
        fail(first.substr(6));
    if (!writer())
        m_store = std::make_unique<RunStore>(first.substr(3));
}

void SftRecipe::checkAgreement()
{
    if (!m_group)
        return;
    nlohmann::json config = toJson(m_config);
    config.erase("device");  // each rank its own GPU
    const nlohmann::json fingerprint = {
        {"config", config}, {"model", modelFolderHash(m_config.model)}, {"data", m_data.hash}};
    checkFingerprints(m_group->exchange("fingerprint", fingerprint.dump()));
}

void SftRecipe::setUpOptimizer()
{
    auto params = trainableParameters(*m_model.module);
    if (params.empty())
        fail(m_config.sourcePath, ": the method leaves no parameter to train");
    if (m_group) {
        m_sync = std::make_unique<GradSync>(params, *m_group, m_config.dist.zero,
                                            m_config.dist.bucketMiB << 20);
        m_sync->broadcastParameters();  // a resumed run then loads its checkpoint on every rank
        if (m_sync->zero() >= 1)
            params = m_sync->segments();
    }
    std::vector<bool> decay;
    for (const auto& [name, p] : params)
        decay.push_back(!noWeightDecay(GradSync::segmentParameter(name)));
    m_optimizer = std::make_unique<Optimizer>(params, decay, m_config.optim);
}

bool SftRecipe::stopAgreed()
{
    if (!m_group)
        return false;
    torch::Tensor flag = torch::tensor({int64_t(m_control.stopRequested() ? 1 : 0)});
    m_group->allreduceMax(flag, "agreeing whether to stop");
    if (flag.item<int64_t>() == 0)
        return false;
    m_control.stop();
    return true;
}

// Whole trainable tensors, the optimizer's moments (whole, or this rank's shard cut out of the
// checkpoint's whole or sharded ones, whatever world size wrote them), the generator and guard.
void SftRecipe::restoreOptimizer(const CheckpointLoad& checkpoint)
{
    torch::NoGradGuard noGrad;
    const auto params = trainableParameters(*m_model.module);
    m_position = trainerPositionFromJson(checkpoint.data.state, checkpoint.dir);
    loadTrainableTensors(params, tensorFile(checkpoint, "trainable"), checkpoint.dir);
    std::vector<TensorBlob> state = wholeOptimizerState(checkpoint, params);
    if (m_sync && m_sync->zero() >= 1)
        state = segmentOptimizerState(state, m_sync->segments());
    m_optimizer->loadState(state, m_position.optimizerSteps);
    const auto& rng = tensorFile(checkpoint, "rng");
    if (!rng.empty())
        restoreCpuGenerator(rng[0]);
    m_guard.restore(m_position.recentLosses);
}

// Rank 0 stages the folder; with ZeRO every other rank writes its optimizer shard there; rank 0
// then writes the rest and the manifest that lists every shard. A rank lost before the second
// barrier leaves a folder without a manifest, which resuming skips.
void SftRecipe::saveSharded()
{
    // A store key per save: a run may save the same step twice (stopped right after a save).
    const std::string key = "checkpoint-" + std::to_string(++m_shardedSaves);
    const int64_t step = m_position.step;
    const bool shards = m_sync->zero() >= 1;
    std::string staging = writer() ? m_store->checkpointStaging(step) : std::string();
    staging = m_group->exchange(key, staging).front();
    if (shards && !writer())
        writeSafetensors(joinPath(staging, optimizerShardName(m_group->rank()) + ".safetensors"),
                         m_optimizer->stateBlobs());
    m_group->barrier("writing the optimizer shards of checkpoint step " + std::to_string(step));
    std::string dir;
    if (writer()) {
        CheckpointData data = checkpointOf(m_position, *m_optimizer, m_guard, m_scaler.state());
        std::vector<TensorBlob> trainable;
        for (const auto& [name, p] : trainableParameters(*m_model.module))
            trainable.push_back(tensorToBlob(name, p));
        std::vector<std::string> staged;
        for (auto& [name, blobs] : data.tensorFiles) {
            if (name == "trainable")
                blobs = std::move(trainable);
            else if (name == "optimizer" && shards)
                name = optimizerShardName(0);
        }
        if (shards)
            for (int r = 1; r < m_group->size(); ++r)
                staged.push_back(optimizerShardName(r) + ".safetensors");
        dir = m_store->saveCheckpoint(data, m_config.keepCheckpoints, staging, staged);
    }
    m_group->barrier("committing checkpoint step " + std::to_string(step));
    if (m_events && writer())
        m_events->onCheckpoint(step, dir);
}

}  // namespace tb
