// File: python/src/glr_module.cpp
// The extension module kcv._glr (issue 4 item 4): a thin nanobind layer over two C++ APIs, used by
// the Python front python/kcv/glr/__init__.py.
//   * the fp64 chunked reference (include/kcv/glr/chunked.hpp) and the token-serial oracle
//     (include/kcv/glr/oracle.hpp) on host float64 buffers, the CPU paths of kcv.glr's chunk_* and
//     fused_recurrent_* ops: ref_forward / ref_backward take and return flat 1-D numpy arrays in
//     fla's token-major layout with batch 1 and sequences packed along T (problem.hpp);
//   * the sm_90a launcher API (include/kcv/glr/gpu.hpp), only when the module was built with the
//     kernels (has_cuda()): gpu_forward / gpu_backward take raw device pointers as Python ints
//     (tensor.data_ptr()), the dims, dtype codes, the workspace and the CUDA stream as an int, so
//     nothing here links libtorch; the caller allocates every tensor and the workspace. gpu_decode
//     launches the token-serial decode kernel (fp32 tensors, state in/out). mma_forward /
//     mma_backward launch the tensor-core kernels of glr/dev (dev::mma_forward, dev::mma_backward:
//     K = V = 128, all six members, the bf16 precision grade) on the same
//     kind of arguments: bf16 q, k, v, dO and β, fp32 g, h0 and dht, int64 cu_seqlens; outputs o,
//     dq, dk, dv and dβ bf16, final state, dg and dh0 fp32. The backward's workspace comes in two
//     parts (dev::MmaBackwardWorkspace): the kept part, which a training step's forward fills
//     (keep=True) and the backward reads without its recompute, or which the backward's recompute
//     fills from the inputs alone; and the backward's scratch.
//   * the GLR error model (include/kcv/glr/error_model.hpp), bound in glr_error_model.cpp.
// Errors from the C++ side become ValueError (bad arguments) or RuntimeError (anything else). The
// GIL is released while the reference or a launch runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "glr_common.hpp"
#include "kcv/expected.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/oracle.hpp"
#include "kcv/glr/problem.hpp"
#ifdef KCV_GLR_HAVE_CUDA
#include "glr/dev/chunked_mma_backward.hpp"
#include "glr/dev/chunked_mma_forward.hpp"
#include "kcv/glr/gpu.hpp"
#endif

namespace nb = nanobind;

namespace {

using namespace kcv_python_glr;  // NOLINT(google-build-using-namespace): the binding's helpers

// The two fp64 paths share their arguments: the chunked reference (the training ops' CPU path) and
// the token-serial oracle (the decode ops' CPU path; the recurrence exists once, in C++).
// chunk_size is the chunked reference's C (fla's chunk_size argument); the oracle ignores it.
using ForwardFn = kcv::Expected<kcv::glr::Outputs> (*)(Member, const kcv::glr::Problem&,
                                                       std::int64_t);
using BackwardFn = kcv::Expected<kcv::glr::Gradients> (*)(Member, const kcv::glr::Problem&,
                                                          const kcv::glr::Cotangents&,
                                                          std::int64_t);

kcv::glr::ChunkOptions chunk_options(std::int64_t chunk_size) {
  kcv::glr::ChunkOptions opt;
  opt.chunk_size = chunk_size;
  if (auto st = kcv::glr::validate(opt); !st) raise(st.error());
  return opt;
}

kcv::Expected<kcv::glr::Outputs> chunked_fwd(Member m, const kcv::glr::Problem& p,
                                             std::int64_t chunk_size) {
  return kcv::glr::chunked_forward(m, p, chunk_options(chunk_size));
}

kcv::Expected<kcv::glr::Gradients> chunked_bwd(Member m, const kcv::glr::Problem& p,
                                               const kcv::glr::Cotangents& cot,
                                               std::int64_t chunk_size) {
  return kcv::glr::chunked_backward(m, p, cot, chunk_options(chunk_size));
}

kcv::Expected<kcv::glr::Outputs> oracle_fwd(Member m, const kcv::glr::Problem& p, std::int64_t) {
  return kcv::glr::oracle_forward(m, p);
}

kcv::Expected<kcv::glr::Gradients> oracle_bwd(Member m, const kcv::glr::Problem& p,
                                              const kcv::glr::Cotangents& cot, std::int64_t) {
  return kcv::glr::oracle_backward(m, p, cot);
}

template <ForwardFn Forward>
std::pair<NumpyArray, NumpyArray> host_forward(
    int member_code, std::array<std::int64_t, 5> dims, std::vector<std::int64_t> cu_seqlens,
    std::optional<HostArray> q, std::optional<HostArray> k, std::optional<HostArray> v,
    std::optional<HostArray> g, std::optional<HostArray> beta, std::optional<HostArray> h0,
    double scale, bool v_first, std::int64_t chunk_size) {
  const Member member = member_of(member_code);
  kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  std::optional<kcv::Expected<kcv::glr::Outputs>> out;
  {
    nb::gil_scoped_release release;
    out.emplace(Forward(member, p, chunk_size));
  }
  if (!*out) raise(out->error());
  return {to_numpy(std::move((*out)->o)), to_numpy(std::move((*out)->final_state))};
}

template <BackwardFn Backward>
std::vector<NumpyArray> host_backward(int member_code, std::array<std::int64_t, 5> dims,
                                      std::vector<std::int64_t> cu_seqlens,
                                      std::optional<HostArray> q, std::optional<HostArray> k,
                                      std::optional<HostArray> v, std::optional<HostArray> g,
                                      std::optional<HostArray> beta, std::optional<HostArray> h0,
                                      double scale, bool v_first, std::optional<HostArray> d_o,
                                      std::optional<HostArray> d_final_state,
                                      std::int64_t chunk_size) {
  const Member member = member_of(member_code);
  kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  kcv::glr::Cotangents cot;
  cot.d_o = to_vector(d_o);
  cot.d_final_state = to_vector(d_final_state);
  if (auto st = kcv::glr::validate(p, cot); !st) raise(st.error());
  std::optional<kcv::Expected<kcv::glr::Gradients>> grads;
  {
    nb::gil_scoped_release release;
    grads.emplace(Backward(member, p, cot, chunk_size));
  }
  if (!*grads) raise(grads->error());
  kcv::glr::Gradients& gr = grads->value();
  std::vector<NumpyArray> result;
  result.push_back(to_numpy(std::move(gr.dq)));
  result.push_back(to_numpy(std::move(gr.dk)));
  result.push_back(to_numpy(std::move(gr.dv)));
  result.push_back(to_numpy(std::move(gr.dg)));
  result.push_back(to_numpy(std::move(gr.dbeta)));
  result.push_back(to_numpy(std::move(gr.dh0)));
  return result;
}

#ifdef KCV_GLR_HAVE_CUDA
namespace gpu = kcv::glr::gpu;

/// dims = (B, T, H, HV, K, V, N); cfg = (member, v_first, gate fp32?, beta fp32?, index int32?).
struct Call {
  gpu::Dims dims;
  gpu::Config cfg;
};

Call make_call(int member_code, const std::array<std::int64_t, 7>& d, double scale, bool v_first,
               bool gate_fp32, bool beta_fp32, bool index_int32) {
  Call c;
  c.dims.batch = d[0];
  c.dims.seq_len = d[1];
  c.dims.qk_heads = d[2];
  c.dims.v_heads = d[3];
  c.dims.key_dim = d[4];
  c.dims.value_dim = d[5];
  c.dims.num_seqs = d[6];
  c.cfg.member = member_of(member_code);
  c.cfg.scale = static_cast<float>(scale);
  c.cfg.layout = v_first ? kcv::glr::StateLayout::kVK : kcv::glr::StateLayout::kKV;
  c.cfg.gate_dtype = gate_fp32 ? gpu::DType::kFloat32 : gpu::DType::kBFloat16;
  c.cfg.beta_dtype = beta_fp32 ? gpu::DType::kFloat32 : gpu::DType::kBFloat16;
  c.cfg.cu_seqlens_type = index_int32 ? gpu::IndexType::kInt32 : gpu::IndexType::kInt64;
  return c;
}

template <typename T>
T* ptr(std::uintptr_t p) {
  return reinterpret_cast<T*>(p);  // NOLINT(performance-no-int-to-ptr)
}

/// The launch's inputs; `cu_host`, when given, holds the N + 1 host offsets the launcher's
/// checks read (a shorter list would be read past its end).
gpu::Inputs make_inputs(const std::array<std::uintptr_t, 7>& p,
                        const std::vector<std::int64_t>& cu_host, std::int64_t num_seqs) {
  if (!cu_host.empty() && std::ssize(cu_host) != num_seqs + 1)
    throw std::invalid_argument(
        "cu_seqlens (host offsets): expected N + 1 = " + std::to_string(num_seqs + 1) +
        " entries, got " + std::to_string(cu_host.size()));
  gpu::Inputs in;
  in.q = ptr<const void>(p[0]);
  in.k = ptr<const void>(p[1]);
  in.v = ptr<const void>(p[2]);
  in.g = ptr<const void>(p[3]);
  in.beta = ptr<const void>(p[4]);
  in.h0 = ptr<const float>(p[5]);
  in.cu_seqlens = ptr<const void>(p[6]);
  in.cu_seqlens_host = cu_host.empty() ? nullptr : cu_host.data();
  return in;
}

std::size_t gpu_workspace_bytes(bool backward, int member_code, std::array<std::int64_t, 7> d,
                                double scale, bool v_first, bool gate_fp32, bool beta_fp32,
                                bool index_int32) {
  const Call c = make_call(member_code, d, scale, v_first, gate_fp32, beta_fp32, index_int32);
  auto bytes = backward ? gpu::backward_workspace_bytes(c.dims, c.cfg)
                        : gpu::forward_workspace_bytes(c.dims, c.cfg);
  if (!bytes) raise(bytes.error());
  return *bytes;
}

void gpu_forward(int member_code, std::array<std::int64_t, 7> d, double scale, bool v_first,
                 bool gate_fp32, bool beta_fp32, bool index_int32,
                 std::array<std::uintptr_t, 7> inputs, std::vector<std::int64_t> cu_host,
                 std::uintptr_t o, std::uintptr_t final_state, std::uintptr_t workspace,
                 std::size_t workspace_bytes, std::uintptr_t stream) {
  const Call c = make_call(member_code, d, scale, v_first, gate_fp32, beta_fp32, index_int32);
  const gpu::Inputs in = make_inputs(inputs, cu_host, d[6]);
  if (auto st = gpu::validate(c.dims, c.cfg, in); !st) raise(st.error());
  gpu::ForwardOutputs out;
  out.o = ptr<void>(o);
  out.final_state = ptr<float>(final_state);
  kcv::Status st;
  {
    nb::gil_scoped_release release;
    st = gpu::forward(c.dims, c.cfg, in, out, ptr<void>(workspace), workspace_bytes,
                      ptr<CUstream_st>(stream));
  }
  if (!st) raise(st.error());
}

void gpu_decode(int member_code, std::array<std::int64_t, 7> d, double scale, bool v_first,
                std::array<std::uintptr_t, 6> inputs, std::uintptr_t o, std::uintptr_t state,
                std::uintptr_t stream) {
  const Call c = make_call(member_code, d, scale, v_first, true, true, false);
  gpu::DecodeInputs in;
  in.q = ptr<const float>(inputs[0]);
  in.k = ptr<const float>(inputs[1]);
  in.v = ptr<const float>(inputs[2]);
  in.g = ptr<const float>(inputs[3]);
  in.beta = ptr<const float>(inputs[4]);
  in.cu_seqlens = ptr<const std::int64_t>(inputs[5]);
  if (auto st = gpu::validate_decode(c.dims, c.cfg, in, ptr<float>(o), ptr<float>(state)); !st)
    raise(st.error());
  kcv::Status st;
  {
    nb::gil_scoped_release release;
    st = gpu::decode(c.dims, c.cfg, in, ptr<float>(o), ptr<float>(state), ptr<CUstream_st>(stream));
  }
  if (!st) raise(st.error());
}

void gpu_backward(int member_code, std::array<std::int64_t, 7> d, double scale, bool v_first,
                  bool gate_fp32, bool beta_fp32, bool index_int32,
                  std::array<std::uintptr_t, 7> inputs, std::vector<std::int64_t> cu_host,
                  std::uintptr_t d_o, std::uintptr_t d_final_state,
                  std::array<std::uintptr_t, 6> grads, std::uintptr_t workspace,
                  std::size_t workspace_bytes, std::uintptr_t stream) {
  const Call c = make_call(member_code, d, scale, v_first, gate_fp32, beta_fp32, index_int32);
  const gpu::Inputs in = make_inputs(inputs, cu_host, d[6]);
  if (auto st = gpu::validate(c.dims, c.cfg, in); !st) raise(st.error());
  gpu::Cotangents cot;
  cot.d_o = ptr<const void>(d_o);
  cot.d_final_state = ptr<const float>(d_final_state);
  gpu::Gradients gr;
  gr.dq = ptr<void>(grads[0]);
  gr.dk = ptr<void>(grads[1]);
  gr.dv = ptr<void>(grads[2]);
  gr.dg = ptr<void>(grads[3]);
  gr.dbeta = ptr<void>(grads[4]);
  gr.dh0 = ptr<float>(grads[5]);
  kcv::Status st;
  {
    nb::gil_scoped_release release;
    st = gpu::backward(c.dims, c.cfg, in, cot, gr, ptr<void>(workspace), workspace_bytes,
                       ptr<CUstream_st>(stream));
  }
  if (!st) raise(st.error());
}

// ------------------------------------------------------------------ the tensor-core kernels
namespace dev = kcv::glr::dev;

/// What only the tensor-core kernels ask of a call: K = V = 128. Errors name the field.
void check_mma(const Call& c) {
  if (c.dims.key_dim != dev::kMmaDim)
    throw std::invalid_argument("key_dim: the tensor-core kernels take K = 128, got " +
                                std::to_string(c.dims.key_dim));
  if (c.dims.value_dim != dev::kMmaDim)
    throw std::invalid_argument("value_dim: the tensor-core kernels take V = 128, got " +
                                std::to_string(c.dims.value_dim));
}

/// A tensor the tensor-core kernels read or write in 16-byte pieces: present and 16-byte aligned.
void check_mma_pointer(const char* field, std::uintptr_t p) {
  if (p == 0) throw std::invalid_argument(std::string(field) + ": must not be null");
  if (p % 16 != 0)
    throw std::invalid_argument(std::string(field) +
                                ": must be 16-byte aligned for the tensor-core kernels");
}

/// The call of the tensor-core kernels: check_mma, then gpu_forward's checks (gpu::validate:
/// dims, pointers, the host offsets) with their dtypes (fp32 g, bf16 β, int64 cu_seqlens), then
/// the 16-byte alignment of q, k, v and the workspace.
Call make_mma_call(int member_code, const std::array<std::int64_t, 7>& d, double scale,
                   bool v_first, const std::array<std::uintptr_t, 7>& inputs, const gpu::Inputs& in,
                   std::uintptr_t workspace) {
  const Call c = make_call(member_code, d, scale, v_first, true, false, false);
  check_mma(c);
  if (auto st = gpu::validate(c.dims, c.cfg, in); !st) raise(st.error());
  check_mma_pointer("q", inputs[0]);
  check_mma_pointer("k", inputs[1]);
  check_mma_pointer("v", inputs[2]);
  check_mma_pointer("workspace", workspace);
  return c;
}

int value_tile(const dev::MmaForwardParams& p, int multiprocessors) {
  if (multiprocessors < 1)
    throw std::invalid_argument("multiprocessors: must be positive, got " +
                                std::to_string(multiprocessors));
  return dev::default_value_tile(p, multiprocessors);
}

dev::MmaForwardTensors mma_tensors(const gpu::Inputs& in) {
  dev::MmaForwardTensors t;
  t.q = in.q;
  t.k = in.k;
  t.v = in.v;
  t.g = static_cast<const float*>(in.g);
  t.beta = in.beta;
  t.h0 = in.h0;
  t.cu_seqlens = static_cast<const std::int64_t*>(in.cu_seqlens);
  return t;
}

/// The tensor-core kernels' workspaces: a forward alone; what a training step's forward keeps for
/// its backward; the backward's scratch beside the kept part.
enum class MmaWorkspace { kForward, kKept, kScratch };

std::size_t mma_workspace_bytes(MmaWorkspace part, int member_code, std::array<std::int64_t, 7> d) {
  const Call c = make_call(member_code, d, 1.0, false, true, false, false);
  check_mma(c);
  kcv::Expected<std::size_t> bytes = 0;
  switch (part) {
    case MmaWorkspace::kForward:
      bytes = dev::mma_forward_workspace_bytes(c.cfg.member, c.dims);
      break;
    case MmaWorkspace::kKept:
      bytes = dev::mma_kept_workspace_bytes(c.cfg.member, c.dims);
      break;
    case MmaWorkspace::kScratch:
      bytes = dev::mma_backward_scratch_bytes(c.cfg.member, c.dims);
      break;
  }
  if (!bytes) raise(bytes.error());
  return *bytes;
}

void mma_forward(int member_code, std::array<std::int64_t, 7> d, double scale, bool v_first,
                 std::array<std::uintptr_t, 7> inputs, std::vector<std::int64_t> cu_host,
                 std::uintptr_t o, std::uintptr_t final_state, std::uintptr_t workspace,
                 std::size_t workspace_bytes, bool keep, int multiprocessors,
                 std::uintptr_t stream) {
  const gpu::Inputs in = make_inputs(inputs, cu_host, d[6]);
  const Call c = make_mma_call(member_code, d, scale, v_first, inputs, in, workspace);
  check_mma_pointer("o", o);
  dev::MmaForwardTensors t = mma_tensors(in);
  t.o = ptr<void>(o);
  t.final_state = ptr<float>(final_state);
  auto p = keep ? dev::mma_kept_forward_params(c.cfg.member, c.dims, c.cfg.scale, c.cfg.layout, t,
                                               ptr<void>(workspace), workspace_bytes)
                : dev::mma_forward_params(c.cfg.member, c.dims, c.cfg.scale, c.cfg.layout, t,
                                          ptr<void>(workspace), workspace_bytes);
  if (!p) raise(p.error());
  const int tile = value_tile(*p, multiprocessors);
  kcv::Status st;
  {
    nb::gil_scoped_release release;
    st = dev::mma_forward(c.cfg.member, *p, tile, ptr<CUstream_st>(stream));
  }
  if (!st) raise(st.error());
}

void mma_backward(int member_code, std::array<std::int64_t, 7> d, double scale, bool v_first,
                  std::array<std::uintptr_t, 7> inputs, std::vector<std::int64_t> cu_host,
                  std::uintptr_t d_o, std::uintptr_t d_final_state,
                  std::array<std::uintptr_t, 6> grads, std::uintptr_t kept, std::size_t kept_bytes,
                  std::uintptr_t scratch, std::size_t scratch_bytes, bool recompute,
                  int multiprocessors, std::uintptr_t stream) {
  const gpu::Inputs in = make_inputs(inputs, cu_host, d[6]);
  const Call c = make_mma_call(member_code, d, scale, v_first, inputs, in, kept);
  check_mma_pointer("d_o", d_o);
  check_mma_pointer("dq", grads[0]);
  check_mma_pointer("dk", grads[1]);
  check_mma_pointer("dv", grads[2]);
  check_mma_pointer("scratch", scratch);
  dev::MmaBackwardTensors t;
  t.fwd = mma_tensors(in);
  t.d_o = ptr<const void>(d_o);
  t.dht = ptr<const float>(d_final_state);
  t.dq = ptr<void>(grads[0]);
  t.dk = ptr<void>(grads[1]);
  t.dv = ptr<void>(grads[2]);
  t.dg = ptr<float>(grads[3]);
  t.dbeta = ptr<void>(grads[4]);
  t.dh0 = ptr<float>(grads[5]);
  const dev::MmaBackwardWorkspace ws{ptr<void>(kept), kept_bytes, ptr<void>(scratch), scratch_bytes,
                                     recompute};
  auto p = dev::mma_backward_params(c.cfg.member, c.dims, c.cfg.scale, c.cfg.layout, t, ws);
  if (!p) raise(p.error());
  const int tile = value_tile(p->fwd, multiprocessors);
  kcv::Status st;
  {
    nb::gil_scoped_release release;
    st = dev::mma_backward(c.cfg.member, *p, tile, ptr<CUstream_st>(stream));
  }
  if (!st) raise(st.error());
}
#endif

}  // namespace

NB_MODULE(_glr, m) {
  m.doc() = "kcv GLR native layer: fp64 chunked reference and (if built) the sm_90a kernels";
#ifdef KCV_GLR_HAVE_CUDA
  m.def("has_cuda", [] { return true; });
  m.attr("CHUNK_SIZE") = gpu::kChunkSize;
  m.attr("MAX_HEAD_DIM") = gpu::kMaxHeadDim;
  m.def("gpu_workspace_bytes", &gpu_workspace_bytes, nb::arg("backward"), nb::arg("member"),
        nb::arg("dims"), nb::arg("scale"), nb::arg("v_first"), nb::arg("gate_fp32"),
        nb::arg("beta_fp32"), nb::arg("index_int32"));
  m.def("gpu_forward", &gpu_forward, nb::arg("member"), nb::arg("dims"), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("gate_fp32"), nb::arg("beta_fp32"), nb::arg("index_int32"),
        nb::arg("inputs"), nb::arg("cu_seqlens_host"), nb::arg("o"), nb::arg("final_state"),
        nb::arg("workspace"), nb::arg("workspace_bytes"), nb::arg("stream"),
        "Launch the forward; pointers are ints (0 = absent), dims = (B, T, H, HV, K, V, N), "
        "inputs = (q, k, v, g, beta, h0, cu_seqlens).");
  m.def("gpu_backward", &gpu_backward, nb::arg("member"), nb::arg("dims"), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("gate_fp32"), nb::arg("beta_fp32"), nb::arg("index_int32"),
        nb::arg("inputs"), nb::arg("cu_seqlens_host"), nb::arg("d_o"), nb::arg("d_final_state"),
        nb::arg("grads"), nb::arg("workspace"), nb::arg("workspace_bytes"), nb::arg("stream"),
        "Launch the backward; grads = (dq, dk, dv, dg, dbeta, dh0) pointers.");
  m.attr("MAX_DECODE_HEAD_DIM") = gpu::kMaxDecodeHeadDim;
  m.def("gpu_decode", &gpu_decode, nb::arg("member"), nb::arg("dims"), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("inputs"), nb::arg("o"), nb::arg("state"), nb::arg("stream"),
        "Launch the token-serial decode kernel; every tensor fp32, inputs = (q, k, v, g, beta, "
        "cu_seqlens int64); state is in/out.");
  nb::enum_<MmaWorkspace>(m, "MmaWorkspace")
      .value("FORWARD", MmaWorkspace::kForward, "a forward alone")
      .value("KEPT", MmaWorkspace::kKept,
             "what a training step's forward keeps for its backward (the forward's pieces, the "
             "chunk states, T and Delta under the delta rule)")
      .value("SCRATCH", MmaWorkspace::kScratch, "the backward's own, beside the kept part");
  m.def("mma_workspace_bytes", &mma_workspace_bytes, nb::arg("part"), nb::arg("member"),
        nb::arg("dims"), "Bytes of one workspace part of the tensor-core kernels.");
  m.def("mma_forward", &mma_forward, nb::arg("member"), nb::arg("dims"), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("inputs"), nb::arg("cu_seqlens_host"), nb::arg("o"),
        nb::arg("final_state"), nb::arg("workspace"), nb::arg("workspace_bytes"), nb::arg("keep"),
        nb::arg("multiprocessors"), nb::arg("stream"),
        "Launch the tensor-core forward (K = V = 128; every member); inputs = "
        "(q, k, v bf16, g fp32, beta bf16, h0 fp32, cu_seqlens int64) as ints (0 = absent). "
        "keep: the workspace is a KEPT one and the forward leaves in it what the backward reads.");
  m.def("mma_backward", &mma_backward, nb::arg("member"), nb::arg("dims"), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("inputs"), nb::arg("cu_seqlens_host"), nb::arg("d_o"),
        nb::arg("d_final_state"), nb::arg("grads"), nb::arg("kept"), nb::arg("kept_bytes"),
        nb::arg("scratch"), nb::arg("scratch_bytes"), nb::arg("recompute"),
        nb::arg("multiprocessors"), nb::arg("stream"),
        "Launch the tensor-core backward; grads = (dq, dk, dv bf16, dg fp32, dbeta bf16, dh0 "
        "fp32). recompute: it recomputes the forward's pieces into `kept` first; else `kept` is "
        "what a keep=True forward on the same inputs left.");
#else
  m.def("has_cuda", [] { return false; });
  m.attr("CHUNK_SIZE") = 64;
  m.attr("MAX_HEAD_DIM") = 128;
  m.attr("MAX_DECODE_HEAD_DIM") = 256;
#endif
  bind_error_model(m);
  m.def("ref_forward", &host_forward<&chunked_fwd>, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("chunk_size") = 64,
        "fp64 chunked forward; dims = (tokens, H, HV, K, V); returns (o, final_state).");
  m.def("ref_backward", &host_backward<&chunked_bwd>, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("d_o").none(), nb::arg("d_final_state").none(),
        nb::arg("chunk_size") = 64,
        "fp64 chunked backward; returns [dq, dk, dv, dg, dbeta, dh0] (empty when absent).");
  m.def("oracle_forward", &host_forward<&oracle_fwd>, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("chunk_size") = 0,
        "fp64 token-serial oracle forward (the decode path); arguments as ref_forward.");
  m.def("oracle_backward", &host_backward<&oracle_bwd>, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("d_o").none(), nb::arg("d_final_state").none(),
        nb::arg("chunk_size") = 0,
        "fp64 reverse-time adjoint of the oracle; returns as ref_backward.");
}
