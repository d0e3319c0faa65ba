// Data parallelism's gradient side: the trainable parameters in buckets (in reverse order, as
// backward produces them; about dist.bucket_mb each, padded to a multiple of the world size), each
// reduced across ranks as soon as its gradients are complete in backward (post-accumulate hooks),
// in bucket order on every rank. ZeRO-1 shards the optimizer: this rank updates only its chunk of
// every bucket (its "segments") and the updated chunks are all-gathered; ZeRO-2 also
// reduce-scatters the gradients, so a rank holds only its chunk of them. Internal to core (LibTorch
// types).
#pragma once

#include "dist/process_group.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tb {

class GradSync {
public:
    using Named = std::vector<std::pair<std::string, torch::Tensor>>;

    // params: contiguous leaf tensors; bucketBytes > 0.
    GradSync(const Named& params, DistGroup& group, int zero, int64_t bucketBytes);
    ~GradSync();
    GradSync(const GradSync&) = delete;
    GradSync& operator=(const GradSync&) = delete;

    // Every rank starts from rank 0's trainable values.
    void broadcastParameters();
    // Arms the hooks for the next backward pass: the last micro-batch of a step (the earlier ones
    // only accumulate locally).
    void arm() { m_armed = true; }
    // After the step's backward passes (a rank with no sequence in its last micro-batch runs none):
    // reduces the buckets the hooks did not, waits for all, and leaves the summed gradients in
    // every parameter's .grad (ZeRO 0, 1; parameters without a gradient get zeros) or only in this
    // rank's segments (ZeRO 2, the parameters' .grad freed).
    void finish();

    int zero() const { return m_zero; }
    // ZeRO >= 1: this rank's shard, views into the parameters named "<param>@<first element>", with
    // .grad set by finish(); what the optimizer updates.
    const Named& segments() const { return m_segments; }
    // The parameter a segment belongs to ("lora_a@128" -> "lora_a").
    static std::string segmentParameter(const std::string& segment);
    // The tensors holding the summed gradients now (to unscale fp16's loss scale).
    std::vector<torch::Tensor> gradients() const;
    int64_t gradientBytes() const;  // bytes this rank holds
    // Global L2 norm (fp32) of the summed gradients, clipped in place to maxNorm (> 0). ZeRO >= 1:
    // over the shards, squares summed across ranks.
    double clipGradNorm(double maxNorm);
    // Frees every gradient this holds: the parameters' (ZeRO-1 keeps the whole summed ones beside
    // the shard's views) and the segments'.
    void zeroGrad();
    // ZeRO >= 1, after the optimizer step: every rank's updated chunks into every rank's
    // parameters.
    void gatherParameters();
    // Padding elements (buckets rounded up to the world size); 0 when every bucket divides evenly.
    int64_t paddingElements() const;

    // Called by the hooks: parameter i's gradient is complete.
    void ready(size_t i);

private:
    struct Slot {
        size_t bucket = 0;
        int64_t offset = 0;  // elements into the bucket
        int64_t numel = 0;
    };
    struct Bucket {
        std::vector<size_t> params;
        int64_t numel = 0;  // padded to a multiple of the world size
        int64_t chunk = 0;  // numel / world size
        torch::ScalarType dtype = torch::kFloat32;
        int pending = 0;
        torch::Tensor flat, shard;
        c10::intrusive_ptr<c10d::Work> work;
    };
    void launch(size_t b);
    void buildSegments();

    Named m_params;
    DistGroup& m_group;
    int m_zero;
    std::vector<Slot> m_slots;
    std::vector<Bucket> m_buckets;
    size_t m_next = 0;  // the next bucket to launch: always in order
    bool m_armed = false;
    Named m_segments;
    struct SegmentPlace {
        size_t param = 0;
        int64_t start = 0;  // elements into the parameter
        int64_t inChunk = 0;
    };
    std::vector<SegmentPlace> m_places;
};

}  // namespace tb
