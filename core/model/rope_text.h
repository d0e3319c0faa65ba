// A model's rotary embedding in words where it is more than the plain one over whole heads: the
// rotated fraction of each head (Phi-4-mini's 3/4) and the scaling (linear, llama3, LongRoPE).
// Torch-free; for `info` and the Model page.
#pragma once

#include "model/config.h"

#include <sstream>
#include <string>

namespace tb {

// "" for the plain embedding; else e.g. "96 of 128 dims per head; longrope (original context
// 4096, x32, cos/sin x1.19)".
inline std::string ropeText(const ModelConfig& c)
{
    if (c.architecture == Architecture::Gpt2)
        return {};
    std::ostringstream out;
    out.precision(3);
    if (c.rotatedDim() < c.headDim)
        out << c.rotatedDim() << " of " << c.headDim << " dims per head";
    const RopeScaling& s = c.ropeScaling;
    if (!s.type.empty()) {
        if (c.rotatedDim() < c.headDim)
            out << "; ";
        out << s.type;
        if (s.type == "linear")
            out << " x" << s.factor;
        else if (s.type == "llama3")
            out << " (original context " << s.originalMaxPositions << ", x" << s.factor << ")";
        else if (s.type == "longrope")
            out << " (original context " << s.originalMaxPositions << ", x" << s.factor
                << ", cos/sin x" << s.attentionFactor << ")";
    }
    return out.str();
}

}  // namespace tb
