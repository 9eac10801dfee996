// File: bench/audit/host_path.cpp
// The orchestrator's host data path on a synthetic KernelBench-like problem: a drawn fp32 input
// of N elements and an fp32 output of M elements (the defaults are the 1024x4096x2048 matmul
// row's sizes: inputs 4M + 8M, output 2M). Each operation the audit runs per probe or per call
// is timed as the library does it now and, where it replaced a per-element loop, as that loop
// (reimplemented here as it was: an out-of-line generic accessor per element), with the ratio of
// each to a plain memcpy of the N-element input's bytes measured in the same run. So the figures
// compare across machines and loads: "x memcpy" is what to watch.
//
//   cmake --build --preset release --target kcv_bench_host
//   build/release/kcv_bench_host [--n ELEMENTS] [--m ELEMENTS] [--reps R] [--shm DIR]
//
// --shm names the directory of the call files (default /dev/shm), e.g. a tmpfs mounted with
// huge pages (`mount -t tmpfs -o huge=within_size,size=32g tmpfs DIR`, docs/08_audit.md).
//
// Each figure is the fastest of R repetitions (default 5), single-threaded except the judge,
// transform_inputs (gates/parallel.hpp's split) and the buffers' and call file's byte passes
// (exec/byte_passes.hpp), as the audit runs them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "exec/buffer_audit.hpp"
#include "gates/compare.hpp"
#include "gen/distributions.hpp"
#include "kcv/generate.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/rng.hpp"
#include "kcv/tensor.hpp"
#include "kernelbench/transforms.hpp"
#include "worker/call_region.hpp"
#include "worker/protocol.hpp"

namespace {

using kcv::DType;
using kcv::HostTensor;

double best_ms(int reps, const std::function<void()>& fn) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

// ---- The per-element paths as they were (an element at a time through generic accessors).

[[gnu::noinline]] uint64_t old_bits_at(const HostTensor& t, int64_t i) {
  const std::size_t size = kcv::dtype_size(t.dtype());
  uint64_t bits = 0;
  std::memcpy(&bits, t.raw().data() + t.raw_storage_begin() + t.storage_index(i) * size, size);
  return bits;
}

[[gnu::noinline]] void old_set_bits_at(HostTensor& t, int64_t i, uint64_t bits) {
  const std::size_t size = kcv::dtype_size(t.dtype());
  std::memcpy(t.raw().data() + t.raw_storage_begin() + t.storage_index(i) * size, &bits, size);
}

[[gnu::noinline]] double old_value_at(const HostTensor& t, int64_t i) {
  const uint64_t bits = old_bits_at(t, i);
  if (t.dtype() == DType::kF32) {
    const auto b32 = static_cast<uint32_t>(bits);
    const uint32_t exponent = (b32 >> 23) & 0xFFu;
    if (exponent != 0 && exponent != 0xFFu) return static_cast<double>(std::bit_cast<float>(b32));
  }
  return kcv::decode(t.dtype(), bits);
}

std::vector<double> old_to_f64(const HostTensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = old_value_at(t, i);
  return v;
}

HostTensor old_make(DType dtype, const kcv::Shape& shape, const std::vector<double>& values) {
  HostTensor t(dtype, shape);
  std::vector<bool> written(static_cast<std::size_t>(t.storage_elems()), false);
  for (int64_t i = 0; i < t.numel() && static_cast<std::size_t>(i) < values.size(); ++i) {
    const auto pos = static_cast<std::size_t>(t.storage_index(i));
    if (!written[pos]) {
      written[pos] = true;
      old_set_bits_at(t, i, kcv::encode(dtype, values[static_cast<std::size_t>(i)]));
    }
  }
  return t;
}

HostTensor old_contiguous(const HostTensor& t) {
  HostTensor out(t.dtype(), t.shape(), {}, 0, t.guard_elems());
  for (int64_t i = 0; i < t.numel(); ++i) old_set_bits_at(out, i, old_bits_at(t, i));
  return out;
}

kcv::kb::EagerScale old_eager_scale(const std::vector<double>& value, const HostTensor& eager) {
  kcv::kb::EagerScale s;
  double worst = 0, sum_sq = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < eager.numel(); ++i) {
    const double v = value[static_cast<std::size_t>(i)];
    const double e = old_value_at(eager, i);
    if (!std::isfinite(v) || !std::isfinite(e)) continue;
    worst = std::max(worst, std::fabs(e - v));
    sum_sq += v * v;
    ++finite;
    if (!(v == 0 && e == 0)) ++s.informative;
  }
  s.e = std::max(worst,
                 0x1p-24 * std::sqrt(sum_sq / static_cast<double>(std::max<int64_t>(finite, 1))));
  return s;
}

struct Row {
  std::string op;
  int64_t elements;
  double now_ms;
  double before_ms;  // < 0: no per-element counterpart
};

}  // namespace

int main(int argc, char** argv) {
  int64_t n = int64_t{12} << 20;
  int64_t m = int64_t{2} << 20;
  int reps = 5;
  std::string shm = "/dev/shm";
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--n")
      n = std::atoll(argv[a + 1]);
    else if (k == "--m")
      m = std::atoll(argv[a + 1]);
    else if (k == "--reps")
      reps = std::atoi(argv[a + 1]);
    else if (k == "--shm")
      shm = argv[a + 1];
  }
  // The draw: N(0, 1) fp32 values, as a reference worker's get_inputs() returns them.
  const kcv::CounterRng rng(1, 2);
  std::vector<double> drawn_values(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < drawn_values.size(); ++i) drawn_values[i] = rng.normal(i, 0);
  const HostTensor drawn = kcv::make_tensor(DType::kF32, {n}, drawn_values);
  std::vector<double> out_f64(static_cast<std::size_t>(m));
  for (std::size_t i = 0; i < out_f64.size(); ++i) out_f64[i] = 64 * rng.normal(i, 1);
  const HostTensor value64 = kcv::make_tensor(DType::kF64, {m}, out_f64);
  std::vector<double> eager_values(out_f64);
  for (std::size_t i = 0; i < eager_values.size(); ++i)
    eager_values[i] *= 1 + 1e-7 * rng.normal(i, 2);
  const HostTensor eager = kcv::make_tensor(DType::kF32, {m}, eager_values);

  std::vector<Row> rows;
  std::vector<std::byte> copy(static_cast<std::size_t>(n) * 4);
  const double anchor = best_ms(reps, [&] { std::memcpy(copy.data(), drawn.data(), copy.size()); });

  volatile double sink = 0;
  rows.push_back({"to_f64 (fp32 input)", n, best_ms(reps, [&] { sink = drawn.to_f64()[7]; }),
                  best_ms(reps, [&] { sink = old_to_f64(drawn)[7]; })});
  rows.push_back(
      {"make_tensor / assign_f64 (fp32)", n,
       best_ms(reps, [&] { sink = kcv::make_tensor(DType::kF32, {n}, drawn_values).value_at(3); }),
       best_ms(reps, [&] { sink = old_make(DType::kF32, {n}, drawn_values).value_at(3); })});
  kcv::Probe drawn_probe;
  drawn_probe.inputs = {kcv::InputSpec{DType::kF32, kcv::Distribution::kDrawn, {}}};
  rows.push_back(
      {"transform_inputs (drawn)", n,
       best_ms(reps,
               [&] { sink = kcv::kb::transform_inputs(drawn_probe, {drawn})[0].value_at(1); }),
       best_ms(reps, [&] { sink = old_make(DType::kF32, {n}, old_to_f64(drawn)).value_at(1); })});
  kcv::Probe scaled_probe = drawn_probe;
  scaled_probe.inputs[0].dist = kcv::Distribution::kLargeScaled;
  rows.push_back(
      {"transform_inputs (x128)", n,
       best_ms(reps,
               [&] { sink = kcv::kb::transform_inputs(scaled_probe, {drawn})[0].value_at(1); }),
       best_ms(reps, [&] {
         std::vector<double> v = old_to_f64(drawn);
         for (double& x : v) x *= 128;
         sink = old_make(DType::kF32, {n}, v).value_at(1);
       })});
  kcv::Probe transposed_probe = drawn_probe;
  const int64_t cols = 1024;
  transposed_probe.inputs[0].layout = kcv::Layout{kcv::LayoutKind::kTransposed, 2, 0, 0};
  const HostTensor drawn2d = kcv::make_tensor(DType::kF32, {n / cols, cols}, drawn_values);
  rows.push_back(
      {"transform_inputs (drawn, transposed)", n,
       best_ms(
           reps,
           [&] { sink = kcv::kb::transform_inputs(transposed_probe, {drawn2d})[0].value_at(1); }),
       -1});
  rows.push_back({"contiguous (dense fp32)", n,
                  best_ms(reps, [&] { sink = drawn.contiguous().value_at(2); }),
                  best_ms(reps, [&] { sink = old_contiguous(drawn).value_at(2); })});
  const HostTensor transposed = kcv::make_with_layout(drawn2d, transposed_probe.inputs[0].layout);
  rows.push_back({"contiguous (transposed fp32)", n,
                  best_ms(reps, [&] { sink = transposed.contiguous().value_at(2); }),
                  best_ms(reps, [&] { sink = old_contiguous(transposed).value_at(2); })});
  rows.push_back({"fp64 output to values", m, best_ms(reps, [&] { sink = value64.to_f64()[5]; }),
                  best_ms(reps, [&] { sink = old_to_f64(value64)[5]; })});
  rows.push_back(
      {"eager_scale", m,
       best_ms(reps, [&] { sink = kcv::kb::eager_scale(DType::kF32, out_f64, eager).e; }),
       best_ms(reps, [&] { sink = old_eager_scale(out_f64, eager).e; })});
  kcv::OracleOutput oracle;
  oracle.dtype = DType::kF32;
  oracle.shape = {m};
  oracle.value = out_f64;
  oracle.tau.assign(out_f64.size(), 1e-3);
  rows.push_back(
      {"judge: compare_output", m,
       best_ms(reps, [&] { sink = kcv::gates::compare_output(oracle, eager, 0).worst_ratio; }),
       -1});
  const HostTensor other = drawn.contiguous();
  rows.push_back(
      {"first_difference (input bytes)", n,
       best_ms(reps,
               [&] {
                 sink = static_cast<double>(kcv::exec::first_difference(drawn.raw(), other.raw()));
               }),
       best_ms(reps, [&] {
         const auto a = drawn.raw(), b = other.raw();
         sink = static_cast<double>(std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin());
       })});
  kcv::CallOptions call;
  call.sentinel_seed = 3;
  call.address_shift = 16;
  const std::vector<kcv::OutputSpec> outputs = {kcv::OutputSpec{DType::kF32, {m}}};
  rows.push_back(
      {"prepare_buffers (one call)", n + m,
       best_ms(reps,
               [&] {
                 sink = static_cast<double>(
                     kcv::exec::prepare_buffers({drawn}, outputs, call, false).inputs.size());
               }),
       -1});
  // A candidate call's file (in --shm): created, its pages reserved and mapped in, and the
  // prepared buffers copied into it, as the worker executor does for every candidate call.
  kcv::exec::CallBuffers prepared = kcv::exec::prepare_buffers({drawn}, outputs, call, false);
  const auto layout = kcv::worker::region_layout(prepared);
  const auto raws = kcv::exec::raw_buffers(prepared);
  rows.push_back({"call file made and filled (one call)", n + m,
                  best_ms(reps,
                          [&] {
                            auto region = kcv::worker::CallRegion::create(shm, layout, 16);
                            if (!region) std::abort();
                            for (std::size_t k = 0; k < raws.size(); ++k)
                              kcv::exec::copy_bytes(region->buffer(k), raws[k]);
                            sink = static_cast<double>(region->size());
                          }),
                  -1});
  // The same file made ahead (the worker executor's SpareRegion): what is left on the call's
  // path is laying it out again and the copy.
  double ahead_ms = 1e300;
  for (int r = 0; r < reps; ++r) {
    auto region = kcv::worker::CallRegion::create(shm, layout, 16);
    if (!region) std::abort();
    ahead_ms = std::min(ahead_ms, best_ms(1, [&] {
                          if (!region->reuse(layout, 16)) std::abort();
                          for (std::size_t k = 0; k < raws.size(); ++k)
                            kcv::exec::copy_bytes(region->buffer(k), raws[k]);
                        }));
  }
  rows.push_back({"call file made ahead, filled (one call)", n + m, ahead_ms, -1});

  // The same results, raw byte for raw byte, as the per-element paths: each operation once more
  // on the same data, including the scalings the EXC gates use (subnormal and tiny results).
  const auto same = [](const HostTensor& a, const HostTensor& b) {
    return a.raw().size() == b.raw().size() &&
           std::memcmp(a.raw().data(), b.raw().data(), a.raw().size()) == 0;
  };
  const auto same_values = [](const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
  };
  std::vector<std::pair<std::string, bool>> checks;
  checks.push_back({"to_f64", same_values(drawn.to_f64(), old_to_f64(drawn))});
  checks.push_back({"make_tensor", same(kcv::make_tensor(DType::kF32, {n}, drawn_values),
                                        old_make(DType::kF32, {n}, drawn_values))});
  checks.push_back(
      {"transform_inputs (drawn)", same(kcv::kb::transform_inputs(drawn_probe, {drawn})[0],
                                        old_make(DType::kF32, {n}, old_to_f64(drawn)))});
  for (kcv::Distribution d :
       {kcv::Distribution::kLargeScaled, kcv::Distribution::kHugeScaled,
        kcv::Distribution::kSubnormalScaled, kcv::Distribution::kTinyScaled}) {
    kcv::Probe p = drawn_probe;
    p.inputs[0].dist = d;
    std::vector<double> v = old_to_f64(drawn);
    const double f = kcv::gen::transform_scale(d, DType::kF32);
    for (double& x : v) x *= f;
    checks.push_back(
        {"transform_inputs (" + std::string(kcv::distribution_name(d)) + ")",
         same(kcv::kb::transform_inputs(p, {drawn})[0], old_make(DType::kF32, {n}, v))});
  }
  checks.push_back(
      {"contiguous (transposed)", same(transposed.contiguous(), old_contiguous(transposed))});
  checks.push_back({"eager_scale", kcv::kb::eager_scale(DType::kF32, out_f64, eager).e ==
                                       old_eager_scale(out_f64, eager).e});
  bool all_same = true;
  for (const auto& [what, ok] : checks) all_same = all_same && ok;

  std::printf("host data path, N = %lld input elements, M = %lld output elements, best of %d\n",
              static_cast<long long>(n), static_cast<long long>(m), reps);
  std::printf("anchor: memcpy of the input's %lld bytes: %.2f ms\n\n",
              static_cast<long long>(n * 4), anchor);
  std::printf("%-40s %10s %10s %9s %10s %9s %8s\n", "operation", "elements", "now ms", "x memcpy",
              "before ms", "x memcpy", "speedup");
  for (const Row& r : rows) {
    if (r.before_ms < 0) {
      std::printf("%-40s %10lld %10.2f %9.2f %10s %9s %8s\n", r.op.c_str(),
                  static_cast<long long>(r.elements), r.now_ms, r.now_ms / anchor, "-", "-", "-");
    } else {
      std::printf("%-40s %10lld %10.2f %9.2f %10.2f %9.2f %7.1fx\n", r.op.c_str(),
                  static_cast<long long>(r.elements), r.now_ms, r.now_ms / anchor, r.before_ms,
                  r.before_ms / anchor, r.before_ms / r.now_ms);
    }
  }
  std::printf("\nbit for bit as the per-element paths:");
  for (const auto& [what, ok] : checks) std::printf(" %s %s;", what.c_str(), ok ? "yes" : "NO");
  std::printf("\n");
  return all_same && sink != 12345.678 ? 0 : 1;
}
