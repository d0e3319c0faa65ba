// The CUDA devices this process can use, behind a torch-free facade (the studio lists them to
// choose the GPUs of a launched run).
#pragma once

namespace tb {

// Devices LibTorch sees (after CUDA_VISIBLE_DEVICES); 0 in a build or on a machine without CUDA.
int cudaDeviceCount();

}  // namespace tb
