// File: glr/check/decode_device.cpp
// See decode_device.hpp.
#include "check/decode_device.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "check/device_buffer.hpp"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::check {
namespace {

std::vector<float> floats_of(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

Expected<DecodeResult> run_decode_device(const DecodeCall& call) {
  const std::size_t off = call.device_offset;
  DeviceBuffer q, k, v, g, beta, cu, state, o;
  for (auto [buffer, host] :
       {std::pair{&q, &call.q}, std::pair{&k, &call.k}, std::pair{&v, &call.v},
        std::pair{&g, &call.g}, std::pair{&beta, &call.beta}, std::pair{&state, &call.state}})
    if (Status st = buffer->upload(*host, off); !st) return st.error();
  if (Status st = cu.upload(call.cu, off); !st) return st.error();
  if (Status st = o.allocate(static_cast<std::size_t>(call.o_size) * sizeof(float), off); !st)
    return st.error();
  cudaStream_t stream = nullptr;
  if (Status st = o.poison(stream); !st) return st.error();
  gpu::DecodeInputs in;
  in.q = static_cast<const float*>(q.get());
  in.k = static_cast<const float*>(k.get());
  in.v = static_cast<const float*>(v.get());
  in.g = static_cast<const float*>(g.get());
  in.beta = static_cast<const float*>(beta.get());
  in.cu_seqlens = static_cast<const std::int64_t*>(cu.get());
  if (Status st = gpu::decode(call.dims, call.cfg, in, static_cast<float*>(o.get()),
                              static_cast<float*>(state.get()), stream);
      !st)
    return st.error();
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    return gpu::detail::cuda_error(e, "cudaDeviceSynchronize after decode", __FILE__, __LINE__);
  std::vector<std::uint8_t> o_bytes, state_bytes;
  if (Status st = o.download(o_bytes); !st) return st.error();
  if (Status st = state.download(state_bytes); !st) return st.error();
  return DecodeResult{floats_of(o_bytes), floats_of(state_bytes)};
}

}  // namespace kcv::glr::check
