// Memory planner: a fine-tuning run's bytes per device, itemised, from config.json alone.
#pragma once

#include "model/config.h"
#include "peft/method.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb {

// What the run looks like on the device. Byte conventions of every precision: docs/memory.md.
struct EstimateOptions {
    std::string precision = "fp32";   // fp32 | bf16-mixed | fp16-mixed (fp32 weights, autocast)
                                      // | bf16 (pure: weights, gradients, states all bf16)
    std::string optimizer = "adamw";  // adamw | sgd | sgd-momentum
    int64_t batch = 1;                // sequences per micro-batch, per device
    int64_t seq = 512;                // tokens per sequence
    int64_t gradAccum = 1;            // micro-batches per optimizer step
    bool gradientCheckpointing = false;
    std::string attention = "sdpa";  // sdpa (fused: logsumexp) | naive (stores s x s probabilities)
    // Examples packed into each sequence (data.packing): attention keeps a [batch, seq, seq] mask.
    bool packing = false;
    std::string loss = "full";  // full ([tokens, vocab] logits) | chunked
    int64_t lossChunk = 1024;   // tokens per chunk of the chunked loss
    int64_t gpus = 1;
    int zero = 0;                         // ZeRO stage 0..3: what is sharded over the gpus
    std::optional<int64_t> deviceMemory;  // bytes per device; unset: `fits` stays unknown
    // The run is on CUDA: its context, allocator rounding and the fused loss's LibTorch
    // logsumexp temporary (kFusedLossLogsumexpRows); off for the CPU.
    bool cudaOverhead = true;
    bool advise = true;  // look for changes that fit when it does not
    // The training objective (train/objective.h): sft | dpo | ipo | simpo | orpo | reward. Pair
    // objectives run `batch` pairs per micro-batch, each a chosen and a rejected sequence.
    std::string objective = "sft";
    // dpo, ipo: where the reference log-probabilities come from. none (other objectives) | off
    // (the policy with its trainable parts switched off: no extra weights) | copy (a frozen copy
    // of the base weights) | precomputed (stored per pair before training). auto (or none with
    // dpo, ipo): off for LoRA, adapters and prompt tuning, copy for full and partial.
    std::string reference = "none";
};

// One line of the estimate. key: weights, [dequantized], gradients, optimizer_states,
// master_weights, [reference], activations, logits, [logprobs], [head], overhead (the JSON keys of
// `tunebench estimate`; the bracketed ones only where they belong: dequantized with a quantised
// base, reference for dpo and ipo, logprobs for dpo, ipo, simpo and orpo, head for reward).
struct MemoryItem {
    std::string key;
    int64_t bytes = 0;
    std::string explanation;  // one sentence
    std::string formula;      // the arithmetic behind `bytes`, in words and numbers (--explain)
};

// One moment of a training step: what is alive on top of weights, optimizer states and master
// weights. The estimate's total is the largest.
struct MemoryPhase {
    std::string name;  // forward | backward | recompute | end of backward | optimizer step
    int64_t bytes = 0;
    std::string what;  // in words
};

// Bytes per device. Weights, gradients and optimizer states are exact (what the trainer allocates);
// activations and logits follow what the blocks save for backward (docs/memory.md).
struct MemoryEstimate {
    int64_t parameters = 0;  // all held during training: base + LoRA/adapter/prompt (PEFT's count)
    int64_t parametersBase = 0;            // the checkpoint's own parameters
    int64_t trainableParameters = 0;       // trainable token rows included
    int64_t trainableTokens = 0;           // rows of trainable tokens (peft/trainable_tokens.h)
    int64_t trainableTokenParameters = 0;  // their deltas: rows x hidden (x 2 untied)

    int64_t weightsTrainable = 0;  // bytes (before ZeRO-3 sharding, like weightsFrozen)
    int64_t weightsFrozen = 0;     // quantised layers included, at their packed size
    // Quantised base (method.quant): the parameters held quantised, their bytes item by item
    // (codes, absmax, double-quant tables), and the one dequantised layer alive at a time (the
    // largest, in the compute dtype) during forward and the input gradient in backward.
    int64_t quantizedParameters = 0;
    QuantBytes quantizedBytes;
    int64_t dequantTransient = 0;
    int64_t weights = 0;  // this device's share
    int64_t gradients = 0;
    int64_t optimizerStates = 0;
    int64_t masterWeights = 0;  // 0 in Tunebench: the fp32 weights are the master copy
    int64_t activations = 0;    // the one that applies (with or without checkpointing)
    // Of `activations`, what the forward pass leaves for backward: with checkpointing the blocks'
    // inputs and the head, not the block that backward recomputes (the first step's measured
    // "activations" is this moment).
    int64_t activationsStored = 0;
    int64_t activationsPerBlock =
        0;  // one block's saved tensors for the micro-batch, no checkpointing
    int64_t activationsCheckpoint = 0;    // one block's checkpoint (its input) for the micro-batch
    int64_t activationsHead = 0;          // final norm and head input
    int64_t activationsWeightCopies = 0;  // autocast's 16-bit weight copies kept for backward
    int64_t activationsNoCheckpointing = 0;
    int64_t activationsCheckpointing = 0;
    int64_t blocksStoring = 0;  // blocks that save activations without checkpointing
    int64_t logits = 0;
    // The loss's buffers at its forward side, all alive at once while the loss is formed (the
    // logits in the compute dtype, their fp32 copy, the log-softmax saved).
    int64_t logitsForward = 0;
    // What of those is still alive when the forward pass has returned: only the saved fp32
    // log-softmax (nothing saves the logits or their copy). The first step's measured
    // "activations" (the growth from load to the end of the forward pass) holds it besides the
    // activations. Chunked loss and reward scores: as logitsForward.
    int64_t logitsSaved = 0;
    int64_t stepWorkspace = 0;  // optimizer-step temporaries (AdamW's denominator)

    // The objective (docs/memory.md, "Preference objectives and reward models"). activations and
    // logits above are for `sequences` rows: 2 x batch for the pair objectives.
    std::string objective = "sft";
    std::string reference = "none";  // resolved: none | off | copy | precomputed
    int64_t sequences = 0;           // sequences per micro-batch
    int64_t referenceWeights = 0;    // reference copy: the base weights again (0 for off)
    int64_t referenceForward = 0;    // the no-grad reference pass's temporaries (a phase)
    int64_t logprobs = 0;            // per-token log-probabilities and per-sequence sums
    int64_t head = 0;                // reward head: weight + gradient + optimizer states
    int64_t headWeight = 0, headGradient = 0, headStates = 0;  // its parts
    int64_t headParameters = 0;  // reward head: hidden (not in parameters above)
    int64_t overhead = 0;
    int64_t total = 0;      // the peak: fixed bytes + the largest phase + overhead
    std::string peakPhase;  // the name of the largest phase
    std::vector<MemoryPhase> phases;

    // For comparison, generating with the same model on one device at the same batch and sequence
    // length: the checkpoint's weights in the compute width (4 B under fp32, 2 B under the 16-bit
    // conventions), the KV cache, one MLP's temporaries for the prompt, the next position's fp32
    // logits, and the same overhead rule. What training adds on top is gradients, optimizer states
    // and activations.
    int64_t inference = 0;
    std::string inferenceFormula;

    std::vector<MemoryItem> items;    // weights ... overhead, in the order of MemoryItem's keys
    std::optional<bool> fits;         // unset when no device memory was given
    std::vector<std::string> advice;  // sentences, cheapest first; only changes that fit
};

// Throws tb::Error naming the option when a value is out of range or unknown (precision, batch,
// lora rank, a LoRA target no layer has, ...).
MemoryEstimate estimateMemory(const ModelConfig& model, const MethodOptions& method,
                              const EstimateOptions& options);

// The cheapest changes that make `estimate` fit options.deviceMemory, each re-estimated: the
// chunked loss, gradient checkpointing, a smaller micro-batch with more accumulation, LoRA instead
// of full or partial fine-tuning, ZeRO on 2, 4 or 8 GPUs; all the cheap ones together when no
// single one fits. DPO and IPO with a reference copy: precomputed reference log-probabilities,
// and LoRA with the reference switched off. Empty when it fits or nothing tried fits.
std::vector<std::string> memoryAdvice(const ModelConfig& model, const MethodOptions& method,
                                      const EstimateOptions& options,
                                      const MemoryEstimate& estimate);

// Tokens per chunk of the fused head loss (train/chunked_loss.h, fusedHeadCrossEntropy): about
// 256 MiB of logits and their fp32 log-softmax (8 B an entry), at least 64 tokens.
int64_t fusedLossChunkTokens(int64_t vocab);
// Rows of a chunk the fused loss takes logsumexp over at once on CUDA (its fp32 temporary is that
// many rows of the vocabulary; the CPU's softmax-rows kernel needs none).
inline constexpr int64_t kFusedLossLogsumexpRows = 64;

// "24GiB", "24G" (binary), "24GB", "80e9", "25769803776" -> bytes. Throws tb::Error quoting the
// text.
int64_t parseByteSize(const std::string& text);
// 19200000000 -> "17.88 GiB"; below 1 GiB in MiB, below 1 MiB in KiB or B.
std::string formatBytes(int64_t bytes);
// 1100048384 -> "1,100,048,384".
std::string groupDigits(int64_t value);
// A paragraph on why training needs gradients, optimizer states and activations that inference does
// not.
std::string trainingMemoryPrimer();

}  // namespace tb
