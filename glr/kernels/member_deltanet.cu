// File: glr/kernels/member_deltanet.cu
// The stage kernels of Member::kDeltaNet (gate None, delta rule true): one instantiation of the
// shared stage templates (pipeline.cuh), in its own translation unit to keep compile units small.
#include "glr/kernels/pipeline.cuh"

namespace kcv::glr::gpu::detail {

template Status forward_stages<GateKind::kNone, true>(const Params&, cudaStream_t);
template Status backward_stages<GateKind::kNone, true>(const Params&, cudaStream_t);

}  // namespace kcv::glr::gpu::detail
