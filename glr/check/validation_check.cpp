// File: glr/check/validation_check.cpp
// The bad-argument cases of validation_check.hpp.
#include "check/validation_check.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "kcv/glr/gpu.hpp"

namespace kcv::glr::check {
namespace {

struct Call {
  gpu::Dims dims;
  gpu::Config cfg;
  gpu::Inputs in;
  std::vector<std::int64_t> cu_host;
};

// A valid GDN call on fake, never dereferenced, aligned device pointers.
Call valid_call() {
  alignas(256) static std::uint8_t fake[1024];
  Call c;
  c.dims = {1, 128, 2, 4, 64, 64, 0};
  c.cfg.member = Member::kGatedDeltaNet;
  c.cfg.scale = 0.125f;
  c.in.q = fake;
  c.in.k = fake;
  c.in.v = fake;
  c.in.g = fake;
  c.in.beta = fake;
  return c;
}

CheckResult expect_error(const std::string& label, Call c, const std::string& needle) {
  if (!c.cu_host.empty()) c.in.cu_seqlens_host = c.cu_host.data();
  const Status st = gpu::validate(c.dims, c.cfg, c.in);
  CheckResult r{"validation/" + label, false, ""};
  if (st.ok()) {
    r.detail = "accepted, expected an error containing '" + needle + "'";
    return r;
  }
  r.pass = st.error().message.find(needle) != std::string::npos;
  r.detail = st.error().to_string();
  return r;
}

}  // namespace

std::vector<CheckResult> argument_validation() {
  std::vector<CheckResult> out;
  Call c = valid_call();
  const Status valid = gpu::validate(c.dims, c.cfg, c.in);
  out.push_back(
      {"validation/valid-call", valid.ok(), valid.ok() ? "accepted" : valid.error().to_string()});
  c.dims.key_dim = 256;
  out.push_back(expect_error("head-dim-256", c, "key_dim: unsupported head dim 256"));
  c = valid_call();
  c.dims.value_dim = 0;
  out.push_back(expect_error("value-dim-0", c, "value_dim: unsupported head dim 0"));
  c = valid_call();
  c.dims.v_heads = 3;
  out.push_back(expect_error("gva-ratio", c, "multiple of qk_heads"));
  c = valid_call();
  c.dims.batch = 2;
  c.dims.num_seqs = 2;
  c.in.cu_seqlens = c.in.q;
  out.push_back(expect_error("batch-with-cu_seqlens", c, "batch must be 1 when cu_seqlens"));
  c = valid_call();
  c.dims.num_seqs = 3;
  c.in.cu_seqlens = c.in.q;
  c.cu_host = {0, 50, 40, 128};
  out.push_back(expect_error("cu_seqlens-not-increasing", c, "strictly increasing"));
  c.cu_host = {0, 50, 60, 100};
  out.push_back(expect_error("cu_seqlens-wrong-end", c, "must end at seq_len=128"));
  c = valid_call();
  c.cfg.member = Member::kLinearAttention;
  c.in.beta = nullptr;
  out.push_back(expect_error("gate-for-la", c, "g must be null for member 'la'"));
  c = valid_call();
  c.in.beta = nullptr;
  out.push_back(expect_error("missing-beta", c, "beta is required for member 'gdn'"));
  c = valid_call();
  c.cfg.scale = std::numeric_limits<float>::quiet_NaN();
  out.push_back(expect_error("nan-scale", c, "scale must be finite"));
  {
    const Call w = valid_call();
    CheckResult r{"validation/workspace-too-small", false, ""};
    alignas(256) static std::uint8_t fake_out[256];
    const Status st = gpu::forward(w.dims, w.cfg, w.in, gpu::ForwardOutputs{fake_out, nullptr},
                                   fake_out, 16, nullptr);
    r.pass = !st.ok() && st.error().message.find("workspace too small") != std::string::npos;
    r.detail = st.ok() ? "accepted" : st.error().to_string();
    out.push_back(r);
  }
  return out;
}

}  // namespace kcv::glr::check
