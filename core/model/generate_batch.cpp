// Batched generation with a KV cache: prompts of different lengths decoded together (left padding,
// a key padding mask, per-row positions), each row stopping on its own and leaving the batch when
// it does; row i gets the tokens generate() gives for prompt i.
#include "model/model_impl.h"
#include "model/sampling.h"

#include <chrono>
#include <numeric>

namespace tb {
namespace {

// Prompts left-padded to the longest: ids [batch, longest] int64 (padding id 0) and real [batch,
// longest] bool, false at the padding; real is undefined when all have one length (no padding:
// the plain causal path).
struct PaddedPrompts {
    torch::Tensor ids, real;
};

PaddedPrompts padLeft(const std::vector<std::vector<int32_t>>& prompts)
{
    size_t longest = 0;
    for (const auto& p : prompts)
        longest = std::max(longest, p.size());
    const auto batch = static_cast<int64_t>(prompts.size());
    const auto width = static_cast<int64_t>(longest);
    auto ids = torch::zeros({batch, width}, torch::kInt64);
    auto real = torch::zeros({batch, width}, torch::kBool);
    auto* id = ids.data_ptr<int64_t>();
    auto* flag = real.data_ptr<bool>();
    bool ragged = false;
    for (size_t i = 0; i < prompts.size(); ++i) {
        const size_t pad = longest - prompts[i].size();
        ragged = ragged || pad > 0;
        for (size_t j = 0; j < prompts[i].size(); ++j) {
            id[i * longest + pad + j] = prompts[i][j];
            flag[i * longest + pad + j] = true;
        }
    }
    return {ids, ragged ? real : torch::Tensor()};
}

// The next token of each row of the batch from logits [rows, vocab]: greedy without a penalty on
// the device in one call (argmax takes the first of equal values, as on one row), else row by row
// on the CPU, as generate() picks.
std::vector<int64_t> pickAll(const torch::Tensor& logits, const std::vector<GenerationRow*>& rows,
                             const GenerateOptions& o)
{
    std::vector<int64_t> picks(rows.size());
    if ((o.greedy || o.temperature <= 0.0) && o.repetitionPenalty == 1.0) {
        auto best = logits.to(torch::kFloat32).argmax(-1).to(torch::kCPU).contiguous();
        std::copy_n(best.data_ptr<int64_t>(), picks.size(), picks.begin());
        return picks;
    }
    auto cpu = logits.to(torch::kCPU, torch::kFloat32);
    for (size_t r = 0; r < rows.size(); ++r)
        picks[r] = rows[r]->pick(cpu.select(0, static_cast<int64_t>(r)));
    return picks;
}

}  // namespace

std::vector<GenerateResult> Model::generateBatch(const std::vector<std::vector<int32_t>>& prompts,
                                                 const GenerateOptions& o,
                                                 const Tokenizer* tokenizer,
                                                 const BatchCallback& onStep) const
{
    auto& module = *m_impl->module;
    const auto& cfg = module.config();
    for (size_t i = 0; i < prompts.size(); ++i)
        checkGenerateRequest(prompts[i], o, tokenizer, cfg.vocabSize,
                             ("generateBatch: prompt " + std::to_string(i)).c_str());
    if (prompts.empty())
        return {};
    torch::InferenceMode guard;
    const auto stopIds = stopTokenSet(cfg, o, tokenizer);
    std::vector<GenerationRow> rows;
    rows.reserve(prompts.size());
    for (const auto& p : prompts)
        rows.emplace_back(p, o, tokenizer, stopIds);
    // Per row: the cache positions its sequence fills (soft prompt included), for the context
    // limit.
    const int64_t virtualTokens =
        module.promptEmbeddings().defined() ? module.promptEmbeddings().size(0) : 0;
    std::vector<int64_t> filled(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i)
        filled[i] = virtualTokens + static_cast<int64_t>(prompts[i].size());
    std::vector<size_t> batch(prompts.size());  // the rows in the cache, in its order
    std::iota(batch.begin(), batch.end(), size_t(0));
    std::vector<bool> done(prompts.size(), false);
    size_t finished = 0;
    KVCache cache;
    using Clock = std::chrono::steady_clock;

    auto t0 = Clock::now();
    auto padded = padLeft(prompts);
    auto logits = module.forwardLast(padded.ids.to(m_impl->device), &cache,
                                     padded.real.defined() ? padded.real.to(m_impl->device)
                                                           : torch::Tensor());
    auto t1 = Clock::now();

    for (int step = 0; step < o.maxNewTokens && finished < rows.size(); ++step) {
        if (step > 0) {
            // Rows whose context is full stop before their next pass, as in generate(); they and
            // the rows that finished leave the batch.
            std::vector<int64_t> keep;
            for (size_t k = 0; k < batch.size(); ++k) {
                const size_t i = batch[k];
                if (!done[i] && filled[i] >= cfg.maxPositions) {
                    rows[i].result.stopReason = "context_full";
                    done[i] = true;
                    ++finished;
                }
                if (!done[i])
                    keep.push_back(static_cast<int64_t>(k));
            }
            if (keep.empty())
                break;
            if (keep.size() < batch.size()) {
                cache.keepRows(torch::tensor(keep, torch::kInt64).to(m_impl->device));
                std::vector<size_t> kept;
                for (int64_t k : keep)
                    kept.push_back(batch[static_cast<size_t>(k)]);
                batch = kept;
            }
            std::vector<int64_t> last;
            for (size_t i : batch) {
                last.push_back(rows[i].history().back());
                ++filled[i];
            }
            auto next = torch::tensor(last, torch::kInt64).view({-1, 1}).to(m_impl->device);
            logits = module.forwardLast(next, &cache);
        }
        std::vector<GenerationRow*> running;
        for (size_t i : batch)
            running.push_back(&rows[i]);
        const auto picks = pickAll(logits, running, o);
        for (size_t k = 0; k < batch.size(); ++k) {
            const size_t i = batch[k];
            const TokenOutcome outcome = rows[i].accept(picks[k]);
            if (outcome.eos)
                rows[i].result.stopReason = "eos";
            else if (outcome.stopString)
                rows[i].result.stopReason = "stop_string";
            else if (step + 1 < o.maxNewTokens)
                continue;  // still running (else it has spent its budget: "max_tokens")
            done[i] = true;
            ++finished;
        }
        if (onStep && !onStep(finished)) {
            for (size_t i : batch)
                if (!done[i])
                    rows[i].result.stopReason = "cancelled";
            break;
        }
    }
    const double prefillSeconds = std::chrono::duration<double>(t1 - t0).count();
    const double decodeSeconds = std::chrono::duration<double>(Clock::now() - t1).count();
    std::vector<GenerateResult> results;
    results.reserve(rows.size());
    for (auto& row : rows) {
        row.result.prefillSeconds = prefillSeconds;
        row.result.decodeSeconds = decodeSeconds;
        results.push_back(std::move(row.result));
    }
    return results;
}

}  // namespace tb
