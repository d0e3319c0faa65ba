# Finds LibTorch and defines the target tb::torch.
# - TORCH_DIR (an official LibTorch distribution or a folder with TorchConfig.cmake) wins: find_package(Torch).
# - Otherwise the pinned torch wheel in the per-user venv that scripts/setup creates. The wheel's own CMake
#   package insists on a matching CUDA toolkit and links the toolkit's CUDA runtime ahead of the wheel's,
#   so Tunebench links the wheel's shared libraries directly; they find their CUDA libraries (shipped as
#   nvidia-* wheels) through their own rpath, and the same binary uses a GPU where one exists.
# - TB_TORCH_CPU_ONLY (the Debian package, scripts/package): links only the CPU libraries (libtorch_cpu,
#   libc10; the kernels, which need libc10_cuda, are off), not libtorch_cuda, and leaves
#   the rpath to CMake so the install rewrites it (CMAKE_INSTALL_RPATH). TB_TORCH_PRIVATE_LIBS lists the
#   files an install must ship next to them (the CUDA runtime and CUPTI that libtorch_cpu itself needs).
file(STRINGS ${CMAKE_SOURCE_DIR}/scripts/versions.env _tb_versions REGEX "^TB_TORCH_VERSION=")
string(REPLACE "TB_TORCH_VERSION=" "" TB_TORCH_VERSION "${_tb_versions}")

if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_tb_cache "$ENV{XDG_CACHE_HOME}/tunebench")
else()
  set(_tb_cache "$ENV{HOME}/.cache/tunebench")
endif()
set(TB_VENV "${_tb_cache}/venv-torch-${TB_TORCH_VERSION}" CACHE PATH "venv holding the torch wheel and the test oracles")
set(TB_PYTHON "${TB_VENV}/bin/python" CACHE FILEPATH "Python of the test oracles")

if(NOT TORCH_DIR AND DEFINED ENV{TORCH_DIR})
  set(TORCH_DIR "$ENV{TORCH_DIR}")
endif()

add_library(tb_torch INTERFACE)
add_library(tb::torch ALIAS tb_torch)

if(TORCH_DIR)
  if(EXISTS "${TORCH_DIR}/share/cmake/Torch")
    set(Torch_DIR "${TORCH_DIR}/share/cmake/Torch")
  else()
    set(Torch_DIR "${TORCH_DIR}")
  endif()
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0")  # skips Caffe2's try_run GPU probe
  endif()
  find_package(Torch REQUIRED)
  target_link_libraries(tb_torch INTERFACE ${TORCH_LIBRARIES})
  separate_arguments(_tb_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(tb_torch INTERFACE ${_tb_torch_flags})
  set(TB_TORCH_HAS_CUDA ${CAFFE2_USE_CUDA})
  message(STATUS "Tunebench: LibTorch ${Torch_VERSION} from TORCH_DIR=${TORCH_DIR}")
  return()
endif()

if(NOT EXISTS "${TB_PYTHON}")
  message(FATAL_ERROR "Tunebench: no LibTorch. Run scripts/setup (torch ${TB_TORCH_VERSION} wheel into ${TB_VENV}) "
                      "or pass -DTORCH_DIR=/path/to/libtorch")
endif()
execute_process(COMMAND "${TB_PYTHON}" -c
  "import torch, os; print(os.path.dirname(torch.__file__)); print(torch.__version__); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _tb_out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _tb_rc)
if(NOT _tb_rc EQUAL 0)
  message(FATAL_ERROR "Tunebench: ${TB_PYTHON} cannot import torch; run scripts/setup")
endif()
string(REPLACE "\n" ";" _tb_out "${_tb_out}")
list(GET _tb_out 0 TB_TORCH_ROOT)
list(GET _tb_out 1 TB_TORCH_FULL_VERSION)
list(GET _tb_out 2 _tb_abi)

option(TB_TORCH_CPU_ONLY "Link only LibTorch's CPU libraries (no libtorch_cuda; for packages)" OFF)
set(_tb_lib "${TB_TORCH_ROOT}/lib")
target_include_directories(tb_torch SYSTEM INTERFACE "${TB_TORCH_ROOT}/include"
                                                     "${TB_TORCH_ROOT}/include/torch/csrc/api/include")
target_compile_definitions(tb_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_tb_abi})
set(_tb_torch_libs "${_tb_lib}/libtorch.so" "${_tb_lib}/libtorch_cpu.so" "${_tb_lib}/libc10.so")
set(TB_TORCH_HAS_CUDA OFF)
if(TB_TORCH_CPU_ONLY)
  if(TB_CUDA_KERNELS)
    message(FATAL_ERROR "Tunebench: TB_TORCH_CPU_ONLY links no CUDA library; configure with -DTB_CUDA_KERNELS=OFF")
  endif()
  set(_tb_torch_libs "${_tb_lib}/libtorch_cpu.so" "${_tb_lib}/libc10.so")
  set(_tb_private "${_tb_lib}/libtorch_cpu.so" "${_tb_lib}/libc10.so")
  if(EXISTS "${_tb_lib}/libgomp.so.1")
    list(APPEND _tb_private "${_tb_lib}/libgomp.so.1")
  endif()
  # A CUDA wheel's libtorch_cpu needs the CUDA runtime and CUPTI (small) even on the CPU.
  file(GLOB _tb_cuda_rt "${TB_TORCH_ROOT}/../nvidia/*/lib/libcudart.so.*" "${TB_TORCH_ROOT}/../nvidia/*/lib/libcupti.so.*")
  list(APPEND _tb_private ${_tb_cuda_rt})
  set(TB_TORCH_PRIVATE_LIBS "${_tb_private}" CACHE INTERNAL "LibTorch files an install ships privately")
  target_link_libraries(tb_torch INTERFACE ${_tb_torch_libs})
  if(EXISTS "${_tb_lib}/libgomp.so.1")
    set(TB_TORCH_OPENMP "${_tb_lib}/libgomp.so.1" CACHE INTERNAL "LibTorch's OpenMP runtime")
  endif()
  foreach(_d IN LISTS _tb_cuda_rt)
    get_filename_component(_d "${_d}" DIRECTORY)
    target_link_options(tb_torch INTERFACE "-Wl,-rpath-link,${_d}")
  endforeach()
  # TB_TORCH_HAS_CUDA keeps saying what the LibTorch build (its headers) is, so the compile lines equal a
  # normal build's and the compiler cache serves them; nothing CUDA is linked (core skips NCCL).
  if(EXISTS "${_tb_lib}/libtorch_cuda.so")
    set(TB_TORCH_HAS_CUDA ON)
  endif()
  message(STATUS "Tunebench: LibTorch ${TB_TORCH_FULL_VERSION} CPU libraries from the wheel in ${TB_VENV}"
                 " (TB_TORCH_CPU_ONLY: libtorch_cuda not linked)")
  return()
endif()
if(EXISTS "${_tb_lib}/libtorch_cuda.so")
  set(TB_TORCH_HAS_CUDA ON)
  list(APPEND _tb_torch_libs "${_tb_lib}/libtorch_cuda.so" "${_tb_lib}/libc10_cuda.so")
endif()
# The wheel's own OpenMP runtime: code of ours that uses at::parallel_for (inline OpenMP in LibTorch's
# headers) is compiled with -fopenmp and calls into this one, never a second runtime.
if(EXISTS "${_tb_lib}/libgomp.so.1")
  set(TB_TORCH_OPENMP "${_tb_lib}/libgomp.so.1" CACHE INTERNAL "LibTorch's OpenMP runtime")
else()
  unset(TB_TORCH_OPENMP CACHE)
endif()
# --no-as-needed: nothing calls into libtorch_cuda directly, but loading it registers the CUDA backend.
target_link_libraries(tb_torch INTERFACE "-Wl,--no-as-needed" ${_tb_torch_libs} "-Wl,--as-needed")
target_link_options(tb_torch INTERFACE "-Wl,-rpath,${_tb_lib}")
# Let the linker resolve libtorch_cuda's own dependencies from the wheel's nvidia-* packages.
file(GLOB _tb_nvidia_libs LIST_DIRECTORIES true "${TB_TORCH_ROOT}/../nvidia/*/lib")
foreach(_d IN LISTS _tb_nvidia_libs)
  target_link_options(tb_torch INTERFACE "-Wl,-rpath-link,${_d}")
endforeach()
message(STATUS "Tunebench: LibTorch ${TB_TORCH_FULL_VERSION} from the wheel in ${TB_VENV} (cuda=${TB_TORCH_HAS_CUDA})")
