// Comparing the ranks' fingerprints.
#include "dist/fingerprint.h"

#include "util/error.h"

namespace tb {

std::string firstDifference(const nlohmann::json& reference, const nlohmann::json& other,
                            const std::string& path)
{
    auto join = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
    if (reference.is_object() && other.is_object()) {
        for (const auto& [key, value] : reference.items()) {
            if (!other.contains(key))
                return join(key) + " (" + value.dump() + " vs absent)";
            if (std::string d = firstDifference(value, other.at(key), join(key)); !d.empty())
                return d;
        }
        for (const auto& [key, value] : other.items())
            if (!reference.contains(key))
                return join(key) + " (absent vs " + value.dump() + ")";
        return {};
    }
    if (reference == other)
        return {};
    std::string a = reference.dump(), b = other.dump();
    if (a.size() > 80)
        a = a.substr(0, 77) + "...";
    if (b.size() > 80)
        b = b.substr(0, 77) + "...";
    return (path.empty() ? std::string("fingerprint") : path) + " (" + a + " vs " + b + ")";
}

void checkFingerprints(const std::vector<std::string>& fingerprints)
{
    if (fingerprints.empty())
        return;
    const auto reference = nlohmann::json::parse(fingerprints[0], nullptr, false);
    for (size_t r = 1; r < fingerprints.size(); ++r) {
        const auto other = nlohmann::json::parse(fingerprints[r], nullptr, false);
        if (const std::string d = firstDifference(reference, other); !d.empty())
            fail("rank ", r, " differs from rank 0 in ", d,
                 ": every rank must train the same run config, model and data");
    }
}

}  // namespace tb
