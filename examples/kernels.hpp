// File: examples/kernels.hpp
// How the kernel files reach the registry: each file appends its descriptors to a list, in the
// order they should be listed (positive control first, then the red team gate by gate). Keeping
// descriptors inside their files avoids a central table that must be edited for every kernel,
// and building the list on first use avoids cross-file static initialisation order.
#pragma once

#include <vector>

#include <kcv/kcv_kernel.h>

namespace kcv::examples {

using KernelList = std::vector<kcv_kernel>;

void add_control_elementwise(KernelList& out);
void add_control_reductions(KernelList& out);
void add_control_rowwise(KernelList& out);
void add_control_matmul(KernelList& out);

void add_redteam_cmp(KernelList& out);
void add_redteam_ord(KernelList& out);
void add_redteam_exc(KernelList& out);
void add_redteam_prc(KernelList& out);
void add_redteam_res(KernelList& out);

/// Correct kernels the red team reuses where its defect is not numeric (RES-02).
int run_control_sum_pairwise(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                             const kcv_call* call);
int run_control_matmul(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                       const kcv_call* call);
int run_control_softmax(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                        const kcv_call* call);

}  // namespace kcv::examples
