// Token embeddings multiplied by ModelConfig::embeddingScale as transformers multiplies them: the
// scale rounded to the embeddings' dtype first (Gemma 3's sqrt(hidden) is 25.25, not 25.30, in
// bf16 at hidden 640).
#pragma once

#include <torch/torch.h>

namespace tb {

// rows: [..., hidden]; returned as they are when scale is 1.
inline torch::Tensor scaledEmbeddings(const torch::Tensor& rows, double scale)
{
    if (scale == 1.0)
        return rows;
    return rows * torch::scalar_tensor(scale, torch::kFloat64).to(rows.scalar_type()).item();
}

}  // namespace tb
