// File: include/kcv/replica.hpp
// A faithful replica of KernelBench's one-shot correctness check (research note
// verifier-anchors.md §0): 5 trials with seeds from 42, the reference shape only, standard normal
// inputs, outputs compared with allclose(atol = rtol = 1e-2) against the reference, any NaN fails,
// a shape mismatch fails. The reference here is the fp64 oracle rounded to the output dtype.
// Buffers are plain: zero-filled guards and zero-initialised outputs, as a fresh allocation is.
// It exists to measure what the one-shot check lets through, never to decide a verdict.
#pragma once

#include <span>
#include <string>

#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"

namespace kcv {

struct ReplicaOptions {
  int trials = 5;
  uint64_t first_seed = 42;
  double atol = 1e-2;
  double rtol = 1e-2;
};

struct ReplicaResult {
  bool accepted = false;
  std::string reason;        // why rejected; empty when accepted
  int trials_run = 0;
  double max_abs_diff = 0;
};

/// torch.allclose(reference, got, atol, rtol) as KernelBench calls it (equal_nan false): every
/// element |r - c| <= atol + rtol |c|, equal infinities pass, any NaN fails. `reference` holds one
/// value per element of `got`. Returns why it fails (empty: it passes); `max_abs_diff` grows to
/// the largest finite difference seen.
std::string allclose_failure(std::span<const double> reference, const HostTensor& got, double atol, double rtol,
                             double& max_abs_diff);

Expected<ReplicaResult> allclose_replica(Candidate& candidate, Executor& executor,
                                         const ReplicaOptions& options = {});

}  // namespace kcv
