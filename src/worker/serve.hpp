// File: src/worker/serve.hpp
// The worker side of the protocol, as the C++ worker program kcv-worker runs it: reads requests
// from `in_fd`, writes replies to `out_fd`, loads shared-library kernels (kcv_kernel.h) and
// runs each call on its own thread over the shared-memory file the request names. It is the
// untrusted side: it reports what the kernel returned and nothing else; kcv audits the buffers.
#pragma once

namespace kcv::worker {

/// Serves until a shutdown request or end of input; returns the process exit code.
int serve(int in_fd, int out_fd);

}  // namespace kcv::worker
