// Preference pairs: the row layouts they are read from and the checks each pair passes.
#include "data/pairs.h"

namespace tb {

const char* pairLayoutName(PairLayout layout)
{
    switch (layout) {
    case PairLayout::Auto: return "auto";
    case PairLayout::Standard: return "standard";
    case PairLayout::HhRlhf: return "hh-rlhf";
    case PairLayout::UltraFeedback: return "ultrafeedback";
    }
    return "auto";
}

std::optional<PairLayout> parsePairLayout(const std::string& name)
{
    for (PairLayout l :
         {PairLayout::Auto, PairLayout::Standard, PairLayout::HhRlhf, PairLayout::UltraFeedback})
        if (name == pairLayoutName(l))
            return l;
    return std::nullopt;
}

}  // namespace tb
