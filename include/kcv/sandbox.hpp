// File: include/kcv/sandbox.hpp
// The sandbox of every process that runs candidate code (docs/10_threat_model.md): bubblewrap
// (`bwrap`) starts the command in new user, PID, mount, IPC, network, UTS and cgroup namespaces,
// with no capabilities, no further user namespaces, a new session, and death with its parent.
// Its file system is built from nothing: the system's programs and libraries, the Python
// installation and kcv's own files read-only, a private /tmp, a new /proc of its own PID
// namespace, a minimal /dev plus the GPU device nodes, and read-write only the directories the
// caller names (a kernel's scratch and call-file directories). PID 1 of the sandbox is bwrap's
// reaper: when the command ends, or bwrap is killed, every process left in it is killed, so no
// descendant outlives it.
//
// kcv builds the argument list itself (sandbox_argv) and never makes namespace system calls of
// its own. Where bwrap is missing or the host refuses user namespaces, sandbox_support() says why,
// and callers run unsandboxed and mark every verdict so.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kcv {

struct SandboxSpec {
  /// Host paths bound read-only at the same place; paths that do not exist are skipped.
  std::vector<std::string> read_only;
  /// (host path, path inside) bound read-write; the host path must exist.
  std::vector<std::pair<std::string, std::string>> writable;
  /// Device nodes bound as they are (read-write); nodes that do not exist are skipped.
  std::vector<std::string> devices;
  /// The command's whole environment (nothing else of the caller's is passed).
  std::map<std::string, std::string> env;
  std::string workdir = "/tmp";
};

struct SandboxSupport {
  bool available = false;
  std::string bwrap;   // the program used
  std::string reason;  // why not, when not available
};

/// Whether a sandbox can be started here: $KCV_SANDBOX=off disables it (reason says so);
/// otherwise `bwrap` ($KCV_BWRAP, else found on PATH) must start a trivial command in the full
/// set of namespaces. Probed once per process.
const SandboxSupport& sandbox_support();

/// System paths every sandbox reads: /usr (with the merged-usr links /bin, /lib, /lib64, /sbin),
/// /etc files the loader and libc read (ld.so.cache, passwd, group, nsswitch.conf, localtime),
/// and /sys (the GPU driver reads its PCI topology there).
std::vector<std::string> sandbox_system_paths();

/// The GPU device nodes present on this host: /dev/nvidiactl, /dev/nvidia-uvm,
/// /dev/nvidia-uvm-tools, /dev/nvidia-modeset, /dev/nvidia[0-9]*, /dev/nvidia-caps/*,
/// /dev/dri/renderD* and /dev/kfd (AMD). None on a host without a GPU.
std::vector<std::string> gpu_device_nodes();

/// argv that runs `command` inside the sandbox `spec` describes (bwrap first).
std::vector<std::string> sandbox_argv(const SandboxSpec& spec,
                                      const std::vector<std::string>& command);

/// The environment variables a sandboxed worker keeps from the caller's: PATH, PYTHONPATH,
/// LD_LIBRARY_PATH, LANG/LC_*, and those of kcv, CUDA, torch, Triton and the thread pools
/// (KCV_*, CUDA_*, NVIDIA_*, TORCH_*, TRITON_*, OMP_*, MKL_*); HOME and TMPDIR become /tmp.
std::map<std::string, std::string> sandbox_environment();

}  // namespace kcv
