// Names of the fine-tuning methods and their closed options, as run configs and reports spell
// them, and back.
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

std::optional<Method> parseMethod(const std::string& name)
{
    for (Method m : {Method::Full, Method::Partial, Method::Lora, Method::Adapter, Method::Prompt})
        if (name == methodName(m))
            return m;
    return std::nullopt;
}

const char* adapterKindName(AdapterKind kind)
{
    switch (kind) {
    case AdapterKind::Houlsby:
        return "houlsby";
    case AdapterKind::Pfeiffer:
        return "pfeiffer";
    }
    return "houlsby";
}

std::optional<AdapterKind> parseAdapterKind(const std::string& name)
{
    for (AdapterKind k : {AdapterKind::Houlsby, AdapterKind::Pfeiffer})
        if (name == adapterKindName(k))
            return k;
    return std::nullopt;
}

const char* adapterActivationName(AdapterActivation activation)
{
    switch (activation) {
    case AdapterActivation::Relu:
        return "relu";
    case AdapterActivation::Gelu:
        return "gelu";
    case AdapterActivation::Silu:
        return "silu";
    case AdapterActivation::Tanh:
        return "tanh";
    }
    return "relu";
}

std::optional<AdapterActivation> parseAdapterActivation(const std::string& name)
{
    for (AdapterActivation a : {AdapterActivation::Relu, AdapterActivation::Gelu,
                                AdapterActivation::Silu, AdapterActivation::Tanh})
        if (name == adapterActivationName(a))
            return a;
    return std::nullopt;
}

}  // namespace tb
