# The sm_90a GLR kernels (issue 4 item 3): static library kcv_glr_cuda (kernels/, launch/) and the
# candidate libraries of check/. Included from glr/CMakeLists.txt when KCV_CUDA_CHECKS is on; CUDA is
# enabled here, in this directory only, and only when a CUDA compiler is found, so nothing else in
# the build depends on it. In CI (no GPU) these targets are compile checks.
include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})  # nvcc need not be on PATH
  find_program(KCV_GLR_NVCC nvcc HINTS ENV CUDA_HOME /usr/local/cuda PATH_SUFFIXES bin)
  if(KCV_GLR_NVCC)
    set(CMAKE_CUDA_COMPILER ${KCV_GLR_NVCC})
  endif()
endif()
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "kcv glr: no CUDA compiler found; kcv_glr_cuda and glr/check are not built")
  return()
endif()
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90a)  # wgmma/setmaxnreg later need the arch-specific target
endif()
enable_language(CUDA)
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)  # CMake < 3.26 knows nvcc only up to C++17
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
find_package(CUDAToolkit REQUIRED)

# Warnings as errors on host and device code (nvcc does not take -Wall itself).
function(kcv_glr_cuda_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-missing-field-initializers>
    $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings
      -Xcompiler=-Wall,-Wextra,-Werror,-Wno-missing-field-initializers>)
endfunction()

# One translation unit per member (each instantiates the shared stage templates once) keeps
# compile units small for the 2-core CI.
add_library(kcv_glr_cuda STATIC
  kernels/common.cu
  kernels/member_la.cu
  kernels/member_ssd.cu
  kernels/member_gla.cu
  kernels/member_deltanet.cu
  kernels/member_gdn.cu
  kernels/member_kda.cu
  kernels/decode.cu
  launch/api.cpp
  launch/decode.cpp
  launch/decode_params.cpp
  launch/validate.cpp
  launch/workspace.cpp
  launch/errors.cpp
  launch/cuda_status.cpp)
add_library(kcv::glr_cuda ALIAS kcv_glr_cuda)
set_target_properties(kcv_glr_cuda PROPERTIES
  CUDA_STANDARD 20
  CUDA_STANDARD_REQUIRED ON
  CUDA_EXTENSIONS OFF
  CUDA_RUNTIME_LIBRARY Shared
  POSITION_INDEPENDENT_CODE ON)
target_include_directories(kcv_glr_cuda
  PUBLIC $<BUILD_INTERFACE:${KCV_GLR_ROOT}/include>
  PRIVATE ${KCV_GLR_ROOT})
target_link_libraries(kcv_glr_cuda PUBLIC CUDA::cudart)
option(KCV_GLR_RESOURCE_USAGE "Print registers, spills and shared memory of every GLR kernel" OFF)
if(KCV_GLR_RESOURCE_USAGE)
  target_compile_options(kcv_glr_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--resource-usage>)
endif()
kcv_glr_cuda_warnings(kcv_glr_cuda)

# dev/ first: check/ builds candidate libraries of the dev kernels (kcv_glr_mma_*).
add_subdirectory(dev)
add_subdirectory(check)
