// File: python/src/core_module.cpp
// The extension module kcv._core: the trusted verifier core for the Python audit orchestrator
// (worker executor, call records, prepared oracles, gate judges, audit store, corpus reader). The
// orchestrator never imports candidate code; candidates run only in worker processes behind
// kcv._core.Worker.
#include "core_common.hpp"

#ifndef KCV_VERSION
#define KCV_VERSION "unknown"
#endif

namespace kcv::py {
void bind_errors(nb::module_& m);
void bind_call_record(nb::module_& m);
void bind_worker(nb::module_& m);
void bind_oracle(nb::module_& m);
void bind_judge(nb::module_& m);
void bind_store(nb::module_& m);
void bind_corpus(nb::module_& m);
void bind_kernelbench(nb::module_& m);
void bind_sandbox(nb::module_& m);
}  // namespace kcv::py

NB_MODULE(_core, m) {
  m.doc() =
      "kcv's verifier core: Worker, CallRecord, judge, Store, read_corpus, parse_contract, and the "
      "exception classes of its error codes (Error and its subclasses).";
  m.attr("version") = KCV_VERSION;
  kcv::py::bind_errors(m);
  kcv::py::bind_call_record(m);
  kcv::py::bind_worker(m);
  kcv::py::bind_oracle(m);
  kcv::py::bind_judge(m);
  kcv::py::bind_store(m);
  kcv::py::bind_corpus(m);
  kcv::py::bind_kernelbench(m);
  kcv::py::bind_sandbox(m);
}
