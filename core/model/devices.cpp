// cudaDeviceCount through LibTorch.
#include "model/devices.h"

#include <torch/cuda.h>

namespace tb {

int cudaDeviceCount()
{
    return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

}  // namespace tb
