// File: python/src/core_store.cpp
// kcv._core.Store: the audit's SQLite store (include/kcv/audit.hpp, docs/07_audit_store.md) for
// the Python orchestrator. Records travel as dicts keyed by the C++ field names; a dict with an
// unknown key or a missing kernel_id raises ValueError naming it (a typo must not drop a field).
// Store errors raise RuntimeError. Row dicts of kernel()/kernels() carry the KernelInfo both
// nested under "info" and flattened beside status, message, facts, ... for convenience. A
// verdict's "finding" and "scope" travel as their names (finding_name, scope_name; defaults
// "none" and "reference"); an unknown name raises ValueError naming the field. An outcome's
// "facts" is JSON text (the store checks it). Each Store serialises its own calls and releases
// the GIL while SQLite works. Store(path) opens for writing (the store must verify; a store
// without a key gets one in key_dir); Store(path, read_only=True) opens what verify() then
// judges.
#include <fmt/format.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <optional>
#include <set>

#include "core_common.hpp"
#include "kcv/audit.hpp"

namespace kcv::py {
namespace {

using namespace kcv::audit;  // NOLINT(google-build-using-namespace): every record type

/// Reads a dict's fields with the field names checked.
class Fields {
 public:
  Fields(nb::handle obj, std::string what, std::set<std::string> known) : what_(std::move(what)) {
    if (!nb::isinstance<nb::dict>(obj)) raise_invalid(what_ + ": expected a dict");
    d_ = nb::borrow<nb::dict>(obj);
    for (auto [k, v] : d_) {
      if (!nb::isinstance<nb::str>(k)) raise_invalid(what_ + ": keys must be strings");
      const std::string key = nb::cast<std::string>(k);
      if (!known.contains(key)) raise_invalid(fmt::format("{}: unknown field '{}'", what_, key));
    }
  }
  template <typename T>
  void get(const char* key, T& out, bool required = false) {
    if (!d_.contains(key)) {
      if (required) raise_invalid(fmt::format("{}: no '{}'", what_, key));
      return;
    }
    try {
      out = nb::cast<T>(d_[key]);
    } catch (const nb::cast_error&) {
      raise_invalid(fmt::format("{}.{}: wrong type", what_, key));
    }
  }

 private:
  std::string what_;
  nb::dict d_;
};

void check(const Status& s) {
  if (!s) raise(s.error());
}
template <typename T>
T check(Expected<T> e) {
  if (!e) raise(e.error());
  return std::move(*e);
}

KernelInfo kernel_info_from(nb::handle obj, const std::string& what) {
  Fields f(obj, what,
           {"kernel_id", "corpus", "level", "problem_id", "problem_name", "language", "op_class",
            "determinism_declared", "original_verdict", "row_hash"});
  KernelInfo k;
  f.get("kernel_id", k.kernel_id, true);
  f.get("corpus", k.corpus);
  f.get("level", k.level);
  f.get("problem_id", k.problem_id);
  f.get("problem_name", k.problem_name);
  f.get("language", k.language);
  f.get("op_class", k.op_class);
  f.get("determinism_declared", k.determinism_declared);
  f.get("original_verdict", k.original_verdict);
  f.get("row_hash", k.row_hash);
  return k;
}

nb::dict info_dict(const KernelInfo& k) {
  nb::dict d;
  d["kernel_id"] = k.kernel_id;
  d["corpus"] = k.corpus;
  d["level"] = k.level;
  d["problem_id"] = k.problem_id;
  d["problem_name"] = k.problem_name;
  d["language"] = k.language;
  d["op_class"] = k.op_class;
  d["determinism_declared"] = k.determinism_declared;
  d["original_verdict"] = k.original_verdict;
  d["row_hash"] = k.row_hash;
  return d;
}

nb::dict row_dict(const KernelRow& r) {
  nb::dict d = info_dict(r.info);
  d["info"] = info_dict(r.info);
  d["status"] = std::string(status_name(r.status));
  d["message"] = r.message;
  d["replica_verdict"] = r.replica_verdict;
  d["run_id"] = r.run_id;
  d["attempts"] = r.attempts;
  d["facts"] = r.facts_json;
  d["row_hash"] = r.row_hash;
  d["seen_hash"] = r.seen_hash;
  d["signed"] = r.is_signed;
  d["stale"] = r.stale();
  return d;
}

nb::dict integrity_dict(const Integrity& in) {
  nb::dict d;
  d["state"] = std::string(integrity_state_name(in.state));
  d["store_id"] = in.store_id;
  d["key_file"] = in.key_file;
  d["signed_kernels"] = in.signed_kernels;
  d["unsigned_kernels"] = in.unsigned_kernels;
  d["problems"] = in.problems;
  d["more_problems"] = in.more_problems;
  return d;
}

/// Reads an enum given by name: `parse` is parse_finding or parse_scope.
template <typename E>
void get_named(Fields& f, const char* key, const std::string& what, E& out,
               Expected<E> (*parse)(std::string_view)) {
  std::optional<std::string> name;
  f.get(key, name);
  if (!name) return;
  Expected<E> e = parse(*name);
  if (!e) raise_invalid(fmt::format("{}.{}: {}", what, key, e.error().message));
  out = *e;
}

VerdictRecord verdict_from(nb::handle obj, const std::string& what) {
  Fields f(obj, what,
           {"gate", "profile", "verdict", "reason", "worst_ratio", "bits_lost", "evidence_json",
            "probe_token", "finding", "scope"});
  VerdictRecord v;
  f.get("gate", v.gate, true);
  f.get("profile", v.profile);
  f.get("verdict", v.verdict, true);
  f.get("reason", v.reason);
  f.get("worst_ratio", v.worst_ratio);
  f.get("bits_lost", v.bits_lost);
  f.get("evidence_json", v.evidence_json);
  f.get("probe_token", v.probe_token);
  get_named(f, "finding", what, v.finding, &parse_finding);
  get_named(f, "scope", what, v.scope, &parse_scope);
  return v;
}

nb::dict verdict_dict(const VerdictRecord& v) {
  nb::dict d;
  d["gate"] = v.gate;
  d["profile"] = v.profile;
  d["verdict"] = v.verdict;
  d["reason"] = v.reason;
  d["worst_ratio"] = v.worst_ratio;
  d["bits_lost"] = v.bits_lost;
  d["evidence_json"] = v.evidence_json;
  d["probe_token"] = v.probe_token;
  d["finding"] = std::string(finding_name(v.finding));
  d["scope"] = std::string(scope_name(v.scope));
  return d;
}

KernelOutcome outcome_from(nb::handle obj) {
  Fields f(obj, "outcome",
           {"kernel_id", "status", "message", "replica_verdict", "verdicts", "op_class",
            "determinism_declared", "facts", "row_hash"});
  KernelOutcome o;
  f.get("kernel_id", o.kernel_id, true);
  std::string status = "ok";
  f.get("status", status);
  auto s = parse_status(status);
  if (!s) raise(s.error(), "outcome.status");
  o.status = *s;
  f.get("message", o.message);
  f.get("replica_verdict", o.replica_verdict);
  f.get("op_class", o.op_class);
  f.get("determinism_declared", o.determinism_declared);
  f.get("facts", o.facts_json);
  f.get("row_hash", o.row_hash);
  nb::list verdicts;
  f.get("verdicts", verdicts);
  std::size_t k = 0;
  for (nb::handle v : verdicts)
    o.verdicts.push_back(verdict_from(v, fmt::format("outcome.verdicts[{}]", k++)));
  return o;
}

RunInfo run_info_from(nb::handle obj) {
  Fields f(obj, "run",
           {"kcv_version", "generator_version", "seed", "profiles", "command_line", "shard"});
  RunInfo r;
  f.get("kcv_version", r.kcv_version);
  f.get("generator_version", r.generator_version);
  f.get("seed", r.seed);
  f.get("profiles", r.profiles);
  f.get("command_line", r.command_line);
  f.get("shard", r.shard);
  return r;
}

class PyStore {
 public:
  PyStore(const std::string& path, bool read_only, const std::string& key_dir)
      : store_(check(Store::open(path, options(read_only, key_dir)))) {}

  static StoreOptions options(bool read_only, const std::string& key_dir) {
    StoreOptions o;
    o.read_only = read_only;
    o.key_dir = key_dir;
    return o;
  }

  template <typename F>
  auto locked(F&& f) {
    nb::gil_scoped_release unlocked;
    std::lock_guard lock(mutex_);
    return f(store_);
  }

 private:
  Store store_;
  std::mutex mutex_;
};

}  // namespace

void bind_store(nb::module_& m) {
  m.def("default_key_dir", &kcv::audit::default_key_dir,
        "Where store keys live unless key_dir says otherwise ($KCV_KEY_DIR, else "
        "$XDG_CONFIG_HOME/kcv/store-keys, else ~/.config/kcv/store-keys).");
  nb::class_<PyStore>(m, "Store", "The audit's resumable SQLite store (docs/07_audit_store.md).")
      .def(nb::init<const std::string&, bool, const std::string&>(), nb::arg("path"),
           nb::arg("read_only") = false, nb::arg("key_dir") = "")
      .def(
          "begin_run",
          [](PyStore& s, nb::handle run) {
            const RunInfo r = run_info_from(run);
            return s.locked([&](Store& st) { return check(st.begin_run(r)); });
          },
          nb::arg("run"))
      .def(
          "finish_run",
          [](PyStore& s, int64_t id) {
            s.locked([&](Store& st) {
              check(st.finish_run(id));
              return 0;
            });
          },
          nb::arg("run_id"))
      .def(
          "enqueue",
          [](PyStore& s, nb::handle kernels) {
            std::vector<KernelInfo> infos;
            std::size_t k = 0;
            for (nb::handle h : kernels)
              infos.push_back(kernel_info_from(h, fmt::format("kernels[{}]", k++)));
            s.locked([&](Store& st) {
              check(st.enqueue(infos));
              return 0;
            });
          },
          nb::arg("kernels"))
      .def(
          "record_malformed",
          [](PyStore& s, const std::string& file, int64_t line, const std::string& id,
             const std::string& message, const std::string& corpus, int64_t run_id,
             const std::string& row_hash, const std::string& duplicate) {
            RowError e{file, line, id, message};
            e.corpus = corpus;
            e.row_hash = row_hash;
            e.duplicate = duplicate;
            s.locked([&](Store& st) {
              check(st.record_malformed(e, corpus, run_id));
              return 0;
            });
          },
          nb::arg("file"), nb::arg("line"), nb::arg("id"), nb::arg("message"), nb::arg("corpus"),
          nb::arg("run_id"), nb::arg("row_hash") = "", nb::arg("duplicate") = "",
          "Records a malformed row as a final kernel (its id: audit::malformed_kernel_id).")
      .def(
          "reset",
          [](PyStore& s, const std::string& id, const std::string& row_hash) {
            s.locked([&](Store& st) {
              check(st.reset(id, row_hash));
              return 0;
            });
          },
          nb::arg("kernel_id"), nb::arg("row_hash"))
      .def(
          "mark_stale",
          [](PyStore& s, const std::string& id, const std::string& seen_hash) {
            s.locked([&](Store& st) {
              check(st.mark_stale(id, seen_hash));
              return 0;
            });
          },
          nb::arg("kernel_id"), nb::arg("seen_hash"))
      .def(
          "release_running",
          [](PyStore& s, int64_t run_id, const std::string& kernel_id) {
            s.locked([&](Store& st) {
              check(st.release_running(run_id, kernel_id));
              return 0;
            });
          },
          nb::arg("run_id"), nb::arg("kernel_id") = "")
      .def("verify",
           [](PyStore& s) {
             const Integrity in = s.locked([&](Store& st) { return check(st.verify()); });
             return integrity_dict(in);
           })
      .def("schema_problems",
           [](PyStore& s) {
             return s.locked([&](Store& st) { return check(st.schema_problems()); });
           })
      .def(
          "mark_running",
          [](PyStore& s, const std::string& id, int64_t run_id) {
            s.locked([&](Store& st) {
              check(st.mark_running(id, run_id));
              return 0;
            });
          },
          nb::arg("kernel_id"), nb::arg("run_id"))
      .def(
          "record",
          [](PyStore& s, nb::handle outcome, int64_t run_id) {
            const KernelOutcome o = outcome_from(outcome);
            s.locked([&](Store& st) {
              check(st.record(o, run_id));
              return 0;
            });
          },
          nb::arg("outcome"), nb::arg("run_id"))
      .def("verdict_generators",
           [](PyStore& s) {
             return s.locked([&](Store& st) { return check(st.verdict_generators()); });
           })
      .def("todo", [](PyStore& s) { return s.locked([&](Store& st) { return check(st.todo()); }); })
      .def(
          "kernel",
          [](PyStore& s, const std::string& id) -> nb::object {
            auto row = s.locked([&](Store& st) { return check(st.kernel(id)); });
            if (!row) return nb::none();
            return row_dict(*row);
          },
          nb::arg("kernel_id"))
      .def("kernels",
           [](PyStore& s) {
             auto rows = s.locked([&](Store& st) { return check(st.kernels()); });
             nb::list out;
             for (const KernelRow& r : rows) out.append(row_dict(r));
             return out;
           })
      .def(
          "verdicts",
          [](PyStore& s, const std::string& id) {
            auto vs = s.locked([&](Store& st) { return check(st.verdicts(id)); });
            nb::list out;
            for (const VerdictRecord& v : vs) out.append(verdict_dict(v));
            return out;
          },
          nb::arg("kernel_id"))
      .def(
          "failing_probes",
          [](PyStore& s, const std::string& id) {
            auto ps = s.locked([&](Store& st) { return check(st.failing_probes(id)); });
            nb::list out;
            for (const FailingProbe& p : ps) {
              nb::dict d;
              d["kernel_id"] = p.kernel_id;
              d["gate"] = p.gate;
              d["profile"] = p.profile;
              d["probe_token"] = p.probe_token;
              out.append(d);
            }
            return out;
          },
          nb::arg("kernel_id"))
      .def("integrity_check", [](PyStore& s) {
        return s.locked([&](Store& st) { return check(st.integrity_check()); });
      });
}

}  // namespace kcv::py
