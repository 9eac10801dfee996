// File: python/src/core_sandbox.cpp
// kcv._core's sandbox functions (include/kcv/sandbox.hpp): whether bwrap can run here, and the
// argument list of a sandboxed command, so the audit and `kcv verify` build one sandbox.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core_common.hpp"
#include "kcv/sandbox.hpp"

namespace kcv::py {

void bind_sandbox(nb::module_& m) {
  m.def(
      "sandbox_support",
      [] {
        const SandboxSupport& s = sandbox_support();
        nb::dict d;
        d["available"] = s.available;
        d["bwrap"] = s.bwrap;
        d["reason"] = s.reason;
        return d;
      },
      "{available, bwrap, reason}: whether bubblewrap sandboxes can be started here (probed once "
      "per process; KCV_SANDBOX=off disables them).");
  m.def(
      "sandbox_argv",
      [](std::vector<std::string> command, std::vector<std::string> read_only,
         std::vector<std::pair<std::string, std::string>> writable,
         std::vector<std::string> devices, std::map<std::string, std::string> env,
         std::string workdir) {
        SandboxSpec spec;
        spec.read_only = std::move(read_only);
        spec.writable = std::move(writable);
        spec.devices = std::move(devices);
        spec.env = std::move(env);
        spec.workdir = std::move(workdir);
        return sandbox_argv(spec, command);
      },
      nb::arg("command"), nb::kw_only(), nb::arg("read_only") = std::vector<std::string>{},
      nb::arg("writable") = std::vector<std::pair<std::string, std::string>>{},
      nb::arg("devices") = std::vector<std::string>{},
      nb::arg("env") = std::map<std::string, std::string>{}, nb::arg("workdir") = "/tmp",
      "argv (bwrap first) that runs `command` in a sandbox: read_only host paths bound at the "
      "same place, writable (host, inside) pairs, device nodes, and exactly `env`.");
  m.def("gpu_device_nodes", &gpu_device_nodes, "The GPU device nodes present on this host.");
  m.def("sandbox_environment", &sandbox_environment,
        "The variables of this process a sandboxed worker keeps (HOME and TMPDIR set to /tmp).");
}

}  // namespace kcv::py
