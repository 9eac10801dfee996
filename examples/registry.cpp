// File: examples/registry.cpp
// The table of bundled kernels exported through the C ABI (kcv_kernels).
#include <kcv/kcv_kernel.h>

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) {
  *count = 0;
  return nullptr;
}
