// What the `data` subcommands share (cli/data_command.cpp, data_pairs.cpp, data_generate.cpp).
#pragma once

#include "cli/args.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace tb {

class DataStore;

// --who, else $USER, else "tunebench": the name the store's operation log records.
std::string dataUser(const Args& args);
// An existing store; a missing one fails naming the path, followed by hint.
std::unique_ptr<DataStore> openExistingStore(const std::string& path, const std::string& hint = "");
// --json: the object on one line; otherwise the text.
void printResult(std::ostream& out, const Args& args, const nlohmann::json& j,
                 const std::string& text);

// `data pairs ACTION [STORE] ...`: the store (--store, else the first positional argument after
// the action) and the positional arguments after it.
struct PairsCall {
    std::string store;
    std::vector<std::string> rest;
};
PairsCall pairsCallOf(const Args& args);

}  // namespace tb
