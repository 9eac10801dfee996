// File: src/worker/serve_call.cpp
// The views the kernel receives point into this process's mapping of the call's file: new pages
// every call, so the kernel sees new addresses every call. Rewritten output views are caught
// with src/exec's check_output_views (same wording as the in-process executor); exceptions are
// caught here, at the edge. The mapping is released before the reply is written.
#include "worker/serve_call.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "exec/buffer_audit.hpp"

namespace kcv::worker {
namespace {

using nlohmann::json;

struct Mapping {
  std::byte* base = nullptr;
  std::size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
};

struct Views {
  std::vector<Shape> shapes, strides;  // kept alive for the kcv_tensor pointers
  std::vector<kcv_tensor> tensors;
};

void map_file(const json& shm, Mapping& m) {
  const std::string path = shm.at("path").get<std::string>();
  m.size = shm.at("size").get<std::size_t>();
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(fmt::format("shm.path '{}': {}", path, std::strerror(errno)));
  struct stat st {};
  fstat(fd, &st);
  void* p = static_cast<std::size_t>(st.st_size) >= m.size && m.size > 0
                ? mmap(nullptr, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED)
    throw std::runtime_error(fmt::format("shm: cannot map {} bytes of '{}'", m.size, path));
  m.base = static_cast<std::byte*>(p);
}

// Lowest and highest element offsets (from element 0) that the view reaches.
std::pair<int64_t, int64_t> reach(const Shape& shape, const Shape& strides) {
  int64_t lo = 0, hi = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] <= 0) return {0, -1};
    (strides[k] < 0 ? lo : hi) += (shape[k] - 1) * strides[k];
  }
  return {lo, hi};
}

void add_view(const json& d, const Mapping& m, Views& v) {
  const std::string name = d.at("name").get<std::string>();
  auto dtype = parse_dtype(d.at("dtype").get<std::string>());
  if (!dtype) throw std::runtime_error(fmt::format("{}.dtype: {}", name, dtype.error().message));
  Shape shape = d.at("shape").get<Shape>(), strides = d.at("strides").get<Shape>();
  const auto raw = d.at("raw").get<std::vector<std::size_t>>();
  const auto offset = d.at("offset").get<int64_t>();
  if (strides.size() != shape.size())
    throw std::runtime_error(name + ".strides: rank differs from shape");
  if (raw.size() != 2 || raw[0] > raw[1] || raw[1] > m.size)
    throw std::runtime_error(name + ".raw: not a byte range inside the shared file");
  const auto size = static_cast<int64_t>(dtype_size(*dtype));
  const auto [lo, hi] = reach(shape, strides);
  const auto raw_size = static_cast<int64_t>(raw[1] - raw[0]);
  if (hi >= lo && (offset + lo * size < 0 || offset + (hi + 1) * size > raw_size))
    throw std::runtime_error(name + ": the view reaches outside its raw region");
  v.shapes.push_back(std::move(shape));
  v.strides.push_back(std::move(strides));
  v.tensors.push_back(kcv_tensor{m.base + raw[0] + offset, static_cast<int32_t>(*dtype),
                                 static_cast<int32_t>(v.shapes.back().size()),
                                 v.shapes.back().data(), v.strides.back().data()});
}

json run_kernel(Candidate& candidate, const json& req, Views& in, Views& out) {
  std::map<std::string, double> params =
      req.value("params", json::object()).get<std::map<std::string, double>>();
  const json launch = req.value("launch", json::object());
  const LaunchConfig lc{launch.value("block", 0), launch.value("threads", 1)};
  json reply{{"type", "result"}, {"id", req.at("id")}};
  exec::CallBuffers views;  // only the view fields, for check_output_views
  views.output_views = out.tensors;
  views.output_views_made = out.tensors;
  try {
    std::string message;
    const int rc = candidate.call(in.tensors, views.output_views, params, lc, &message);
    if (rc != 0) {
      reply.update({{"status", "kernel_error"}, {"code", rc}, {"message", message}});
      return reply;
    }
  } catch (const std::exception& e) {
    reply.update({{"status", "exception"}, {"message", e.what()}});
    return reply;
  } catch (...) {
    reply.update({{"status", "exception"}, {"message", "something that is not a std::exception"}});
    return reply;
  }
  if (auto bad = exec::check_output_views(views)) {
    reply.update({{"status", "bad_output"}, {"message", *bad}});
    return reply;
  }
  reply["status"] = "ok";
  return reply;
}

}  // namespace

json serve_call(Candidate& candidate, const json& req) {
  try {
    Mapping m;
    map_file(req.at("shm"), m);
    Views in, out;
    in.shapes.reserve(req.at("inputs").size());
    in.strides.reserve(req.at("inputs").size());
    out.shapes.reserve(req.at("outputs").size());
    out.strides.reserve(req.at("outputs").size());
    for (const json& d : req.at("inputs")) add_view(d, m, in);
    for (const json& d : req.at("outputs")) add_view(d, m, out);
    const auto t0 = std::chrono::steady_clock::now();
    json reply = run_kernel(candidate, req, in, out);
    // the seconds inside the task (docs/06 §4: kcv's timings, never evidence)
    reply["task_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return reply;
  } catch (const std::exception& e) {
    return json{{"type", "error"},
                {"id", req.value("id", json())},
                {"message", fmt::format("call request: {}", e.what())}};
  }
}

}  // namespace kcv::worker
