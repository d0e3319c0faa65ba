// Entry points of the tunebench command line, shared by app/cli and tests.
//
// Two executables share them. `tunebench` (the front, app/cli/front_main.cpp) links only tb_base
// and runs the commands that need no LibTorch (help, info, tokenize, estimate, template and the
// data subcommands that run no model); for every other command it replaces itself with
// `tunebench-engine` (app/cli/main.cpp), which runs them all. So `tunebench data ...` starts in
// milliseconds without mapping LibTorch and its CUDA libraries.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tb {

// argv without the program name. Each returns the process exit status; errors go to err as one
// line. runCli runs every command (the engine); runFront only those needsEngine() is false for.
int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);
int runFront(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);
// True when the command needs the engine: it loads a model, trains, generates or exports.
// Never throws: a command line that does not parse is the front's to report.
bool needsEngine(const std::vector<std::string>& argv);

// The engine executable: next to this one (the build tree), else ../lib/tunebench/ (installed).
// Empty when neither exists.
std::string enginePath();
// Replaces this process with the engine, given argv (argv[0] included, null-terminated). Returns
// only when it cannot, after one line on err naming the path and the reason; the status is 1.
int execEngine(char** argv, std::ostream& err);

}  // namespace tb
