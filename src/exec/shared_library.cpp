// File: src/exec/shared_library.cpp
// Shared-library candidates: dlopen(RTLD_NOW | RTLD_LOCAL) so that unresolved symbols fail at
// load time with the loader's message and two candidates' symbols never collide; then the one
// entry point of kcv_kernel.h, kcv_kernels. The dlopen handle is shared by every Candidate made
// from the library and closed when the last of them goes. Every error names the library and,
// where a choice failed, lists the kernels it does have.
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "exec/descriptor_candidate.hpp"

namespace kcv {
namespace {

struct Library {
  std::shared_ptr<void> handle;
  std::string path;
  std::vector<const kcv_kernel*> kernels;
};

Expected<Library> open_library(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return make_error(ErrorCode::kNotFound, "shared library not found", path);
  }
  Library lib;
  lib.path = std::filesystem::absolute(path).lexically_normal().string();
  dlerror();
  void* h = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    return make_error(
        ErrorCode::kCandidate,
        fmt::format("cannot load as a shared library: {}", why ? why : "unknown dlopen error"),
        path);
  }
  lib.handle = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
  auto entry = reinterpret_cast<kcv_kernels_fn>(dlsym(h, KCV_KERNELS_SYMBOL));
  if (entry == nullptr) {
    return make_error(ErrorCode::kCandidate,
                      fmt::format("library {} does not export {}; see include/kcv/kcv_kernel.h",
                                  path, KCV_KERNELS_SYMBOL));
  }
  int32_t count = 0;
  const kcv_kernel* table = entry(&count);
  if (table == nullptr || count <= 0) {
    return make_error(
        ErrorCode::kCandidate,
        fmt::format("library {}: {} lists no kernels (count {})", path, KCV_KERNELS_SYMBOL, count));
  }
  for (int32_t i = 0; i < count; ++i) {
    if (table[i].name == nullptr || table[i].op == nullptr) {
      return make_error(ErrorCode::kCandidate,
                        fmt::format("library {}: kernel #{} has a null name or op", path, i));
    }
    lib.kernels.push_back(&table[i]);
  }
  return lib;
}

std::string listing(const std::vector<const kcv_kernel*>& kernels) {
  std::vector<std::string> items;
  for (const kcv_kernel* k : kernels) items.push_back(fmt::format("{} ({})", k->name, k->op));
  return fmt::format("{}", fmt::join(items, ", "));
}

Expected<const kcv_kernel*> select_by_name(const Library& lib, const std::string& kernel,
                                           const std::string& op) {
  for (const kcv_kernel* k : lib.kernels) {
    if (k->name != kernel) continue;
    if (!op.empty() && k->op != op) {
      return make_error(ErrorCode::kInvalidArgument,
                        fmt::format("library {}: kernel '{}' implements op '{}', not '{}'",
                                    lib.path, kernel, k->op, op));
    }
    return k;
  }
  return make_error(ErrorCode::kNotFound,
                    fmt::format("library {} has no kernel named '{}'; it has: {}", lib.path, kernel,
                                listing(lib.kernels)));
}

Expected<const kcv_kernel*> select_kernel(const Library& lib, const std::string& kernel,
                                          const std::string& op) {
  if (!kernel.empty()) return select_by_name(lib, kernel, op);
  std::vector<const kcv_kernel*> matches;
  for (const kcv_kernel* k : lib.kernels) {
    if (op.empty() || k->op == op) matches.push_back(k);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    return make_error(ErrorCode::kNotFound,
                      fmt::format("library {} has no kernel for op '{}'; it has: {}", lib.path, op,
                                  listing(lib.kernels)));
  }
  const std::string what = op.empty() ? fmt::format("{} kernels", matches.size())
                                      : fmt::format("{} kernels for op '{}'", matches.size(), op);
  const char* how = op.empty() ? "by name (--kernel) or op (--op)" : "by name (--kernel)";
  return make_error(
      ErrorCode::kInvalidArgument,
      fmt::format("library {} has {}; choose one {}: {}", lib.path, what, how, listing(matches)));
}

}  // namespace

Expected<std::unique_ptr<Candidate>> load_shared_library_candidate(const std::string& path,
                                                                   const std::string& kernel,
                                                                   const std::string& op) {
  auto lib = open_library(path);
  if (!lib) return lib.error();
  auto k = select_kernel(*lib, kernel, op);
  if (!k) return k.error();
  const std::string dir = std::filesystem::path(lib->path).parent_path().string();
  return exec::make_descriptor_candidate(**k, dir, lib->handle);
}

Expected<std::vector<std::pair<std::string, std::string>>> list_library_kernels(
    const std::string& path) {
  auto lib = open_library(path);
  if (!lib) return lib.error();
  std::vector<std::pair<std::string, std::string>> out;
  for (const kcv_kernel* k : lib->kernels) out.emplace_back(k->name, k->op);
  return out;
}

}  // namespace kcv
