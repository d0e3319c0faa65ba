// `tunebench data ...`: the dataset store on the command line (import, chunk, curate, review, snapshot).
#pragma once

#include "cli/args.h"

#include <ostream>

namespace tb {

// The flags its subcommands read (merge them into Args' flag set).
const std::set<std::string>& dataCommandFlags();

// argv[1] is the subcommand. Throws tb::Error naming the option, file or record on bad input.
int cmdData(const Args& args, std::ostream& out, std::ostream& err);

extern const char* const kDataUsage;

} // namespace tb
