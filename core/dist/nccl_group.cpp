// The NCCL backend of a data-parallel group: one GPU per local rank (built with the CUDA wheel's
// NCCL headers only).
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <c10/cuda/CUDAFunctions.h>

#include <chrono>

namespace tb {

c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size, int deviceIndex,
                                                  std::chrono::milliseconds timeout)
{
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(deviceIndex));
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

}  // namespace tb
