// Reading the model-config catalog's index and resolving catalog ids to their config.json.
#include "model/catalog.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace tb {

namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return s;
}

}  // namespace

std::string modelCatalogDir()
{
    return joinPath(dataDir(), "model-configs");
}

std::vector<CatalogModel> modelCatalog()
{
    const std::string dir = modelCatalogDir();
    const std::string index = joinPath(dir, "catalog.json");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(readFile(index));
    } catch (const nlohmann::json::exception& e) {
        fail(index, ": not valid JSON (", e.what(), ")");
    }
    if (!j.is_object() || !j.contains("models") || !j["models"].is_array())
        fail(index, ": expected an object with a 'models' list");
    std::vector<CatalogModel> out;
    for (const auto& entry : j["models"]) {
        if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string())
            fail(index, ": every model needs a string 'id'");
        CatalogModel m;
        m.id = entry["id"].get<std::string>();
        m.title = entry.value("title", m.id);
        m.repo = entry.value("repo", std::string());
        m.configPath = joinPath(joinPath(dir, m.id), "config.json");
        if (!fileExists(m.configPath))
            fail(index, ": model '", m.id, "' has no ", m.configPath);
        out.push_back(std::move(m));
    }
    return out;
}

std::optional<CatalogModel> findCatalogModel(const std::string& id)
{
    for (CatalogModel& m : modelCatalog())
        if (lower(m.id) == lower(id))
            return std::move(m);
    return std::nullopt;
}

std::string resolveModelPath(const std::string& pathOrId)
{
    if (fileExists(pathOrId))
        return pathOrId;
    if (auto m = findCatalogModel(pathOrId))
        return m->configPath;
    std::string ids;
    for (const CatalogModel& m : modelCatalog())
        ids += (ids.empty() ? "" : ", ") + m.id;
    fail(pathOrId, ": not found (expected a model folder, a config.json or a catalog id: ", ids,
         ")");
}

}  // namespace tb
