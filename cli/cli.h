// Entry point of the tunebench command line, shared by app/cli and tests.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tb {

// argv without the program name. Returns the process exit status; errors go to err as one line.
int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace tb
