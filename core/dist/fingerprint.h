// What every rank of a data-parallel run must agree on before training: its run config, model and
// data (their hashes), compared field by field so a mismatch names the rank and the key.
// Torch-free.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tb {

// The first differing field between two fingerprints as "config.lora.rank (8 vs 4)"; empty when
// equal. Objects are walked key by key, in order; other values compare whole.
std::string firstDifference(const nlohmann::json& reference, const nlohmann::json& other,
                            const std::string& path = {});
// Throws tb::Error naming the lowest rank whose fingerprint differs from rank 0's, and the field.
void checkFingerprints(const std::vector<std::string>& fingerprints);

}  // namespace tb
