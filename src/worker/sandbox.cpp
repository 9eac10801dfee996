// File: src/worker/sandbox.cpp
// bwrap argument lists (kcv/sandbox.hpp). The order matters to bwrap: mounts apply in the order
// given, so the read-only system comes first, then /proc, /dev and /tmp, then the caller's
// writable directories (which may lie inside /tmp or /dev/shm), then the device nodes. Each
// read-only path is bound at its real location and, where it is reached through symbolic links,
// at the spelling the caller gave too, so interpreter paths in the environment stay valid.
#include "kcv/sandbox.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

namespace kcv {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string candidate = dirs.substr(begin, end - begin) + "/" + name;
    if (end > begin && access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return {};
}

// Runs argv with no input and output thrown away; its exit status (-1: could not run).
int run_quietly(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

SandboxSupport probe() {
  SandboxSupport s;
  if (const char* env = std::getenv("KCV_SANDBOX");
      env != nullptr && std::strcmp(env, "off") == 0) {
    s.reason = "KCV_SANDBOX=off";
    return s;
  }
  const char* given = std::getenv("KCV_BWRAP");
  s.bwrap = given != nullptr && *given != '\0' ? given : find_on_path("bwrap");
  if (s.bwrap.empty()) {
    s.reason = "bubblewrap (bwrap) is not installed";
    return s;
  }
  SandboxSpec spec;
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  std::vector<std::string> argv = sandbox_argv(spec, {"/usr/bin/true"});
  argv.front() = s.bwrap;
  const int rc = run_quietly(argv);
  if (rc != 0) {
    s.reason = "bwrap cannot create user, PID, mount and network namespaces here (exit status " +
               std::to_string(rc) + "; are unprivileged user namespaces disabled?)";
    return s;
  }
  s.available = true;
  return s;
}

bool keeps(const std::string& name) {
  static const char* const kExact[] = {"PATH", "PYTHONPATH",     "LD_LIBRARY_PATH",
                                       "LANG", "PYTHONHASHSEED", "PYTHONUNBUFFERED"};
  static const char* const kPrefix[] = {"LC_",    "KCV_",    "CUDA_", "NVIDIA_",
                                        "TORCH_", "TRITON_", "OMP_",  "MKL_"};
  for (const char* e : kExact)
    if (name == e) return true;
  for (const char* p : kPrefix)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

const SandboxSupport& sandbox_support() {
  static const SandboxSupport support = probe();
  return support;
}

std::vector<std::string> sandbox_system_paths() {
  return {"/usr",       "/etc/ld.so.cache",   "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd",
          "/etc/group", "/etc/nsswitch.conf", "/etc/localtime",  "/etc/alternatives", "/sys"};
}

std::vector<std::string> gpu_device_nodes() {
  std::vector<std::string> nodes;
  for (const char* pattern :
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
        "/dev/nvidia[0-9]*", "/dev/nvidia-caps/*", "/dev/dri/renderD*", "/dev/kfd"}) {
    glob_t g{};
    if (glob(pattern, 0, nullptr, &g) == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i) nodes.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  return nodes;
}

std::map<std::string, std::string> sandbox_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (keeps(name)) env[name] = entry.substr(eq + 1);
  }
  env["HOME"] = "/tmp";
  env["TMPDIR"] = "/tmp";
  return env;
}

std::vector<std::string> sandbox_argv(const SandboxSpec& spec,
                                      const std::vector<std::string>& command) {
  std::vector<std::string> a = {"bwrap"};
  if (const char* given = std::getenv("KCV_BWRAP"); given != nullptr && *given != '\0') {
    a.front() = given;
  } else if (const std::string found = find_on_path("bwrap"); !found.empty()) {
    a.front() = found;
  }
  for (const char* flag : {"--unshare-all", "--unshare-user", "--disable-userns",
                           "--die-with-parent", "--new-session", "--clearenv"})
    a.emplace_back(flag);
  a.insert(a.end(), {"--uid", "65534", "--gid", "65534", "--hostname", "kcv-sandbox"});
  // first: what the binds below may lie inside (a checkout under /tmp, a call file under /dev)
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/dev/shm"});
  std::vector<std::string> bound;
  auto covered = [&](const std::string& p) {
    for (const std::string& b : bound) {
      if (p == b || (p.size() > b.size() && p.compare(0, b.size(), b) == 0 &&
                     (b == "/" || p[b.size()] == '/')))
        return true;
    }
    return false;
  };
  // merged /usr: the top-level directories are links into it
  for (const char* link : {"/bin", "/lib", "/lib64", "/sbin"}) {
    std::error_code ec;
    if (fs::is_symlink(link, ec)) {
      a.insert(a.end(), {"--symlink", fs::read_symlink(link, ec).string(), link});
    } else if (exists(link)) {
      a.insert(a.end(), {"--ro-bind", link, link});
    }
    bound.emplace_back(link);
  }
  auto bind_ro = [&](const std::string& path) {
    std::error_code ec;
    const std::string real = fs::canonical(path, ec).string();
    if (path.empty() || ec) return;
    if (!covered(real)) {
      a.insert(a.end(), {"--ro-bind", real, real});
      bound.push_back(real);
    }
    if (path != real && !covered(path)) {  // the caller's spelling, a link to the real place
      a.insert(a.end(), {"--symlink", real, path});
      bound.push_back(path);
    }
  };
  for (const std::string& p : sandbox_system_paths()) bind_ro(p);
  for (const std::string& p : spec.read_only) bind_ro(p);
  for (const auto& [host, inside] : spec.writable) a.insert(a.end(), {"--bind", host, inside});
  for (const std::string& d : spec.devices) {
    if (exists(d)) a.insert(a.end(), {"--dev-bind", d, d});
  }
  for (const auto& [name, value] : spec.env) a.insert(a.end(), {"--setenv", name, value});
  a.insert(a.end(), {"--chdir", spec.workdir.empty() ? "/tmp" : spec.workdir, "--"});
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

}  // namespace kcv
