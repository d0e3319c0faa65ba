// tunebench-engine: the whole headless command line over tb_core; the tunebench front
// (front_main.cpp) hands it the commands that need LibTorch.
#include "cli/cli.h"
#include "model/devices.h"
#include "util/heap.h"

#include <iostream>

int main(int argc, char** argv)
{
    tb::loadCudaBackend();        // before anything asks LibTorch about CUDA
    tb::keepLargeBlocksInHeap();  // training's large transient buffers (util/heap.h)
    std::vector<std::string> args(argv + 1, argv + argc);
    return tb::runCli(args, std::cout, std::cerr);
}
