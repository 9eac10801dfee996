// File: glr/dev/cuda_launch.cuh
// The CUDA launch policy of the tensor-core kernels' launch sequences (forward_sequence,
// backward_sequence): <<<>>> on the caller's stream, 128 threads per CTA unless the sequence names
// another count for a kernel, the dynamic
// shared-memory limit raised per kernel, the launch error turned into a Status naming the stage.
// With a StageEvents attached, each launch sits between two CUDA events, so a caller can read
// the device time of every stage (StageTimes). The host emulation's policy is HostLaunch in
// host_runner.cpp.
#pragma once

#include <cstddef>
#include <vector>

#include "glr/dev/chunked_mma_forward.hpp"
#include "glr/launch/cuda_status.hpp"

namespace kcv::glr::dev {

/// The event pair around each launch of one sequence, in launch order.
class StageEvents {
 public:
  StageEvents() = default;
  StageEvents(const StageEvents&) = delete;
  StageEvents& operator=(const StageEvents&) = delete;
  ~StageEvents() {
    for (const Stage& s : stages_) {
      cudaEventDestroy(s.begin);
      cudaEventDestroy(s.end);
    }
  }

  Status begin(const char* name, cudaStream_t stream) {
    Stage s{name, nullptr, nullptr};
    KCV_GLR_CUDA(cudaEventCreate(&s.begin));
    if (const cudaError_t e = cudaEventCreate(&s.end); e != cudaSuccess) {
      cudaEventDestroy(s.begin);
      return gpu::detail::cuda_error(e, name, __FILE__, __LINE__);
    }
    stages_.push_back(s);
    KCV_GLR_CUDA(cudaEventRecord(s.begin, stream));
    return {};
  }
  Status end(cudaStream_t stream) {
    KCV_GLR_CUDA(cudaEventRecord(stages_.back().end, stream));
    return {};
  }
  /// Waits for the last stage and appends every stage's milliseconds to `out`.
  Status collect(StageTimes& out) const {
    for (const Stage& s : stages_) {
      KCV_GLR_CUDA(cudaEventSynchronize(s.end));
      float ms = 0;
      KCV_GLR_CUDA(cudaEventElapsedTime(&ms, s.begin, s.end));
      out.ms.emplace_back(s.name, ms);
    }
    return {};
  }

 private:
  struct Stage {
    const char* name;
    cudaEvent_t begin, end;
  };
  std::vector<Stage> stages_;
};

struct CudaLaunch {
  cudaStream_t stream;
  StageEvents* events = nullptr;  ///< or null: no timing

  template <typename Params>
  Status operator()(const char* stage, void (*kernel)(Params), dim3 grid, std::size_t shared_bytes,
                    const Params& p, int threads = kMmaThreads) const {
    KCV_GLR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes)));
    if (grid.x == 0) return {};
    if (events != nullptr) KCV_GLR_TRY(events->begin(stage, stream));
    kernel<<<grid, threads, shared_bytes, stream>>>(p);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return gpu::detail::cuda_error(e, stage, __FILE__, __LINE__);
    if (events != nullptr) KCV_GLR_TRY(events->end(stream));
    return {};
  }
};

/// Runs `sequence(launch)` with CudaLaunch on `stream`; with `times`, every launch is timed and
/// its milliseconds appended (the call then waits for the stream).
template <typename Sequence>
Status launch_sequence(cudaStream_t stream, StageTimes* times, Sequence&& sequence) {
  if (times == nullptr) return sequence(CudaLaunch{stream});
  StageEvents events;
  KCV_GLR_TRY(sequence(CudaLaunch{stream, &events}));
  return events.collect(*times);
}

}  // namespace kcv::glr::dev
