// Where Tunebench finds its bundled data (the stories260k model and example datasets), and where
// it keeps the user's own (runs, stores).
#pragma once

#include <string>

namespace tb {

// The data folder: $TUNEBENCH_DATA_DIR, else <prefix>/share/tunebench/datasets when installed
// (the executable in <prefix>/bin or <prefix>/lib/tunebench), else the source tree's datasets/.
std::string dataDir();
// dataDir()/models/stories260k
std::string bundledModelDir();
// The user's own data folder: $XDG_DATA_HOME/tunebench, else $HOME/.local/share/tunebench (the
// XDG base directory rule). Runs of the bundled examples and the studio's runs and stores go here.
std::string userDataDir();
// "" when userDataDir() exists (or can be made) and a file can be written in it; otherwise one
// sentence naming the folder and the reason (the studio shows it at start).
std::string userDataDirProblem();
// A path for Tunebench's output: one inside an installed data folder's share/tunebench/ (which
// the user cannot write; e.g. a bundled example's output_dir "../../runs") moves to the same place
// under userDataDir(); any other path, and every path of a source-tree build, is kept.
std::string userOutputPath(const std::string& path);
// A program of Tunebench's layout: `name` beside this executable (the build tree), else in
// ../lib/tunebench/ (installed: <prefix>/bin/tunebench finds <prefix>/lib/tunebench/NAME). Empty
// when neither is executable; `looked`, when given, gets the paths tried ("A and B").
std::string installedProgram(const std::string& name, std::string* looked = nullptr);

}  // namespace tb
