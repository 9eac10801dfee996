// File: src/worker/call_region.cpp
// posix_fallocate reserves the pages before mmap, so a full tmpfs is a clear error here and
// never a SIGBUS in kcv when the buffers are copied in. The safetensors header is padded with
// spaces (the format allows it) so that the data section starts 64-byte aligned.
#include "worker/call_region.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

namespace kcv::worker {
namespace {

constexpr std::size_t kAlign = 64;
std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

nlohmann::json blob(std::size_t begin, std::size_t end) {
  return {{"dtype", "U8"}, {"shape", {end - begin}}, {"data_offsets", {begin, end}}};
}

std::string unique_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  return fmt::format("kcv-{}-{}-{:016x}", getpid(), counter.fetch_add(1), salt ^ counter.load());
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

// Maps the region's pages in now, since every buffer is copied in right after and one pass
// costs less than a fault per 4 KiB page of a gigabyte region. In 64 MiB steps: a populating
// mmap holds the address-space lock for the whole region, stalling every other slot's mmap and
// munmap in this process meanwhile. Best effort: where the kernel cannot, pages fault in as
// they are written.
void populate(void* base, std::size_t size) {
  constexpr std::size_t kStep = std::size_t{64} << 20;
  auto* at = static_cast<std::byte*>(base);
  for (std::size_t done = 0; done < size; done += kStep) {
    if (madvise(at + done, std::min(kStep, size - done), MADV_POPULATE_WRITE) != 0) return;
  }
}

// Where one call's buffers sit in a call file: the header (its 8-byte length, then the
// safetensors JSON padded to a 64-byte boundary), each buffer's absolute begin, and the bytes
// used in all.
struct Layout {
  std::string header;
  std::vector<std::size_t> begins, sizes;
  std::size_t size = 0;
};

Layout plan(const std::vector<RegionBuffer>& bufs, int64_t address_shift) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "kcv-call"}, {"protocol", "1"}};
  std::vector<std::size_t> rel;
  std::size_t cursor = 0;
  int pads = 0;
  for (const RegionBuffer& b : bufs) {
    const std::size_t begin = align_up(cursor) + static_cast<std::size_t>(address_shift);
    if (begin > cursor) header[fmt::format("pad.{}", pads++)] = blob(cursor, begin);
    header[b.name] = blob(begin, begin + b.size);
    rel.push_back(begin);
    cursor = begin + b.size;
  }
  std::string text = header.dump();
  text.append(align_up(8 + text.size()) - 8 - text.size(), ' ');
  const std::size_t data_start = 8 + text.size();
  Layout out;
  const uint64_t n = text.size();
  for (int k = 0; k < 8; ++k) out.header.push_back(static_cast<char>((n >> (8 * k)) & 0xFF));
  out.header += text;
  for (std::size_t k = 0; k < bufs.size(); ++k) {
    out.begins.push_back(data_start + rel[k]);
    out.sizes.push_back(bufs[k].size);
  }
  out.size = std::max<std::size_t>(data_start + cursor, 1);
  return out;
}

}  // namespace

Expected<CallRegion> CallRegion::create(const std::string& dir,
                                        const std::vector<RegionBuffer>& bufs,
                                        int64_t address_shift) {
  Layout layout = plan(bufs, address_shift);
  CallRegion r;
  r.size_ = r.capacity_ = layout.size;
  r.path_ = dir + "/" + unique_name();
  const int fd = open(r.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(ErrorCode::kIo, fmt::format("cannot create: {}", std::strerror(errno)),
                      r.path_);
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(r.size_));
  void* p =
      rc == 0 ? mmap(nullptr, r.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int map_errno = errno;
  close(fd);
  if (p != MAP_FAILED) populate(p, r.size_);
  if (p == MAP_FAILED) {
    unlink(r.path_.c_str());
    r.path_.clear();
    return make_error(ErrorCode::kIo,
                      fmt::format("cannot reserve {} bytes of shared memory in {}: {}", r.size_,
                                  dir, std::strerror(rc != 0 ? rc : map_errno)));
  }
  r.base_ = static_cast<std::byte*>(p);
  std::memcpy(r.base_, layout.header.data(), layout.header.size());
  r.begins_ = std::move(layout.begins);
  r.sizes_ = std::move(layout.sizes);
  return r;
}

bool CallRegion::reuse(const std::vector<RegionBuffer>& bufs, int64_t address_shift) {
  if (base_ == nullptr) return false;
  Layout layout = plan(bufs, address_shift);
  if (layout.size > capacity_) return false;
  std::memcpy(base_, layout.header.data(), layout.header.size());
  size_ = layout.size;
  begins_ = std::move(layout.begins);
  sizes_ = std::move(layout.sizes);
  return true;
}

CallRegion::CallRegion(CallRegion&& o) noexcept
    : path_(std::move(o.path_)),
      base_(o.base_),
      size_(o.size_),
      capacity_(o.capacity_),
      begins_(std::move(o.begins_)),
      sizes_(std::move(o.sizes_)) {
  o.base_ = nullptr;
  o.path_.clear();
}

CallRegion::~CallRegion() {
  if (base_ != nullptr) munmap(base_, capacity_);
  if (!path_.empty()) unlink(path_.c_str());
}

std::span<std::byte> CallRegion::buffer(std::size_t k) { return {base_ + begins_[k], sizes_[k]}; }

void CallRegion::revoke() {
  if (base_ != nullptr) munmap(base_, capacity_);
  base_ = nullptr;
  if (!path_.empty()) {
    const int rc = truncate(path_.c_str(), 0);
    (void)rc;  // a file already gone has nothing left to revoke
  }
}

}  // namespace kcv::worker
