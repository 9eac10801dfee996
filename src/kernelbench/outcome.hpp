// File: src/kernelbench/outcome.hpp
// From the pipeline's results to the store's records, and the kernel statuses of failed loads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {

/// One record per (gate, profile); evidence as JSON (non-finite numbers as strings). A failing
/// probe's token holds its whole shape (the judge shape's constants merged under the probe's), so
/// `kcv replay` needs nothing but the row and the token.
std::vector<audit::VerdictRecord> verdict_records(const PipelineReport& report,
                                                  const Constants& base);

/// The kernel status of a worker that failed to load: from the worker's error class (docs/06
/// §7.1: import_error, compile_error, ...), else from how kcv's executor ended it (no reply in
/// time, the process died); a worker of either side that the out-of-memory killer took
/// (src/worker/oom_kills.hpp) is out_of_memory, one killed by another SIGKILL from outside kcv
/// load_killed (both retried alone by the orchestrator, never the candidate's crash); any other
/// failure of the reference is a reference_error (never the candidate's).
audit::KernelStatus load_failure_status(const Error& error, bool reference);

/// A failure the worker found to need a CUDA device it cannot see (its `cause` field,
/// "cuda_unavailable": raised inside the code that starts CUDA, or a native build without a GPU;
/// docs/06 §7.1): on a machine without a GPU the kernel cannot run here, which is this machine's
/// limit. Of a load (the error reply) or of a call (its result reply).
bool needs_a_gpu(const Error& load_failure);
bool needs_a_gpu(const CallRecord& call);

/// A call or load that failed for want of memory: as the worker found it (its `cause` field,
/// "out_of_memory": MemoryError, torch.OutOfMemoryError, a CUDA error with code
/// cudaErrorMemoryAllocation; docs/06 §7.1), or its worker taken by the out-of-memory killer
/// (CallRecord::killed_out_of_memory, Error::worker_cause). Of the reference, a harness
/// failure, never a refusal of the probe; of either side, the kernel is run again alone.
bool out_of_memory(const CallRecord& call);
bool out_of_memory(const Error& load_failure);

/// "died of signal 9 (SIGKILL...": a worker killed from outside kcv.
bool killed_by_sigkill(std::string_view message);

/// A CUDA or host out-of-memory message: a harness error, retried with the GPU to itself.
bool mentions_out_of_memory(std::string_view message);

/// `text` cut to the store's message length.
std::string clip(std::string text);

std::string_view op_class_name(OpClass c);

/// The row's contract, or the default one (op "kernelbench", deterministic, strict).
Contract declared_contract(const ModuleRow& row);
/// f16 or bf16 when the contract declares that accumulator; nullopt for fp32.
std::optional<DType> declared_precision(const Contract& c);

}  // namespace kcv::kb
