// Optional numbers in JSON records: null when unset, and back.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

namespace tb {

inline nlohmann::json jsonOrNull(const std::optional<double>& v)
{
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// object[key] as a number, or nullopt when the key is missing or null.
inline std::optional<double> optionalNumberAt(const nlohmann::json& object, const char* key)
{
    if (!object.contains(key) || object[key].is_null())
        return std::nullopt;
    return object[key].get<double>();
}

}  // namespace tb
