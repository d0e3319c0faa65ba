// Names of the fine-tuning methods, as run configs and reports spell them.
#include "peft/method.h"

namespace tb {

const char* methodName(Method method)
{
    switch (method) {
    case Method::Full:
        return "full";
    case Method::Partial:
        return "partial";
    case Method::Lora:
        return "lora";
    case Method::Adapter:
        return "adapter";
    case Method::Prompt:
        return "prompt";
    }
    return "lora";
}

}  // namespace tb
