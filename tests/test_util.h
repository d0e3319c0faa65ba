// Small helpers shared by the test executables: the tb::Error message of a call, substring checks,
// and files written into a temporary folder.
#pragma once

#include "util/error.h"
#include "util/file_util.h"

#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtGlobal>

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <string>

namespace tbtest {

// The tb::Error message `f` throws, or "" when it returns normally.
inline std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const tb::Error& e) {
        return e.what();
    }
    return "";
}

// prefix followed by n, without `const char* + std::string`, which GCC 12 at -O3 flags with a false
// -Wrestrict.
inline std::string numbered(const char* prefix, long long n)
{
    std::string out(prefix);
    out += std::to_string(n);
    return out;
}

// Keeps a test's own files out of the user's folders: Qt's test-mode paths, and the XDG data,
// config and cache homes (tb::userDataDir()) in a temporary folder that lives as long as the test.
inline void isolateUserFolders()
{
    QStandardPaths::setTestModeEnabled(true);
    static QTemporaryDir home;
    for (const char* name : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"})
        qputenv(name, (home.path() + QLatin1Char('/') + QLatin1String(name)).toUtf8());
}

inline bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// dir/name as a path.
inline std::string tempPath(const QTemporaryDir& dir, const std::string& name)
{
    return dir.filePath(QString::fromStdString(name)).toStdString();
}

// Writes `text` (bytes as given) to dir/name and returns the path.
inline std::string writeText(const QTemporaryDir& dir, const std::string& name,
                             const std::string& text)
{
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// GPT-2's tokenizer.json (tests/data/tokenizers/gpt2) with ChatML's <|im_start|> and <|im_end|>
// as special added tokens 50257 and 50258, without truncation: the text of a tokenizer.json.
inline std::string chatmlGpt2TokenizerJson()
{
    auto tokenizer = nlohmann::ordered_json::parse(
        tb::readFile(TB_SOURCE_DIR "/tests/data/tokenizers/gpt2/tokenizer.json"));
    tokenizer["truncation"] = nullptr;
    int id = 50257;
    for (const char* t : {"<|im_start|>", "<|im_end|>"})
        tokenizer["added_tokens"].push_back({{"id", id++},
                                             {"content", t},
                                             {"single_word", false},
                                             {"lstrip", false},
                                             {"rstrip", false},
                                             {"normalized", false},
                                             {"special", true}});
    return tokenizer.dump();
}

}  // namespace tbtest
