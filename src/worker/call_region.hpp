// File: src/worker/call_region.hpp
// The shared memory of one call: a fresh file (0600, O_EXCL) in the shm directory, laid out as
// a safetensors file whose tensors are the raw guarded buffers as U8 blobs ("input.K",
// "output.K"; "pad.K" blobs fill alignment gaps so strict safetensors readers accept it). Each
// raw buffer starts at a 64-byte boundary of the file plus the call's address shift. The
// orchestrator maps it; the worker maps it by path; the file is unlinked when this object goes,
// so every call gets new pages and new addresses in the worker. A trusted worker's calls, one
// after another, may reuse one file instead (reuse()): its pages are allocated and mapped once.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "kcv/expected.hpp"

namespace kcv::worker {

struct RegionBuffer {
  std::string name;
  std::size_t size = 0;
};

class CallRegion {
 public:
  static Expected<CallRegion> create(const std::string& dir, const std::vector<RegionBuffer>& bufs,
                                     int64_t address_shift);
  CallRegion(CallRegion&& other) noexcept;
  CallRegion& operator=(CallRegion&&) = delete;
  CallRegion(const CallRegion&) = delete;
  ~CallRegion();

  /// Lays out another call's buffers in this file, from its start: true when they fit in the
  /// file as created, else false and nothing changed. The bytes past the new header are the
  /// last call's until written.
  bool reuse(const std::vector<RegionBuffer>& bufs, int64_t address_shift);

  const std::string& path() const { return path_; }
  /// Bytes of the file the current call's layout uses (what the worker maps).
  std::size_t size() const { return size_; }
  /// Absolute byte range of buffer k in the file.
  std::size_t begin(std::size_t k) const { return begins_[k]; }
  std::span<std::byte> buffer(std::size_t k);
  /// Ends the call's memory for everyone: kcv's own mapping is dropped and the file truncated to
  /// nothing, so a worker still writing through a mapping of it (a thread that outlived its
  /// call) dies of SIGBUS, and kcv records the crash. @post buffer() must not be called again.
  void revoke();

 private:
  CallRegion() = default;
  std::string path_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // the file's and kcv's mapping's size
  std::vector<std::size_t> begins_, sizes_;
};

}  // namespace kcv::worker
