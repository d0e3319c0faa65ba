// The catalog of real model configs shipped with Tunebench (datasets/model-configs): config.json
// only, a few KB each, to read a model's shape and plan its memory without downloading it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tb {

struct CatalogModel {
    std::string id;          // folder name: "llama-3.1-8b"
    std::string title;       // "Llama 3.1 8B"
    std::string repo;        // where the config was published: "meta-llama/Llama-3.1-8B"
    std::string configPath;  // <catalog>/<id>/config.json
};

// dataDir()/model-configs (util/paths.h: the source tree's datasets/ or the installed copy).
std::string modelCatalogDir();
// The models of <catalog>/catalog.json in its order. Throws tb::Error naming the file when it is
// missing or malformed, or an entry's config.json is absent.
std::vector<CatalogModel> modelCatalog();
// The entry whose id matches (case-insensitive); nullopt when none does.
std::optional<CatalogModel> findCatalogModel(const std::string& id);

// A model argument (`tunebench estimate --model`): an existing path as given, else the config.json
// of the catalog entry of that id. Throws tb::Error naming the text and the catalog's ids when it
// is neither.
std::string resolveModelPath(const std::string& pathOrId);

}  // namespace tb
