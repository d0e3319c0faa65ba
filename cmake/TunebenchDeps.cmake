# Finds the C/C++ libraries of tb_core and defines PkgConfig::SENTENCEPIECE, ::PCRE2, ::UTF8PROC, ::SQLITE3
# and nlohmann_json::nlohmann_json.
# - Normally from the system (Debian packages, pkg-config).
# - With TB_DEPS_ROOT: from Debian packages unpacked into that folder (dpkg -x), for machines where
#   nothing can be installed (the GPU machine: scripts/gpu-bundle packs them, scripts/gpu-check unpacks).
#   The binaries then find the libraries through their rpath.
if(NOT TB_DEPS_ROOT AND DEFINED ENV{TB_DEPS_ROOT})
  set(TB_DEPS_ROOT "$ENV{TB_DEPS_ROOT}")
endif()

if(NOT TB_DEPS_ROOT)
  find_package(nlohmann_json 3 REQUIRED)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
  pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
  return()
endif()

set(_tb_deps_include "${TB_DEPS_ROOT}/usr/include")
set(_tb_deps_lib "${TB_DEPS_ROOT}/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
if(NOT CMAKE_LIBRARY_ARCHITECTURE)
  set(_tb_deps_lib "${TB_DEPS_ROOT}/usr/lib/x86_64-linux-gnu")
endif()
# name of the target, library file stem, a header that must be there
foreach(_tb_dep IN ITEMS "SENTENCEPIECE;sentencepiece;sentencepiece_processor.h"
                         "PCRE2;pcre2-8;pcre2.h"
                         "UTF8PROC;utf8proc;utf8proc.h"
                         "SQLITE3;sqlite3;sqlite3.h")
  list(GET _tb_dep 0 _name)
  list(GET _tb_dep 1 _stem)
  list(GET _tb_dep 2 _header)
  if(NOT EXISTS "${_tb_deps_include}/${_header}" OR NOT EXISTS "${_tb_deps_lib}/lib${_stem}.so")
    message(FATAL_ERROR "Tunebench: TB_DEPS_ROOT=${TB_DEPS_ROOT} lacks ${_tb_deps_include}/${_header} or "
                        "${_tb_deps_lib}/lib${_stem}.so (unpack the -dev and runtime packages there)")
  endif()
  add_library(PkgConfig::${_name} INTERFACE IMPORTED)
  target_include_directories(PkgConfig::${_name} SYSTEM INTERFACE "${_tb_deps_include}")
  target_link_libraries(PkgConfig::${_name} INTERFACE "${_tb_deps_lib}/lib${_stem}.so")
  target_link_options(PkgConfig::${_name} INTERFACE "-Wl,-rpath,${_tb_deps_lib}")
endforeach()
set(nlohmann_json_DIR "${TB_DEPS_ROOT}/usr/share/cmake/nlohmann_json")
find_package(nlohmann_json 3 REQUIRED NO_DEFAULT_PATH PATHS "${TB_DEPS_ROOT}/usr/share/cmake/nlohmann_json")
message(STATUS "Tunebench: libraries from TB_DEPS_ROOT=${TB_DEPS_ROOT}")
