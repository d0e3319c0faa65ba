// Batched generation with a KV cache: prompts of different lengths decoded together (left padding,
// a key padding mask, per-row positions), each row stopping on its own and leaving the batch when
// it does; row i gets the tokens generate() gives for prompt i. The prompts are prefilled in one
// padded pass, or in groups of similar length into the padded cache where padding would cost more.
#include "model/model_impl.h"
#include "model/sampling.h"

#include <algorithm>
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

// Groups of prompts whose padding to the group's longest adds at most a quarter to its positions:
// the prompts by length, longest first, each group taking the next while that holds. Returns the
// groups' prompt indices.
std::vector<std::vector<size_t>> prefillGroups(const std::vector<std::vector<int32_t>>& prompts)
{
    std::vector<size_t> order(prompts.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return prompts[a].size() > prompts[b].size(); });
    std::vector<std::vector<size_t>> groups;
    size_t width = 0, real = 0;
    for (size_t i : order) {
        const size_t length = prompts[i].size();
        if (!groups.empty() && (groups.back().size() + 1) * width * 4 <= (real + length) * 5) {
            groups.back().push_back(i);
            real += length;
            continue;
        }
        groups.push_back({i});
        width = length;
        real = length;
    }
    return groups;
}

// Prefills the prompts in groups of similar length (prefillGroups; a group's rows left-padded
// among themselves, so few padded positions are computed) and copies their keys and values into
// the left-padded batch cache of `capacity` positions: the soft prompt's first, then zeros where
// the row is padded (never attended to), then the prompt's. Returns the last logits [batch, vocab].
torch::Tensor prefillInGroups(CausalLM& module, const std::vector<std::vector<int32_t>>& prompts,
                              const torch::Tensor& real, int64_t virtualTokens, int64_t capacity,
                              const torch::Device& device, KVCache& cache)
{
    const auto batch = static_cast<int64_t>(prompts.size());
    const int64_t width = real.size(1);
    std::vector<torch::Tensor> logits(prompts.size());
    for (const auto& group : prefillGroups(prompts)) {
        std::vector<std::vector<int32_t>> members;
        for (size_t i : group)
            members.push_back(prompts[i]);
        const PaddedPrompts padded = padLeft(members);
        const int64_t groupWidth = padded.ids.size(1);
        KVCache one;
        const auto last = module.forwardLast(
            padded.ids.to(device), &one,
            padded.real.defined() ? padded.real.to(device) : torch::Tensor());  // [rows, vocab]
        for (size_t r = 0; r < group.size(); ++r) {
            const auto i = static_cast<int64_t>(group[r]);
            const auto length = static_cast<int64_t>(prompts[group[r]].size());
            const auto row = static_cast<int64_t>(r);
            logits[group[r]] = last.narrow(0, row, 1);
            for (auto [rowList, batchList] :
                 {std::pair{&one.k, &cache.k}, std::pair{&one.v, &cache.v}}) {
                batchList->resize(rowList->size());
                for (size_t l = 0; l < rowList->size(); ++l) {
                    const auto src = (*rowList)[l][row];  // [kv_heads, capacity, head_dim]
                    auto& dst = (*batchList)[l];
                    if (!dst.defined())
                        dst = torch::zeros({batch, src.size(0), capacity, src.size(2)},
                                           src.options());
                    auto into = dst[i];
                    if (virtualTokens > 0)
                        into.narrow(1, 0, virtualTokens).copy_(src.narrow(1, 0, virtualTokens));
                    into.narrow(1, virtualTokens + width - length, length)
                        .copy_(src.narrow(1, virtualTokens + groupWidth - length, length));
                }
            }
        }
    }
    cache.length = virtualTokens + width;
    cache.valid =
        torch::cat({torch::ones({batch, virtualTokens}, torch::kBool), real}, 1).to(device);
    return torch::cat(logits, 0);
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

// The rows of one batch: each its GenerationRow, the cache positions its sequence fills (soft
// prompt included, for the context limit) and whether it has finished; `order` lists the rows
// still in the cache, in the cache's order.
struct BatchRows {
    std::vector<GenerationRow> rows;
    std::vector<int64_t> filled;
    std::vector<bool> done;
    std::vector<size_t> order;
    size_t finished = 0;

    void finish(size_t i, const char* reason)
    {
        if (reason)
            rows[i].result.stopReason = reason;
        done[i] = true;
        ++finished;
    }

    // Before a pass: rows whose context is full stop (as in generate()), and they and the rows
    // that finished leave the cache. Returns the last token of each row left, in cache order.
    std::vector<int64_t> nextInputs(KVCache& cache, int64_t maxPositions,
                                    const torch::Device& device)
    {
        std::vector<int64_t> keep;  // positions in the cache
        for (size_t k = 0; k < order.size(); ++k) {
            if (!done[order[k]] && filled[order[k]] >= maxPositions)
                finish(order[k], "context_full");
            if (!done[order[k]])
                keep.push_back(static_cast<int64_t>(k));
        }
        if (!keep.empty() && keep.size() < order.size()) {
            cache.keepRows(torch::tensor(keep, torch::kInt64).to(device));
            std::vector<size_t> kept;
            for (int64_t k : keep)
                kept.push_back(order[static_cast<size_t>(k)]);
            order = kept;
        }
        std::vector<int64_t> last;
        for (size_t i : order)
            if (!done[i]) {
                last.push_back(rows[i].history().back());
                ++filled[i];
            }
        return last;
    }

    // Takes one picked token for each row in the cache (cache order) at step `step`.
    void accept(const std::vector<int64_t>& picks, int step, int maxNewTokens)
    {
        for (size_t k = 0; k < order.size(); ++k) {
            const TokenOutcome outcome = rows[order[k]].accept(picks[k]);
            if (outcome.eos)
                finish(order[k], "eos");
            else if (outcome.stopString)
                finish(order[k], "stop_string");
            else if (step + 1 == maxNewTokens)
                finish(order[k], nullptr);  // its budget spent: "max_tokens"
        }
    }

    std::vector<GenerationRow*> inCache()
    {
        std::vector<GenerationRow*> out;
        for (size_t i : order)
            out.push_back(&rows[i]);
        return out;
    }
};

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
    const int64_t virtualTokens =
        module.promptEmbeddings().defined() ? module.promptEmbeddings().size(0) : 0;
    if (cfg.ropeScaling.type == "longrope") {
        // A row that leaves LongRoPE's original context rotates all its positions anew there
        // (generate()); rows decoded together share one set of tables, so such a batch runs row
        // by row.
        bool leaves = false;
        for (const auto& p : prompts)
            leaves = leaves || virtualTokens + static_cast<int64_t>(p.size()) + o.maxNewTokens >
                                   cfg.ropeScaling.originalMaxPositions;
        if (leaves) {
            std::vector<GenerateResult> results;
            for (size_t i = 0; i < prompts.size(); ++i) {
                results.push_back(generate(prompts[i], o, tokenizer));
                if (onStep && !onStep(i + 1)) {
                    for (size_t j = i + 1; j < prompts.size(); ++j) {
                        results.emplace_back();
                        results.back().stopReason = "cancelled";
                    }
                    break;
                }
            }
            return results;
        }
    }
    torch::InferenceMode guard;
    const auto stopIds = stopTokenSet(cfg, o, tokenizer);
    BatchRows b;
    b.rows.reserve(prompts.size());
    for (const auto& p : prompts) {
        b.rows.emplace_back(p, o, tokenizer, stopIds);
        b.filled.push_back(virtualTokens + static_cast<int64_t>(p.size()));
    }
    b.done.assign(prompts.size(), false);
    b.order.resize(prompts.size());
    std::iota(b.order.begin(), b.order.end(), size_t(0));
    KVCache cache;
    using Clock = std::chrono::steady_clock;

    auto t0 = Clock::now();
    auto padded = padLeft(prompts);
    int64_t realTokens = 0;
    for (const auto& p : prompts)
        realTokens += static_cast<int64_t>(p.size());
    torch::Tensor logits;
    // On the CPU, where a pass costs its arithmetic, prompts of similar length together once
    // padding would add a quarter to the batch's positions; else one padded pass (the GPU's
    // choice). The batch cache holds what the rows will fill.
    if (padded.real.defined() && m_impl->device.is_cpu() &&
        padded.ids.numel() * 4 >= realTokens * 5) {
        const int64_t filled = virtualTokens + padded.ids.size(1);
        const int64_t capacity =
            std::max(filled, std::min<int64_t>(filled + o.maxNewTokens, cfg.maxPositions));
        logits = prefillInGroups(module, prompts, padded.real, virtualTokens, capacity,
                                 m_impl->device, cache);
    } else {
        logits = module.forwardLast(padded.ids.to(m_impl->device), &cache,
                                    padded.real.defined() ? padded.real.to(m_impl->device)
                                                          : torch::Tensor());
    }
    auto t1 = Clock::now();

    for (int step = 0; step < o.maxNewTokens && b.finished < b.rows.size(); ++step) {
        if (step > 0) {
            const auto last = b.nextInputs(cache, cfg.maxPositions, m_impl->device);
            if (last.empty())
                break;
            auto next = torch::tensor(last, torch::kInt64).view({-1, 1}).to(m_impl->device);
            logits = module.forwardLast(next, &cache);  // [rows in the cache, vocab]
        }
        b.accept(pickAll(logits, b.inCache(), o), step, o.maxNewTokens);
        if (onStep && !onStep(b.finished)) {
            for (size_t i : b.order)
                if (!b.done[i])
                    b.rows[i].result.stopReason = "cancelled";
            break;
        }
    }
    const double prefillSeconds = std::chrono::duration<double>(t1 - t0).count();
    const double decodeSeconds = std::chrono::duration<double>(Clock::now() - t1).count();
    std::vector<GenerateResult> results;
    results.reserve(b.rows.size());
    for (auto& row : b.rows) {
        row.result.prefillSeconds = prefillSeconds;
        row.result.decodeSeconds = decodeSeconds;
        results.push_back(std::move(row.result));
    }
    return results;
}

}  // namespace tb
