// `tunebench estimate`: the memory planner on the command line (itemised table or JSON).
#pragma once

#include "cli/args.h"

#include <ostream>

namespace tb {

// Flags it reads: json, explain, grad-checkpointing (give them to Args as flags). Throws tb::Error
// naming the option or file on bad input; returns 0.
int cmdEstimate(const Args& args, std::ostream& out);

} // namespace tb
