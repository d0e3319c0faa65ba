// tunebench: the command line's front. Commands that need no LibTorch run here; the others replace
// this process with tunebench-engine (cli/cli.h).
#include "cli/cli.h"

#include <iostream>

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (tb::needsEngine(args))
        return tb::execEngine(argv, std::cerr);
    return tb::runFront(args, std::cout, std::cerr);
}
