// SHA-256 (FIPS 180-4) of bytes and of files, lowercase hex: checkpoint manifests, run.json's model
// and dataset hashes, snapshot contents and source files of the dataset store.
#pragma once

#include <string>

namespace tb {

std::string sha256Hex(const std::string& bytes);
std::string
sha256File(const std::string& path);  // throws tb::Error naming the file when unreadable

}  // namespace tb
