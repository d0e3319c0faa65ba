// The rotary tables a forward pass's blocks share, from the inverse frequencies of the rotary base.
#pragma once

#include "model/causal_lm.h"

namespace tb {

// cos and sin [seq, head_dim] for positions past .. past + length - 1, or per row for `positions`
// ([batch, seq] int64 -> [batch, 1, seq, head_dim]); computed in fp32 and cast to like's dtype, as
// transformers does. invFreq: [head_dim / 2] fp32 on like's device.
inline BlockContext rotaryTables(const torch::Tensor& invFreq, int64_t past, int64_t length,
                                 const torch::Tensor& like, const torch::Tensor& positions)
{
    torch::Tensor freqs;
    if (positions.defined()) {
        freqs = (positions.to(torch::kFloat32).unsqueeze(-1) * invFreq).unsqueeze(1);
    } else {
        auto steps =
            torch::arange(past, past + length,
                          torch::TensorOptions().dtype(torch::kFloat32).device(like.device()));
        freqs = torch::outer(steps, invFreq);
    }
    auto emb = torch::cat({freqs, freqs}, -1);
    return {emb.cos().to(like.scalar_type()), emb.sin().to(like.scalar_type()), {}};
}

}  // namespace tb
