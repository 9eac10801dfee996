// File: src/worker/serve.cpp
// The request loop of the C++ worker. Replies are written whole, one line each, under a mutex
// (calls run on their own threads and finish in any order; each result carries its call's id).
// A malformed request gets an "error" reply and the loop goes on; kcv decides what to do.
// Shutdown and end of input wait for the calls in flight before the worker exits.
#include "worker/serve.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "kcv/candidate.hpp"
#include "kcv/contract.hpp"
#include "kcv/worker.hpp"
#include "worker/serve_call.hpp"

namespace kcv::worker {
namespace {

using nlohmann::json;

class Server {
 public:
  explicit Server(int out_fd) : out_fd_(out_fd) {}
  ~Server() { join(); }

  // False when the loop should end (shutdown).
  bool handle(const std::string& line) {
    const json req = json::parse(line, nullptr, false);
    if (req.is_discarded() || !req.is_object() || !req.contains("type") ||
        !req["type"].is_string()) {
      reply(error("a request is not a JSON object with a string \"type\""));
      return true;
    }
    const std::string type = req["type"];
    try {
      if (type == "shutdown") {
        join();
        reply({{"type", "bye"}});
        return false;
      }
      if (type == "hello") {
        reply(hello(req));
      } else if (type == "load") {
        reply(load(req));
      } else if (type == "call") {
        call(req);
      } else {
        reply(error(fmt::format("unknown request type '{}'", type)));
      }
    } catch (const json::exception& e) {
      reply(error(fmt::format("{} request: {}", type, e.what())));
    }
    return true;
  }

  void join() {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  static json error(std::string message) {
    return {{"type", "error"}, {"message", std::move(message)}};
  }

  static json hello(const json& req) {
    const int version = req.value("protocol", 0);
    if (version != kWorkerProtocolVersion)
      return error(fmt::format("protocol {} requested; kcv-worker speaks {}", version,
                               kWorkerProtocolVersion));
    return {{"type", "hello"},
            {"protocol", kWorkerProtocolVersion},
            {"worker", "kcv-worker (C++, shared-library kernels)"},
            {"pid", getpid()},
            {"capabilities", {{"load_kinds", {"shared_library"}}, {"concurrent_calls", true}}}};
  }

  json load(const json& req) {
    const std::string kind = req.value("kind", std::string());
    if (kind != "shared_library")
      return error(
          fmt::format("load: kind '{}' is not supported (kcv-worker loads shared_library)", kind));
    join();  // no call may run on the kernel being replaced
    auto c = load_shared_library_candidate(req.value("path", std::string()),
                                           req.value("kernel", std::string()),
                                           req.value("op", std::string()));
    if (!c) return error(c.error().to_string());
    candidate_ = std::move(*c);
    json loaded{{"type", "loaded"},
                {"name", candidate_->name()},
                {"op", candidate_->op()},
                {"contract", json::parse(contract_to_json(candidate_->contract()))}};
    if (auto dc = candidate_->device_code()) loaded["device_code"] = *dc;
    return loaded;
  }

  void call(const json& req) {
    if (!candidate_) {
      reply({{"type", "error"}, {"id", req.value("id", json())}, {"message", "call before load"}});
      return;
    }
    threads_.emplace_back([this, req] { reply(serve_call(*candidate_, req)); });
  }

  void reply(const json& j) {
    const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    const std::lock_guard<std::mutex> lock(out_mutex_);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = write(out_fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(2);  // kcv is gone: nothing left to serve
      done += static_cast<std::size_t>(n);
    }
  }

  int out_fd_;
  std::mutex out_mutex_;
  std::unique_ptr<Candidate> candidate_;
  std::vector<std::thread> threads_;
};

}  // namespace

int serve(int in_fd, int out_fd) {
  std::FILE* in = fdopen(in_fd, "r");
  if (in == nullptr) return 2;
  Server server(out_fd);
  char* buf = nullptr;
  std::size_t cap = 0;
  ssize_t n;
  while ((n = getline(&buf, &cap, in)) > 0) {
    std::string line(buf, static_cast<std::size_t>(n));
    if (line.back() == '\n') line.pop_back();
    if (line.empty()) continue;
    if (!server.handle(line)) break;
  }
  std::free(buf);
  server.join();
  return 0;
}

}  // namespace kcv::worker
