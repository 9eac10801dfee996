// File: src/exec/shared_region.cpp
// mmap(MAP_SHARED | MAP_ANONYMOUS): the pages stay shared between parent and child after fork,
// and vanish with the last unmap. Every block is 64-byte aligned. A failed mmap is kcv's fault
// (the system is out of memory), not the candidate's, so it throws std::system_error.
#include "exec/shared_region.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace kcv::exec {
namespace {

constexpr std::size_t kAlign = 64;
std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

SharedRegion::SharedRegion(const std::vector<std::vector<std::size_t>>& buffer_sizes) {
  std::size_t at = 0;
  for (const auto& sizes : buffer_sizes) {
    Slot s;
    s.header = at;
    at += align_up(sizeof(SlotHeader));
    for (std::size_t n : sizes) {
      s.offsets.push_back(at);
      s.sizes.push_back(n);
      at += align_up(n);
    }
    slots_.push_back(std::move(s));
  }
  size_ = std::max<std::size_t>(at, kAlign);
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::system_error(errno, std::generic_category(), "mmap of the executor's shared region");
  base_ = static_cast<std::byte*>(p);  // anonymous pages are zero: every slot kNotStarted
}

SharedRegion::~SharedRegion() { munmap(base_, size_); }

SlotHeader& SharedRegion::header(std::size_t slot) {
  return *reinterpret_cast<SlotHeader*>(base_ + slots_[slot].header);
}

std::span<std::byte> SharedRegion::buffer(std::size_t slot, std::size_t index) {
  return {base_ + slots_[slot].offsets[index], slots_[slot].sizes[index]};
}

SlotState SharedRegion::state(std::size_t slot) {
  return static_cast<SlotState>(__atomic_load_n(&header(slot).state, __ATOMIC_ACQUIRE));
}

void SharedRegion::publish(std::size_t slot, SlotState s) {
  __atomic_store_n(&header(slot).state, static_cast<int32_t>(s), __ATOMIC_RELEASE);
}

void SharedRegion::set_message(std::size_t slot, const std::string& text) {
  char* dst = header(slot).message;
  const std::size_t n = std::min(text.size(), sizeof(SlotHeader::message) - 1);
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

}  // namespace kcv::exec
