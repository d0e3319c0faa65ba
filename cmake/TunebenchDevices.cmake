# Reports which device paths the build has: CPU always; CUDA at run time when LibTorch is CUDA-enabled
# and a GPU is present; a CUDA toolkit (nvcc) for kernels/.
include(CheckLanguage)
check_language(CUDA)
set(TB_HAVE_CUDA_TOOLKIT OFF)
if(CMAKE_CUDA_COMPILER)
  set(TB_HAVE_CUDA_TOOLKIT ON)
endif()
set(TB_HAVE_TORCH_CUDA ${TB_TORCH_HAS_CUDA})
message(STATUS "Tunebench device paths: cpu=ON libtorch-cuda=${TB_HAVE_TORCH_CUDA} cuda-toolkit=${TB_HAVE_CUDA_TOOLKIT}"
               " (CUDA is used at run time when a GPU is present; kernels/ has no custom kernels yet, see kernels/README.md)")
