// File: src/kcv_worker/main.cpp
// kcv-worker: the C++ worker program of docs/06_worker_protocol.md for shared-library kernels.
// The protocol keeps the original stdout; file descriptor 1 is then pointed at stderr, so a
// kernel's printf lands in the stderr kcv quotes instead of corrupting the reply stream. Crash
// signals get their default action, so a crash kills the worker and kcv sees the signal.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>

#include "worker/serve.hpp"

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr,
                 "usage: %s\n  speaks the kcv worker protocol on stdin/stdout "
                 "(docs/06_worker_protocol.md); kcv starts it, not a person\n",
                 argv[0]);
    return 2;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) signal(sig, SIG_DFL);
  const int protocol_out = dup(STDOUT_FILENO);
  if (protocol_out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return 2;
  return kcv::worker::serve(STDIN_FILENO, protocol_out);
}
