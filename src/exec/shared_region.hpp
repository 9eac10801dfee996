// File: src/exec/shared_region.hpp
// The memory a forked child reports through: one MAP_SHARED anonymous mapping, created before
// fork, holding per call a small header (progress, status, message) followed by the raw bytes
// of that call's input and output buffers as the kernel left them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kcv::exec {

enum class SlotState : int32_t { kNotStarted = 0, kRunning = 1, kReturned = 2 };

struct SlotHeader {
  int32_t state;   // SlotState, stored last with release order by the child
  int32_t status;  // CallStatus
  char message[4096];
};

class SharedRegion {
 public:
  /// One slot per call; `buffer_sizes[i]` are the raw sizes of call i's buffers, in order.
  explicit SharedRegion(const std::vector<std::vector<std::size_t>>& buffer_sizes);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  SlotHeader& header(std::size_t slot);
  std::span<std::byte> buffer(std::size_t slot, std::size_t index);
  /// Reads the state the child published (acquire order).
  SlotState state(std::size_t slot);
  void publish(std::size_t slot, SlotState s);
  void set_message(std::size_t slot, const std::string& text);

 private:
  struct Slot {
    std::size_t header = 0;
    std::vector<std::size_t> offsets, sizes;
  };
  std::vector<Slot> slots_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace kcv::exec
