"""The gate battery for one KernelBench kernel: probes derived from get_inputs, judged by the
C++ gate judges, one verdict per gate and profile.

Deliberately lean (the budget: the whole battery within 2x the replica's wall time, compiles
excluded). Probes, all through the kernel's worker pair (session.py):
- CMP-01: the reference shape under the replica's first two trial seeds (their inputs and fp32
  reference runs are shared with the replica), plus one rescaled shape (rescale.py) on a second
  worker pair; a candidate that fails there while the reference works is shape-specialized.
- ORD-02: the first seed's inputs twice more at shifted buffer addresses; bitwise equal
  (every KernelBench problem is declared deterministic).
- CMP-03: the first seed's inputs as non-contiguous views with the same values (a transposed
  storage copy, or a strided slice for rank-1 inputs).
- EXC-01: a NaN at the first, then the last element of the first floating input; the output's
  NaN/Inf mask must equal the fp64 reference's on the same inputs. The finite elements are
  compared under the first seed's error scale: a NaN changes only the elements it reaches, so
  an eager run of its own would measure the same E (and cost one more reference call).
- CMP-02, RES-01: the buffer audit of every candidate call (inputs unchanged, guards intact,
  every output element written; crash and timeout statuses).
- PRC-01: the reference-shape calls against the declared (eager fp32) value.
Each probe's eager fp32 run is made with TF32 off and, on CUDA, once more per TF32 flag set a
judged profile sanctions (error_model.PROFILE_TF32); tau under a profile uses the larger error.
Cost (the budget is 2x the replica): the candidate's call of a seed or NaN probe runs beside the
reference's runs on the same inputs (_beside); each probe's oracle is built once per TF32 flag set
and converted for the judges once per distinct content (prepared), the judges read the calls'
outputs in place, and a gate whose judge never reads the profile (PROFILE_BLIND) is judged once
per distinct oracle, so where the profiles' scales agree (everything but TF32-sensitive ops on
CUDA, and all of the CPU) the second profile costs nothing. Memory: each probe is judged as soon as its calls are made
(the gates that combine several probes keep only their records) and then released, so the
orchestrator holds about one probe's fp64 values and candidate outputs beside the first seed's,
not all eight probes' at once (memory.py's estimate).
- ORD-01, ORD-03, PRC-02, EXC-02, RES-02: not applicable to an opaque module, each with its reason.
Bounds come from error_model.py. A candidate call that times out ends the battery (status
timeout); two crashes end it (status crash); the gates judged until then are kept."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from kcv.audit import error_model, rescale, verdicts
from kcv.audit.replica import trial_seeds
from kcv.audit.session import (FLOAT_DTYPES, LoadFailure, LoadTimeout, ProblemSession,
                               ReferenceFailure)

ALL_GATES = ("CMP-01", "CMP-02", "CMP-03", "ORD-01", "ORD-02", "ORD-03", "EXC-01", "EXC-02",
             "PRC-01", "PRC-02", "RES-01", "RES-02")

NOT_APPLICABLE = {
    "ORD-01": "opaque PyTorch module: no declared reduction or accumulator to probe over N",
    "ORD-03": "opaque PyTorch module: no launch configurations or autotune choices to vary",
    "PRC-02": "opaque PyTorch module: no declared accumulator to simulate",
    "EXC-02": "opaque PyTorch module: no subnormal semantics declared (inputs come from get_inputs)",
    "RES-02": "opaque PyTorch module: no device code or resource budgets to read",
}

ORD02_REPETITIONS = 3

# Gates whose C++ judge never reads contract.profile (only EXC-02's subnormal rule and PRC's
# declared-type model do): their verdict depends on the profile only through tau.
# test_audit_units checks this against kcv._core.judge.
PROFILE_BLIND = frozenset({"CMP-01", "CMP-02", "CMP-03", "EXC-01", "ORD-02", "RES-01"})
MAX_CRASHES = 2

# Words in the reference source that mean min/max semantics matter for NaN propagation.
MINMAX_WORDS = ("max", "min", "relu", "clamp", "hardtanh", "pool", "argm", "sort", "topk")


def prepared_key(entries: list[dict]) -> tuple:
    """What a kcv._core.Oracle of these entries is made of: the arrays (by identity; a cached
    Oracle keeps its entries, so the ids stay theirs) and the bound's parameters."""
    return tuple((e["dtype"], tuple(e.get("shape") or ()), id(e["value"]), id(e.get("declared")),
                  id(e.get("tau")),
                  id(e.get("n_terms")), e.get("tau_rel"), e.get("tau_abs"),
                  tuple(e.get("tau_abs_steps") or ())) for e in entries)


class StopBattery(Exception):
    """A candidate call timed out or crashed too often: stop issuing probes."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Probe:
    label: str
    inputs: list
    value: list  # fp64 reference outputs
    eager: list | None  # fp32 eager outputs, TF32 off (None: no eager run)
    eager_tf32: dict = field(default_factory=dict)  # (cudnn, matmul) flags -> fp32 eager outputs
    calls: list = field(default_factory=list)
    injections: list = field(default_factory=list)
    outputs: list | None = None  # output specs when not the session's (the rescaled shape)
    scale_from: "Probe | None" = None  # calibrated by that probe's eager runs (eager is None)
    oracle_of: "Probe | None" = None  # the same reference values as that probe: its oracle


def _nan_bits(dtype: str):
    return np.uint16(0x7FC0) if dtype == "bf16" else np.nan


def noncontiguous_view(a: np.ndarray) -> np.ndarray | None:
    """The same values in a non-contiguous layout: transposed storage for rank >= 2 (dense,
    so it survives a device copy that preserves strides), else a stride-2 slice."""
    if a.ndim >= 2 and a.shape[-1] > 1 and a.shape[-2] > 1:
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if a.size > 1:
        base = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        view = base[..., ::2]
        view[...] = a
        return view
    return None


def op_class_of(problem_name: str, level: int) -> str:
    """A coarse op class from the KernelBench problem name (for the report's per-class rates)."""
    name = problem_name.lower()
    if level >= 3:
        return "architecture"
    table = (("conv", "convolution"), ("attention", "attention"),
             ("matmul", "matmul"), ("gemm", "matmul"), ("matrix", "matmul"), ("bmm", "matmul"),
             ("linear", "matmul"), ("einsum", "matmul"),
             ("softmax", "normalization"), ("norm", "normalization"),
             ("pool", "pooling"), ("loss", "loss"),
             ("sum", "reduction"), ("mean", "reduction"), ("max", "reduction"),
             ("min", "reduction"), ("argm", "reduction"), ("cumsum", "reduction"),
             ("cumprod", "reduction"), ("prod", "reduction"), ("reduction", "reduction"))
    for word, cls in table:
        if word in name:
            return cls
    return "elementwise"


# The judge's synthetic op classes (kcv._core.judge): every class but elementwise has a
# reduction dimension, which is what decides ORD-01/PRC-02 applicability there.
JUDGE_OP_CLASS = {"matmul": "matmul", "convolution": "convolution", "attention": "matmul",
                  "reduction": "reduction", "normalization": "normalization",
                  "pooling": "reduction", "loss": "reduction", "architecture": "matmul",
                  "elementwise": "elementwise"}
EXP_WORDS = ("exp", "softmax", "sigmoid", "tanh", "gelu", "silu", "swish", "softplus", "elu",
             "log", "mish")


class Battery:
    """Runs the probes of one kernel on an already started session and collects verdicts."""

    def __init__(self, session: ProblemSession, row: dict, profiles: list[str], *,
                 make_session=None, seeds=None, contract: dict | None = None,
                 error_scale: str = "global", base_constants: dict | None = None):
        self.s = session
        self.error_scale = error_scale  # error_model.ERROR_SCALES
        self.seeds = tuple(seeds) if seeds is not None else trial_seeds()[:2]
        self.contract = dict(contract or {})
        self.row = row
        self.profiles = list(dict.fromkeys(profiles))  # a profile named twice is judged once
        self.flag_sets = error_model.extra_flag_sets(self.profiles)  # TF32 eager runs needed
        self.make_session = make_session  # constants -> a new, unstarted ProblemSession
        # The constants this session runs under (a reduced shape, kernel.py), which the second
        # shape of CMP-01 starts from; make_session applies them itself.
        self.base_constants = dict(base_constants or {})
        self.records: list[dict] = []
        self.crashes = 0
        self.status_messages: list[str] = []
        self.kernel_status = "ok"
        self.rescale_load_s = 0.0  # wall time of starting the rescaled pair (compiles)
        self.rescale_wait_s = 0.0  # how long the battery waited for that start
        self._rescale_future = None
        self._rescale_session = None
        self._rescale_choice = (None, "")
        self._helper = None
        self._lane = None  # the candidate lane (_beside)
        self._oracles: dict = {}  # (id(probe), TF32 flags) -> (probe, oracle entries)
        self._prepared: dict = {}  # prepared_key(entries) -> (entries, kcv._core.Oracle)
        self._verdicts: dict = {}  # profile-blind judge results per distinct oracle -> (calls, record)
        self._pending: dict = {}  # gate -> profile -> records of the probes judged so far
        self.judge_s = 0.0  # wall seconds in the C++ judges and their argument conversion
        src = row.get("reference_code", "").lower()
        self.uses_minmax = any(w in src for w in MINMAX_WORDS)
        self.uses_exp = any(w in src for w in EXP_WORDS)
        self.op_class = op_class_of(row.get("problem_name", ""), int(row.get("level", 1)))

    # -- probes ------------------------------------------------------------------------------

    def _candidate(self, session: ProblemSession, inputs, **opts):
        rec = session.run_candidate(inputs, **opts)
        if rec.status == "timeout":
            raise StopBattery("timeout", f"candidate call timed out: {rec.message}")
        if rec.status == "crash":
            self.crashes += 1
            self.status_messages.append(f"candidate crashed: {rec.message}")
            self.kernel_status = "crash"
            if self.crashes >= MAX_CRASHES:
                raise StopBattery("crash", f"candidate crashed {self.crashes} times: {rec.message}")
        return rec

    def eager_tf32(self, session, inputs, key=None) -> dict:
        """The eager fp32 runs under the TF32 flag sets the judged profiles sanction; none on
        the CPU (no TF32 there: the flags-off run stands for every profile)."""
        if session.on_cpu:
            return {}
        return {f: session.reference32(inputs, key=key, tf32=f) for f in self.flag_sets}

    def _beside(self, session: ProblemSession, inputs, reference):
        """(reference(), the candidate's record on `inputs`): the candidate's call runs on the
        candidate lane while the trusted worker's runs on the same inputs run here. The two
        workers are separate processes, so a probe costs the longer of the two, not their sum.
        The lane is one thread that lives until close(): a candidate worker it restarts after a
        crash dies with the thread that spawned it (PR_SET_PDEATHSIG is per thread)."""
        if self._lane is None:
            self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kcv-candidate")
        call = self._lane.submit(self._candidate, session, inputs)
        try:
            value = reference()
        except BaseException:
            try:  # the candidate's call ends (its own timeout bounds it) before this unwinds
                call.result()
            except BaseException:  # noqa: BLE001 - the reference's failure is the one to report
                pass
            raise
        return value, call.result()

    def seed_probe(self, session: ProblemSession, seed: int, label: str) -> Probe:
        inputs = session.inputs(seed)
        refs, rec = self._beside(session, inputs, lambda: (
            session.reference64(inputs, key=seed), session.reference32(inputs, key=seed),
            self.eager_tf32(session, inputs, seed)))
        p = Probe(label, inputs, *refs)
        p.calls.append(rec)
        return p

    # -- judging -----------------------------------------------------------------------------

    def oracle(self, probe: Probe, profile: str, outputs=None) -> list[dict]:
        """The probe's oracle entries under a profile, built once per TF32 flag set."""
        if probe.oracle_of is not None:
            return self.oracle(probe.oracle_of, profile, outputs)
        flags = error_model.tf32_flags(profile)
        key = (id(probe), flags)
        if key in self._oracles:
            return self._oracles[key][1]
        outs = outputs or self.s.problem.outputs
        shared = None if probe.scale_from is None else self.oracle(probe.scale_from, profile)
        entries = []
        for k, spec in enumerate(outs):
            if shared is not None:
                entries.append(error_model.oracle_entry(spec["dtype"], probe.value[k], None,
                                                        big_e=shared[k]["scale"],
                                                        error_scale=self.error_scale))
                continue
            eager = None if probe.eager is None else probe.eager[k]
            alt = probe.eager_tf32.get(flags)
            entries.append(error_model.oracle_entry(spec["dtype"], probe.value[k], eager,
                                                    None if alt is None else alt[k],
                                                    error_scale=self.error_scale))
        self._oracles[key] = (probe, entries)  # the probe kept alive: its id stays its own
        return entries

    def prepared(self, entries: list[dict]):
        """The kcv._core.Oracle of these entries: converted (fp64 values, tau per element) once
        for every judge call that reads the same arrays under the same bound, such as a probe's
        profiles whose scales agree, or a seed probe and its shifted and non-contiguous
        variants, instead of once per judge call."""
        key = prepared_key(entries)
        hit = self._prepared.get(key)
        if hit is None:
            from kcv import _core

            hit = self._prepared[key] = (entries, _core.Oracle(entries))  # entries keep the ids
        return hit[1]

    def judge(self, gate: str, probe: Probe, profile: str, *, calls=None, repetitions=1,
              outputs=None) -> dict:
        calls = list(calls if calls is not None else probe.calls)
        oracle = self.oracle(probe, profile, outputs)
        memo = None
        if gate in PROFILE_BLIND:
            memo = (gate, id(probe), tuple(e["scale"] for e in oracle),
                    tuple(id(c) for c in calls), repetitions)
            if memo in self._verdicts:
                return {**self._verdicts[memo][1], "profile": profile}
        rec = self._judge(gate, probe, profile, calls, oracle, repetitions)
        if memo is not None:
            self._verdicts[memo] = (calls, rec)  # the calls kept alive, as the probe is above
        return rec

    def _judge(self, gate, probe, profile, calls, oracle, repetitions) -> dict:
        from kcv import _core

        contract = json.dumps({"deterministic": True, **self.contract, "profile": profile})
        t0 = time.monotonic()
        try:
            res = _core.judge(gate, calls=calls, oracle=self.prepared(oracle), inputs=probe.inputs,
                              contract_json=contract, op_class=JUDGE_OP_CLASS[self.op_class],
                              label=probe.label, repetitions=repetitions,
                              injections=list(probe.injections), uses_minmax=self.uses_minmax,
                              uses_exp=self.uses_exp)
        except (ValueError, RuntimeError) as e:
            return verdicts.record(gate, profile, "error", f"judge failed: {e}", probe=probe.label)
        finally:
            self.judge_s += time.monotonic() - t0
        return verdicts.from_judge(gate, profile, res, probe.label)

    def costs(self) -> dict[str, float]:
        """Wall seconds per kind of work (ProblemSession.costs of both shapes, and judging)."""
        out = dict(self.s.costs)
        if self._rescale_session is not None:
            for k, v in self._rescale_session.costs.items():
                out[f"rescaled_{k}"] = v
        out["judge"] = self.judge_s
        return out

    def add(self, gate: str, per_profile):
        """Judges a gate under every profile; per_profile(profile) -> list of probe records."""
        for profile in self.profiles:
            recs = per_profile(profile)
            self.records.append(verdicts.combine(recs))

    def add_not_applicable(self, gate: str, reason: str):
        for profile in self.profiles:
            self.records.append(verdicts.not_applicable(gate, profile, reason))

    # -- the battery -------------------------------------------------------------------------

    def run(self) -> list[dict]:
        """Runs every probe; returns the records (also kept in self.records). A StopBattery
        ends it early with the buffer-audit gates judged over the calls made so far."""
        try:
            self._run()
        except StopBattery as stop:
            self.kernel_status = stop.status
            self.status_messages.append(stop.message)
            self._flush(("CMP-02", "RES-01"))
            raise
        return self.records

    def _run(self):
        p0 = self.seed_probe(self.s, self.seeds[0], f"seed={self.seeds[0]}")
        self._made(p0)
        self._seed_gates(p0)
        self._ord02(p0)
        self._cmp03(p0)
        self._unprepare(p0)  # its fp64 copies are not needed beside the NaN probes' own
        self._exc01(p0)
        self._release(p0)  # its oracle lent EXC-01 its scale; nothing reads it after
        self.s.forget(self.seeds[0])
        for s in self.seeds[1:]:
            p = self.seed_probe(self.s, s, f"seed={s}")
            self._made(p)
            self._seed_gates(p)
            self._release(p)
            self.s.forget(s)
        rescaled, rescale_note = self._rescaled(self.seeds[0])
        self._cmp01(rescaled, rescale_note)
        self._flush(("PRC-01", "CMP-02", "RES-01"))
        for gate, reason in NOT_APPLICABLE.items():
            self.add_not_applicable(gate, reason)

    # Judged as each probe is made, and its outputs released, so the orchestrator holds about
    # one probe's candidate outputs and fp64 values at a time rather than all eight (the
    # kernel's host-memory estimate, memory.py, assumes this order).
    def _made(self, p: Probe, outputs=None):
        """The buffer audit (CMP-02, RES-01) of a probe's candidate calls, judged now."""
        for gate in ("CMP-02", "RES-01"):
            self._judge_later(gate, lambda prof, g=gate: self.judge(g, p, prof, outputs=outputs))

    def _seed_gates(self, p: Probe):
        """CMP-01 and PRC-01 of a seed probe (combined with the others' at the end)."""
        for gate in ("CMP-01", "PRC-01"):
            self._judge_later(gate, lambda prof, g=gate: self.judge(g, p, prof))

    def _judge_later(self, gate: str, judge_one):
        for profile in self.profiles:
            self._pending.setdefault(gate, {}).setdefault(profile, []).append(judge_one(profile))

    def _flush(self, gates):
        """Combines the per-probe records of these gates into one record per profile."""
        done = {r["gate"] for r in self.records}
        for gate in gates:
            per_profile = self._pending.pop(gate, {})
            if gate in done or not per_profile:
                continue
            for profile in self.profiles:
                self.records.append(verdicts.combine(per_profile[profile]))

    def _release(self, *released: Probe):
        """Forgets probes whose every judgment is made: their cached oracles, the verdict memos
        naming them, and their calls, so their arrays go once nothing else holds them."""
        ids = {id(p) for p in released}
        self._oracles = {k: v for k, v in self._oracles.items() if k[0] not in ids}
        live = {prepared_key(entries) for _, entries in self._oracles.values()}
        self._prepared = {k: v for k, v in self._prepared.items() if k in live}
        self._verdicts = {k: v for k, v in self._verdicts.items() if k[1] not in ids}
        for p in released:
            p.calls, p.inputs, p.value, p.eager, p.eager_tf32 = [], [], None, None, {}

    def _unprepare(self, p: Probe):
        """Drops the prepared oracles of a probe that no judge reads again while its entries
        still lend their scale (a seed probe's, to its NaN probes)."""
        mine = {prepared_key(entries) for (pid, _), (_, entries) in self._oracles.items()
                if pid == id(p)}
        self._prepared = {k: v for k, v in self._prepared.items() if k not in mine}

    def _ord02(self, p0: Probe):
        itemsize = max([a.dtype.itemsize for _, a in p0.inputs] + [8])
        calls = [p0.calls[0]]
        shifted = []
        for k in range(1, ORD02_REPETITIONS):
            calls.append(self._candidate(self.s, p0.inputs, address_shift=k * itemsize))
            shifted.append(Probe(f"{p0.label}/shift={k * itemsize}", p0.inputs, p0.value,
                                 p0.eager, p0.eager_tf32, [calls[-1]], oracle_of=p0))
            self._made(shifted[-1])
        self.add("ORD-02", lambda prof: [self.judge("ORD-02", p0, prof, calls=calls,
                                                    repetitions=len(calls))])
        self._release(*shifted)

    def _cmp03(self, p0: Probe):
        views, changed = [], False
        for (name, a), spec in zip(p0.inputs, self.s.problem.tensor_inputs()):
            v = noncontiguous_view(a) if spec["dtype"] in FLOAT_DTYPES else None
            changed |= v is not None
            views.append((name, a if v is None else v))
        if not changed:
            self.add_not_applicable("CMP-03", "no floating tensor input with more than one element")
            return
        p = Probe(f"{p0.label}/noncontiguous", views, p0.value, p0.eager, p0.eager_tf32,
                  oracle_of=p0)
        p.calls.append(self._candidate(self.s, views))
        self._made(p)
        self.add("CMP-03", lambda prof: [self.judge("CMP-03", p, prof)])
        self._release(p)

    def _exc01(self, p0: Probe):
        specs = self.s.problem.tensor_inputs()
        first = next((k for k, sp in enumerate(specs) if sp["dtype"] in FLOAT_DTYPES
                      and p0.inputs[k][1].size > 0), None)
        if first is None:
            self.add_not_applicable("EXC-01", "no floating tensor input to inject a NaN into")
            return
        size = p0.inputs[first][1].size
        positions = sorted({0, size - 1})
        for pos in positions:
            inputs = list(p0.inputs)  # shared, except the one input that gets the NaN
            name, a = inputs[first]
            inputs[first] = (name, a.copy())
            inputs[first][1].reshape(-1)[pos] = _nan_bits(specs[first]["dtype"])
            # The judges compare the elements the NaN does not reach by value as well as by
            # mask, under p0's scale: those elements are p0's.
            value, rec = self._beside(self.s, inputs, lambda: self.s.reference64(inputs))
            p = Probe(f"{p0.label}/nan@input{first}[{pos}]", inputs, value, None,
                      injections=[(first, pos, "nan")], scale_from=p0)
            p.calls.append(rec)
            self._made(p)
            self._judge_later("EXC-01", lambda prof, p=p: self.judge("EXC-01", p, prof))
            self._release(p)
            del inputs, value, rec, p  # not alive beside the next position's arrays
        self._flush(("EXC-01",))

    def prestart_rescale(self):
        """Starts the rescaled worker pair in the background, once the reference-shape pair has
        loaded (audit_kernel: its compiles are then cache hits); the load overlaps the replica
        and the reference-shape probes. The helper thread lives until close(): workers die with
        the thread that spawned them."""
        if self.make_session is None or self._rescale_future is not None:
            return
        code = self.row.get("reference_code", "")
        consts = ({**rescale.module_int_constants(code), **self.base_constants}
                  if self.base_constants else None)
        override, why = rescale.choose(code, consts)
        self._rescale_choice = (override, why)
        if override is None:
            return
        desc = ",".join(f"{k}={v}" for k, v in override.items())
        sess = self.make_session(override, f"rescaled {desc}")
        self._rescale_session = sess

        def start():
            t0 = time.monotonic()
            try:
                sess.start_both()
            finally:
                self.rescale_load_s = time.monotonic() - t0

        self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kcv-rescale")
        self._rescale_future = self._helper.submit(start)

    def close(self):
        if self._lane is not None:
            self._lane.shutdown(wait=True)
            self._lane = None
        if self._rescale_session is not None:
            self._rescale_session.close()
        if self._helper is not None:
            self._helper.shutdown(wait=True)
            self._helper = None
        # A failed start's exception (and its traceback, which holds this battery) must not keep
        # the probes' arrays alive past the kernel's share of the host-memory budget.
        self._rescale_future = None

    def _rescaled(self, seed: int) -> tuple[Probe | None, dict]:
        """The rescaled-shape probe, or None with a note saying why not (n/a) or why it is a
        failure by itself (the candidate cannot run where the reference can)."""
        if self.make_session is None:
            return None, {"rescale": "not_applicable",
                          "reason": "no module constants to rescale (inputs given by the caller)"}
        self.prestart_rescale()
        override, why = self._rescale_choice
        if override is None:
            return None, {"rescale": "not_applicable", "reason": why}
        desc = ",".join(f"{k}={v}" for k, v in override.items())
        sess = self._rescale_session
        try:
            t0 = time.monotonic()
            try:
                self._rescale_future.result()
            finally:
                self.rescale_wait_s = time.monotonic() - t0
            inputs = sess.inputs(seed)
            # In turn, not _beside: where the reference fails at this shape the candidate's
            # call (a crash, say) must not count against it. Small shapes: cheap either way.
            value = sess.reference64(inputs, key=seed)
            eager = sess.reference32(inputs, key=seed)
            eager_tf32 = self.eager_tf32(sess, inputs, seed)
        except LoadTimeout as e:
            return None, {"rescale": "not_applicable",
                          "reason": f"the pair at {desc} did not load in time: {e}"[:2000]}
        except LoadFailure as e:
            if e.role == "candidate":
                return None, {"rescale": "fail", "override": desc,
                              "reason": f"the candidate fails to load at {desc} while the "
                                        f"reference works (shape specialization): {e}"[:2000]}
            return None, {"rescale": "not_applicable",
                          "reason": f"the reference fails at {desc}: {e}"[:2000]}
        except ReferenceFailure as e:
            return None, {"rescale": "not_applicable",
                          "reason": f"the reference fails at {desc}: {e}"[:2000]}
        p = Probe(f"seed={seed}/rescaled:{desc}", inputs, value, eager, eager_tf32)
        p.calls.append(self._candidate(sess, inputs))
        p.outputs = sess.problem.outputs
        self._made(p, sess.problem.outputs)
        return p, {"rescale": "run", "override": desc}

    def _cmp01(self, rescaled: Probe | None, note: dict):
        seed_recs = self._pending.pop("CMP-01", {})

        def per_profile(prof):
            recs = list(seed_recs.get(prof, []))
            if rescaled is not None:
                r = self.judge("CMP-01", rescaled, prof, outputs=rescaled.outputs)
                if r["verdict"] == "fail":
                    ev = json.loads(r["evidence_json"])
                    ev["shape_specialization"] = note.get("override", "")
                    r["evidence_json"] = json.dumps(ev, sort_keys=True)
                recs.append(r)
            elif note.get("rescale") == "fail":
                recs.append(verdicts.record("CMP-01", prof, "fail", note["reason"],
                                            probe=f"rescaled:{note.get('override', '')}"))
            out = verdicts.combine(recs)
            ev = json.loads(out["evidence_json"])
            ev["rescale"] = note
            out["evidence_json"] = json.dumps(ev, sort_keys=True)
            return [out]
        self.add("CMP-01", per_profile)
        if rescaled is not None:
            self._release(rescaled)
