// File: src/gates/parallel.hpp
// The judges' element loops on several threads. A judge walks every element of outputs of up to
// hundreds of millions of elements, one call after another; a large output is cut into
// contiguous chunks in index order, each chunk runs on its own thread, and the caller merges the
// chunks' results in chunk order. That keeps every result what the serial loop gives: sums,
// the first index among ties, and the order of collected values.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace kcv::gates {

/// Outputs of fewer elements stay serial. A judge spends 20-100 ns an element, so 2^20 elements
/// are at least ~20 ms of work against ~0.1 ms to start the threads; smaller outputs (most probes
/// of kcv's own gates) keep the serial loop exactly.
inline constexpr std::size_t kParallelFrom = std::size_t{1} << 20;
/// The audit runs several judges at once (one per slot); 8 threads each keep most of a 32-core
/// host for the kernels' own work while cutting a heavy kernel's judge time several-fold.
inline constexpr unsigned kMaxJudgeThreads = 8;

/// How an element loop is split (tests force a split below kParallelFrom or a serial loop).
struct Split {
  std::size_t from = kParallelFrom;
  unsigned threads = 0;  // 0: min(hardware_concurrency, kMaxJudgeThreads)
};

/// Chunks of an n-element loop: 1 below split.from, else the thread count (at most n).
inline std::size_t chunk_count(std::size_t n, Split split) {
  if (n < split.from || n < 2) return 1;
  unsigned threads = split.threads;
  if (threads == 0)
    threads = std::min(std::max(std::thread::hardware_concurrency(), 1u), kMaxJudgeThreads);
  return std::min<std::size_t>(threads, n);
}

/// [begin, end) of chunk k of `chunks` over n elements: contiguous, in index order.
inline std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, std::size_t chunks,
                                                       std::size_t k) {
  return {n / chunks * k + std::min(k, n % chunks),
          n / chunks * (k + 1) + std::min(k + 1, n % chunks)};
}

/// body(k, begin, end) for every chunk k of an n-element loop: chunk 0 on the calling thread, the
/// others on threads of their own. Returns when all are done; rethrows the exception of the
/// first chunk (in chunk order) that threw.
template <class Body>
void for_each_chunk(std::size_t n, std::size_t chunks, Body&& body) {
  std::vector<std::exception_ptr> failed(chunks);
  const auto run = [&](std::size_t k) {
    try {
      const auto [begin, end] = chunk_range(n, chunks, k);
      body(k, begin, end);
    } catch (...) {
      failed[k] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(chunks - 1);
    for (std::size_t k = 1; k < chunks; ++k) {
      try {
        threads.emplace_back(run, k);
      } catch (const std::system_error&) {
        run(k);  // no thread to be had (a pids limit): the chunk runs here, into its own slot
      }
    }
    run(0);
  }  // joined
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

/// The loop body(begin, end, total) over [0, n); for a large n, body(begin, end, part) on each
/// chunk with a Part of its own, then merge(total, part) in chunk order. merge must make total
/// what the serial loop would have made it by going on over the part's elements.
template <class Part, class Body, class Merge>
void reduce_chunks(std::size_t n, Split split, Part& total, Body&& body, Merge&& merge) {
  const std::size_t chunks = chunk_count(n, split);
  if (chunks == 1) {
    body(std::size_t{0}, n, total);
    return;
  }
  std::vector<Part> parts(chunks);
  for_each_chunk(n, chunks, [&](std::size_t k, std::size_t begin, std::size_t end) {
    body(begin, end, parts[k]);
  });
  for (const Part& part : parts) merge(total, part);
}

/// reduce_chunks for loops whose result depends on the order of its steps (floating sums): body
/// runs on fixed blocks of split.from elements, each block's part is merged into total in block
/// order, and the threads share the blocks out. So the result is the serial loop's up to
/// split.from elements and, above it, the same whatever the thread count (reduce_chunks' chunk
/// boundaries follow the thread count, so its sums would differ from machine to machine).
template <class Part, class Body, class Merge>
void reduce_blocks(std::size_t n, Split split, Part& total, Body&& body, Merge&& merge) {
  const std::size_t block = std::max<std::size_t>(split.from, 1);
  const std::size_t blocks = n / block + (n % block != 0 ? 1 : 0);
  if (blocks <= 1) {
    body(std::size_t{0}, n, total);
    return;
  }
  std::vector<Part> parts(blocks);
  const std::size_t threads = std::min(chunk_count(n, split), blocks);
  for_each_chunk(blocks, threads, [&](std::size_t, std::size_t first, std::size_t last) {
    for (std::size_t b = first; b < last; ++b)
      body(b * block, std::min(n, (b + 1) * block), parts[b]);
  });
  for (const Part& part : parts) merge(total, part);
}

}  // namespace kcv::gates
