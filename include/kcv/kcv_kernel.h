/* File: include/kcv/kcv_kernel.h
 *
 * The C ABI a user's compiled kernel exposes so that `kcv verify --candidate ./libmine.so` can
 * call it. Plain C so that any language and compiler can implement it; kcv never links against
 * the candidate, it dlopen()s it and looks up one symbol, kcv_kernels.
 *
 *   #include <kcv/kcv_kernel.h>
 *   static int my_softmax(const kcv_tensor* in, int n_in, kcv_tensor* out, int n_out,
 *                         const kcv_call* call) { ... return 0; }
 *   static const kcv_kernel kKernels[] = {
 *     {"my_softmax", "softmax", "{\"inputs\":[\"f32\"],\"outputs\":[\"f32\"]}", my_softmax, 0},
 *   };
 *   KCV_EXPORT const kcv_kernel* kcv_kernels(int* count) { *count = 1; return kKernels; }
 *
 * Tensors are strided views over host memory: element (i0, i1, ...) lives at
 * data + sizeof(dtype) * sum_k(i_k * strides[k]). Strides are in elements and may be zero
 * (broadcast) or larger than the row length (padded rows). A kernel must read inputs by stride,
 * write every output element, write nothing else, and not modify its inputs.
 */
#ifndef KCV_KERNEL_H_
#define KCV_KERNEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KCV_KERNEL_ABI_VERSION 1

#if defined(_WIN32)
#define KCV_EXPORT __declspec(dllexport)
#else
#define KCV_EXPORT __attribute__((visibility("default")))
#endif

/* Element types; the values are part of the ABI. */
typedef enum kcv_dtype {
  KCV_F64 = 0,
  KCV_F32 = 1,
  KCV_F16 = 2,  /* IEEE binary16, stored as uint16_t bits */
  KCV_BF16 = 3, /* bfloat16, stored as uint16_t bits */
  KCV_I32 = 4,
  KCV_I64 = 5,
  KCV_BOOL = 6, /* one byte, 0 or 1 */
} kcv_dtype;

typedef struct kcv_tensor {
  void* data;             /* address of element (0, ..., 0); storage offset already applied */
  int32_t dtype;          /* a kcv_dtype */
  int32_t ndim;
  const int64_t* shape;   /* ndim entries */
  const int64_t* strides; /* ndim entries, in elements */
} kcv_tensor;

/* How kcv asks a kernel to run. A kernel may ignore the launch hints; kcv uses them to check
 * that results do not depend on the launch configuration (gate ORD-03). */
typedef struct kcv_call {
  int32_t abi_version;        /* KCV_KERNEL_ABI_VERSION */
  int32_t block;              /* requested block/tile size, 0 = the kernel's own default */
  int32_t threads;            /* requested number of CPU threads, 0 or 1 = single-threaded */
  int32_t n_params;
  const char* const* param_names; /* op parameters, e.g. "min"/"max" for clamp, "eps" for norms */
  const double* param_values;
  char* error;                /* a kernel may write a message here on failure (NUL-terminated) */
  int32_t error_capacity;     /* bytes available at error */
} kcv_call;

/* Returns 0 on success; any other value is a kernel-reported failure (message in call->error). */
typedef int (*kcv_run_fn)(const kcv_tensor* inputs, int32_t n_inputs, kcv_tensor* outputs,
                          int32_t n_outputs, const kcv_call* call);

typedef struct kcv_kernel {
  const char* name;          /* unique within the library */
  const char* op;            /* the operator implemented, as listed by `kcv ops` */
  const char* contract_json; /* the contract (docs/01_contracts_and_profiles.md); may be NULL */
  kcv_run_fn run;
  const char* device_code;   /* optional: path (relative to the library) of a PTX file, a cubin,
                                or a `ptxas -v` log describing the kernel's device code, for
                                gate RES-02; NULL when there is none */
} kcv_kernel;

/* The one symbol kcv looks up. Returns an array of *count kernels that lives as long as the
 * library is loaded. */
typedef const kcv_kernel* (*kcv_kernels_fn)(int32_t* count);
#define KCV_KERNELS_SYMBOL "kcv_kernels"

#ifdef __cplusplus
}
#endif

#endif /* KCV_KERNEL_H_ */
