// File: glr/check/mma_call.hpp
// run_mma_call: the one call sequence of the tensor-core kernels' two Runners, the GPU
// (device_run_mma.cpp) and the host emulation (emulator/emulated_mma.cpp), over the adaptation of
// mma_adapter.hpp. It keeps the poisoning discipline of device_run.cpp: every output and the whole
// workspace are filled with 0xFF (NaN in bf16 and fp32) before the forward, the workspace again
// between the forward and the backward (the backward recomputes the forward in it), so an element
// no kernel wrote, or a workspace value read before its write, surfaces as NaN in the comparison.
// A Memory says where the buffers live and how the kernels run:
//   using Buffer = ...;                      a buffer type, default-constructible
//   Status upload(Buffer&, const std::vector<T>&);    allocate and copy (any T)
//   Status allocate(Buffer&, std::size_t bytes);
//   Status poison(Buffer&);                  fill with 0xFF
//   Status download(const Buffer&, std::vector<std::uint8_t>&);
//   void* get(const Buffer&);                 null for 0 bytes
//   Status forward(Member, const dev::MmaForwardParams&);
//   Status backward(Member, const dev::MmaBackwardParams&);
//   Status synchronize();                    every launch finished, errors reported
#pragma once

#include "check/mma_adapter.hpp"

namespace kcv::glr::check {

template <typename Memory>
[[nodiscard]] Expected<DeviceResults> run_mma_call(const HostInputs& in, Memory& mem) {
  Expected<MmaInputs> x = mma_inputs(in);
  if (!x) return x.error();
  using Buffer = typename Memory::Buffer;
  Buffer q, k, v, g, beta, h0, d_o, dht, cu, ws;
  for (Status st :
       {mem.upload(q, x->q), mem.upload(k, x->k), mem.upload(v, x->v), mem.upload(g, x->g),
        mem.upload(beta, x->beta), mem.upload(h0, x->h0), mem.upload(d_o, x->d_o),
        mem.upload(dht, x->dht), mem.upload(cu, x->cu_seqlens)})
    if (!st) return st.error();
  const MmaOutputBytes out_bytes = mma_output_bytes(*x);
  std::array<Buffer, kMmaOutputs> out;
  MmaBuffers b{mem.get(q),  mem.get(k),   mem.get(v),   mem.get(g),  mem.get(beta),
               mem.get(h0), mem.get(d_o), mem.get(dht), mem.get(cu), {}};
  for (int i = 0; i < kMmaOutputs; ++i) {
    if (Status st = mem.allocate(out[i], out_bytes[i]); !st) return st.error();
    if (Status st = mem.poison(out[i]); !st) return st.error();
    b.out[i] = mem.get(out[i]);
  }
  Expected<std::size_t> ws_bytes = mma_workspace_bytes(*x);
  if (!ws_bytes) return ws_bytes.error();
  if (Status st = mem.allocate(ws, *ws_bytes); !st) return st.error();
  if (Status st = mem.poison(ws); !st) return st.error();

  Expected<dev::MmaForwardParams> fp = mma_forward_block(*x, b, mem.get(ws), *ws_bytes);
  if (!fp) return fp.error();
  if (Status st = mem.forward(x->member, *fp); !st) return st.error();
  if (Status st = mem.poison(ws); !st) return st.error();
  Expected<dev::MmaBackwardParams> bp = mma_backward_block(*x, b, mem.get(ws), *ws_bytes);
  if (!bp) return bp.error();
  if (Status st = mem.backward(x->member, *bp); !st) return st.error();
  if (Status st = mem.synchronize(); !st) return st.error();

  MmaOutputData padded;
  for (int i = 0; i < kMmaOutputs; ++i)
    if (Status st = mem.download(out[i], padded[i]); !st) return st.error();
  return mma_results(in, padded);
}

}  // namespace kcv::glr::check
