// Which layers of a model a per-layer flag marks, in words: "layers 0-4, 6-10, 12" (numbered from
// 0, runs as ranges). Torch-free; for ModelConfig's sliding and NoPE layers, `info` and the Model
// page.
#pragma once

#include <string>
#include <vector>

namespace tb {

inline std::string layerListText(const std::vector<bool>& marked)
{
    std::string text;
    for (size_t i = 0; i < marked.size(); ++i) {
        if (!marked[i] || (i > 0 && marked[i - 1]))
            continue;
        size_t last = i;
        while (last + 1 < marked.size() && marked[last + 1])
            ++last;
        if (!text.empty())
            text += ", ";
        text += std::to_string(i);
        if (last > i) {
            text += '-';
            text += std::to_string(last);
        }
    }
    return text.empty() ? std::string("no layer") : std::string("layers ").append(text);
}

}  // namespace tb
