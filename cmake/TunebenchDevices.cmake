# Reports which device paths the build has: CPU always; CUDA at run time when LibTorch is CUDA-enabled
# and a GPU is present; a CUDA toolkit (nvcc) for kernels/, built when TB_CUDA_KERNELS is on.
include(CheckLanguage)
check_language(CUDA)
set(TB_HAVE_CUDA_TOOLKIT OFF)
if(CMAKE_CUDA_COMPILER)
  set(TB_HAVE_CUDA_TOOLKIT ON)
endif()
set(TB_HAVE_TORCH_CUDA ${TB_TORCH_HAS_CUDA})

# kernels/ (tb_kernels, compiled by nvcc) and core's use of them (TB_HAVE_KERNELS). Off by default: the
# CUDA language costs seconds of configure and an nvcc pass on every machine that has a toolkit, GPU or
# not, and without the kernels core runs the same arithmetic through LibTorch operators. The `cuda`
# preset and scripts/gpu-check turn it on.
option(TB_CUDA_KERNELS "Build the CUDA kernels of kernels/ (needs nvcc and a CUDA-enabled LibTorch)" OFF)
set(TB_HAVE_KERNELS OFF)
if(TB_CUDA_KERNELS)
  if(NOT TB_HAVE_CUDA_TOOLKIT)
    message(FATAL_ERROR "Tunebench: TB_CUDA_KERNELS=ON but no CUDA toolkit (nvcc) was found; "
                        "set CMAKE_CUDA_COMPILER or configure with -DTB_CUDA_KERNELS=OFF")
  endif()
  if(NOT TB_HAVE_TORCH_CUDA)
    message(FATAL_ERROR "Tunebench: TB_CUDA_KERNELS=ON but LibTorch has no CUDA (libtorch_cuda); "
                        "the kernels run on LibTorch's CUDA tensors")
  endif()
  # sm_90 for the H100/H200 the GPU checks run on, sm_80 for the A100 and RTX 30/40 generation (each
  # with its PTX, so newer GPUs JIT-compile it).
  set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures of kernels/")
  if(TB_CCACHE AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${TB_CCACHE})
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(TB_HAVE_KERNELS ON)
  set(_tb_kernels "kernels/ built for sm ${CMAKE_CUDA_ARCHITECTURES} with CUDA ${CUDAToolkit_VERSION}")
elseif(TB_HAVE_CUDA_TOOLKIT AND TB_HAVE_TORCH_CUDA)
  set(_tb_kernels "kernels/ not built (-DTB_CUDA_KERNELS=ON or the cuda preset builds them)")
else()
  set(_tb_kernels "kernels/ not built (needs the CUDA toolkit and a CUDA LibTorch)")
endif()
message(STATUS "Tunebench device paths: cpu=ON libtorch-cuda=${TB_HAVE_TORCH_CUDA} cuda-toolkit=${TB_HAVE_CUDA_TOOLKIT}"
               " kernels=${TB_HAVE_KERNELS} (CUDA is used at run time when a GPU is present; ${_tb_kernels};"
               " see kernels/README.md)")
