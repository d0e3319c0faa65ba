// Where Tunebench finds its bundled data (the stories260k model and example datasets).
#pragma once

#include <string>

namespace tb {

// The data folder: $TUNEBENCH_DATA_DIR, else <exe>/../share/tunebench/datasets when installed,
// else the source tree's datasets/ folder.
std::string dataDir();
// dataDir()/models/stories260k
std::string bundledModelDir();

}  // namespace tb
