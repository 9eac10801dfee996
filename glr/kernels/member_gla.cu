// File: glr/kernels/member_gla.cu
// The stage kernels of Member::kGla (gate Channel, delta rule false): one instantiation of the
// shared stage templates (pipeline.cuh), in its own translation unit to keep compile units small.
#include "glr/kernels/pipeline.cuh"

namespace kcv::glr::gpu::detail {

template Status forward_stages<GateKind::kChannel, false>(const Params&, cudaStream_t);
template Status backward_stages<GateKind::kChannel, false>(const Params&, cudaStream_t);

}  // namespace kcv::glr::gpu::detail
