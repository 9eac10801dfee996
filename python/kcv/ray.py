"""kcv on Ray: the audit's kernels on a Ray cluster, and the verifier as a Ray actor.

`kcv audit ... --ray ADDRESS` (or `auto`, or `local` for a Ray instance of this host) runs the
audit's scheduler (orchestrator.Auditor: the store, todo and resume, suspects, poison, the
kernels set aside to run alone) at the driver, as a local audit does, and the kernels themselves
on Verifier actors: each actor runs one kernel at a time through the same
orchestrator.run_kernel a local slot calls (kernel.audit_kernel, then kcv._core.verify_module)
and returns its typed KernelRun; the driver alone writes the store, one transaction per kernel,
as each result comes back. An actor holds one GPU (`num_gpus=1`) with --device cuda, and
`--worker-threads` CPUs (default 1) either way; it keeps its warm worker parents
(forkservers.py) for its whole life, so a kernel on Ray starts its workers as warm as a local
slot's. Candidates run in their per-kernel bubblewrap sandbox inside the actor, exactly as
locally (kcv.sandbox); the actor probes the sandbox on its own node and its verdicts carry the
`unsandboxed` mark where it has none.

Why actors and not one stateless task per kernel: a task's process would start cold worker
parents for every kernel (torch imported again, seconds per kernel); an actor's calls are Ray
tasks of that actor and keep them. Builds are not a separate stage here: a kernel's
`load_inline` or Triton build happens in its candidate worker's load, on the actor that runs it
(kcv audit has no separate build pool), into --cache-dir, which should be on a file system every
node sees.

Scheduling on Ray: Ray's resources are the admission (one kernel per actor, one GPU per actor);
the driver's host-memory budget (--host-memory-gb) does not reach other nodes and is not used. A
kernel too large to run beside others (--alone-input-gb) is run at the end with no other kernel
in flight on the cluster, as a local audit runs it with no other slot running. An actor that
dies while its kernel runs (its node lost, its process killed) leaves the kernel `running`
in the store, as a dead orchestrator leaves it: the next run runs it first, alone, and after
--max-attempts such runs records it as poison; the run goes on with a fresh actor.

The actor API for training loops: `Verifier.verify(row)` takes a row (`id`, `reference_code`,
`candidate_code`, optional `contract`, read by the corpus reader of `kcv audit`), judges it under
its declared profile (the contract's `profile`, default strict) and returns the kernel's record
and a reward (reward())."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile

import ray

from kcv import sandbox
from kcv.audit.forkservers import ForkServers
from kcv.audit.kernel import KernelConfig
from kcv.audit.orchestrator import (GENERATOR_VERSION, AuditConfig, Auditor, AuditRefused,
                                    KernelRun, StoreTampered, run_kernel)

PROFILES = ("strict", "cuda-default", "fast-math", "triton-default", "pytorch-eager")
# Statuses where the harness, not the candidate, decided the outcome (docs/08 §5): a reward of 0
# there says nothing about the candidate, so verify() marks the reward undecided.
HARNESS_STATUSES = ("reference_error", "environment", "error", "malformed", "out_of_memory",
                    "load_killed", "poison")
# Environment variables the driver hands its actors (Ray's runtime_env): what kcv._core reads,
# and malloc's huge-page tunable that the audit's entry sets (Ray starts an actor's process with
# its runtime_env, so glibc reads it there as in a local worker).
FORWARDED_ENV = ("KCV_SANDBOX", "KCV_SANDBOX_HIDE", "GLIBC_TUNABLES")


def reward(outcome: dict, profile: str) -> float:
    """1.0 when the kernel ran at the reference shape (status `ok`) and every gate judged under
    `profile` is `pass` or `not_applicable`, with at least one `pass`; else 0.0. No partial
    credit: a kernel that fails one tolerance-free gate is as wrong as one that fails all of
    them, and a weighting of gates would need a justification the gates do not give."""
    if outcome.get("status") != "ok":
        return 0.0
    mine = [v["verdict"] for v in outcome.get("verdicts", []) if v["profile"] == profile]
    ok = mine and all(v in ("pass", "not_applicable") for v in mine) and "pass" in mine
    return 1.0 if ok else 0.0


def declared_profile(contract) -> str:
    """The contract's profile, spelled as the profiles list does (`_` for `-`, any case);
    strict when none is declared (docs/01)."""
    if isinstance(contract, str):
        contract = json.loads(contract)
    name = str((contract or {}).get("profile") or "strict").strip().lower().replace("_", "-")
    return name


class VerifierCore:
    """The verifier in one process: kernels run one at a time through orchestrator.run_kernel
    under this object's KernelConfig, with warm worker parents that live as long as it does.
    `Verifier` (below) is this class as a Ray actor; it also works without Ray (tests)."""

    def __init__(self, config: KernelConfig | None = None, *, warm: bool = True, **fields):
        cfg = config if config is not None else KernelConfig(profiles=["strict"])
        # What holds threads or processes of another process (the driver's memory gate and GPU
        # pool, its fork servers) is not this actor's: Ray's resources admit its kernels.
        box = sandbox.support()
        cfg = dataclasses.replace(cfg, memory_gate=None, gpu_pool=None, forkservers=None,
                                  unsandboxed=None if box["available"] else box["reason"],
                                  **fields)
        if cfg.cache_dir:
            os.makedirs(cfg.cache_dir, exist_ok=True)
        if warm:
            roles = ("reference",) if cfg.unsandboxed is None else ("reference", "candidate")
            cfg = dataclasses.replace(cfg, forkservers=ForkServers([None], cfg.worker_threads,
                                                                   roles))
        self.cfg = cfg

    def sandbox(self) -> str | None:
        """Why candidates run unsandboxed on this actor's node, or None (sandboxed)."""
        return self.cfg.unsandboxed

    def node(self) -> str:
        return os.uname().nodename

    def audit(self, row: dict, alone: bool = False) -> KernelRun:
        """One corpus row (as kcv._core.read_corpora gives it) through the audit's kernel path."""
        return run_kernel(row, self.cfg, alone=alone)

    def verify(self, row: dict) -> dict:
        """One row for a training loop: {id, status, profile, reward, decided, gates (gate ->
        verdict under the profile), replica_verdict, message, verdicts (the store's records)}.
        `decided` is False where the harness, not the candidate, set the outcome (a harness
        status, or a gate the harness could not judge: verdict `error`): a trainer may drop
        those samples rather than learn from a 0 the candidate did not earn."""
        profile = declared_profile(row.get("contract"))
        parsed, problem = self._read_row(row)
        if parsed is None:
            outcome = {"kernel_id": str(row.get("id", "")), "status": "malformed",
                       "replica_verdict": None, "verdicts": [], "message": problem}
        elif profile not in PROFILES:  # read_corpora refuses it first; kept for clarity
            outcome = {"kernel_id": parsed["id"], "status": "malformed", "replica_verdict": None,
                       "verdicts": [], "message": f"contract profile {profile!r} unknown"}
        else:
            cfg = dataclasses.replace(self.cfg, profiles=[profile])
            outcome = run_kernel(parsed, cfg, alone=True).outcome
        mine = [v for v in outcome.get("verdicts", []) if v["profile"] == profile]
        decided = (outcome["status"] not in HARNESS_STATUSES
                   and all(v["verdict"] != "error" for v in mine))
        return {"id": outcome.get("kernel_id", row.get("id")), "status": outcome["status"],
                "profile": profile, "reward": reward(outcome, profile), "decided": decided,
                "gates": {v["gate"]: v["verdict"] for v in mine},
                "replica_verdict": outcome.get("replica_verdict"),
                "message": outcome.get("message", ""), "verdicts": outcome.get("verdicts", [])}

    @staticmethod
    def _read_row(row: dict) -> tuple[dict | None, str]:
        """The row through the audit's corpus reader (kcv._core.read_corpora: the same defaults,
        the same contract checks), or (None, why) when it is malformed."""
        from kcv import _core

        with tempfile.TemporaryDirectory(prefix="kcv-verifier-") as d:
            path = os.path.join(d, "verifier.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            good, bad = _core.read_corpora([path], "0/1")
        if good:
            return {k: v for k, v in good[0].items() if k not in ("file", "line")}, ""
        return None, bad[0]["message"] if bad else "the row was not read"

    def close(self) -> None:
        if self.cfg.forkservers is not None:
            self.cfg.forkservers.close()
            self.cfg = dataclasses.replace(self.cfg, forkservers=None)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit
            pass


Verifier = ray.remote(VerifierCore)


class RefusedOnRay(AuditRefused):
    """The audit cannot run on this Ray cluster as asked (the message says why)."""


def connect(address: str) -> None:
    """ray.init for the driver: `local` starts a Ray instance of this host; `auto` or an
    address joins a running cluster. Ray's own logs stay in its session directory."""
    if ray.is_initialized():
        return
    kw = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address == "local":
        ray.init(**kw)
    else:
        ray.init(address=address, **kw)


class RayAuditor(Auditor):
    """Auditor whose kernels run on Verifier actors (module docstring)."""

    def __init__(self, opts: AuditConfig, address: str):
        super().__init__(opts)
        self.address = address
        self.actor_options: dict = {}
        self.slots = 0
        self.actors: list = []
        self._local_sandbox = self.cfg.unsandboxed

    def _plan(self) -> None:
        """The device, the actors' resources and how many run at once, from the cluster."""
        o = self.opts
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        device = o.device
        if device == "auto":
            device = "cuda" if gpus else "cpu"
        if device == "cuda" and not gpus:
            raise RefusedOnRay("--device cuda: the Ray cluster has no GPU "
                               f"(cluster resources: {resources})")
        threads = o.worker_threads or 1
        self.actor_options = {"num_cpus": threads, "num_gpus": 1 if device == "cuda" else 0}
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        if env:
            self.actor_options["runtime_env"] = {"env_vars": env}
        fit = gpus if device == "cuda" else max(1, int(resources.get("CPU", 1)) // threads)
        self.slots = max(1, o.jobs if o.jobs else fit)
        self.device, self.threads = device, threads

    def _actor_config(self) -> KernelConfig:
        return dataclasses.replace(self.cfg, device=self.device, worker_threads=self.threads,
                                   memory_gate=None, gpu_pool=None, forkservers=None)

    def _new_actor(self):
        return Verifier.options(**self.actor_options).remote(
            self._actor_config(), warm=self.opts.warm_workers)

    def run(self) -> dict:
        # Each actor says for its own node (_warn_unsandboxed), not this host's probe.
        self.cfg = dataclasses.replace(self.cfg, unsandboxed=None)
        try:
            todo = self.begin(GENERATOR_VERSION)
        finally:
            self.cfg = dataclasses.replace(self.cfg, unsandboxed=self._local_sandbox)
        if not todo and not self.suspects:
            return self.end()
        self._plan()
        self.progress.message(f"kcv audit: {len(todo) + len(self.suspects)} kernel(s) on Ray "
                              f"({self.address}): {self.slots} actor(s), --device "
                              f"{self.device}, {self.actor_options['num_gpus']} GPU and "
                              f"{self.threads} CPU each")
        self.actors = [self._new_actor() for _ in range(min(self.slots, len(todo) or 1))]
        try:
            self._warn_unsandboxed(self.actors)
            return self._run_on(todo)
        finally:
            for a in self.actors:
                ray.kill(a)

    def _warn_unsandboxed(self, actors) -> None:
        reasons = sorted({r for r in ray.get([a.sandbox.remote() for a in actors]) if r})
        self.cfg = dataclasses.replace(self.cfg, unsandboxed=reasons[0] if reasons else None)
        for why in reasons:
            print(f"kcv audit: WARNING: candidates run UNSANDBOXED on Ray actors ({why}): a "
                  "candidate can read and write what the actor's user can; every verdict it "
                  "judges is marked unsandboxed (docs/10_threat_model.md)", file=sys.stderr,
                  flush=True)

    def _run_on(self, todo: list[dict]) -> dict:
        for row in self.suspects:  # one at a time, nothing else in flight
            self._run_alone(row, may_retry=not self.opts.all_alone)
        queue = list(todo)
        idle = list(self.actors)
        flight: dict = {}  # ObjectRef -> (actor, row, t0)
        while (queue or flight) and self.stop is None:
            while idle and queue and not self._out_of_time():
                actor, row = idle.pop(), queue.pop(0)
                t0 = self._start_kernel(row)
                flight[actor.audit.remote(row, False)] = (actor, row, t0)
            if not flight:
                break  # out of time: the rest stays pending
            (ref,), _ = ray.wait(list(flight), num_returns=1)
            actor, row, t0 = flight.pop(ref)
            idle.append(self._collect(ref, actor, row, t0, may_retry=True))
        if self.stop is not None:
            raise self.stop
        for row in self.retry_alone:
            self._run_alone(row, may_retry=False)
        return self.end()

    def _run_alone(self, row: dict, may_retry: bool) -> None:
        """One kernel on the first actor, with nothing else in flight."""
        if self._out_of_time() or self.stop is not None:
            return
        t0 = self._start_kernel(row)
        actor = self.actors[0]
        self._collect(actor.audit.remote(row, not may_retry), actor, row, t0, may_retry)
        if self.stop is not None:
            raise self.stop

    def _collect(self, ref, actor, row: dict, t0: float, may_retry: bool):
        """A kernel's result into the store (Auditor._finish_kernel). Returns the actor to use
        next: a fresh one, in the dead one's place in self.actors, when this one died."""
        try:
            run = ray.get(ref)
        except ray.exceptions.RayActorError as e:
            # As a dead orchestrator: the kernel stays running, a suspect of the next run.
            self.progress.warning(f"kcv audit: {row['id']}: its Ray actor died while it ran "
                                  f"({type(e).__name__}); left running: the next run runs it "
                                  "first, alone")
            fresh = self._new_actor()
            self.actors[self.actors.index(actor)] = fresh
            return fresh
        except Exception as e:  # noqa: BLE001 - an error of ours: give the attempt back
            self.progress.message(f"kcv audit: {row['id']}: internal error on Ray: "
                                  f"{type(e).__name__}: {e}; left for the next run")
            self.store.release_running(self.run_id, row["id"])
            return actor
        try:
            self._finish_kernel(row, run, t0, may_retry)
        except StoreTampered:
            pass  # self.stop is set: the loop ends and raises it
        return actor


def run_audit_on_ray(opts: AuditConfig, address: str) -> dict:
    """orchestrator.run_audit with the kernels on Ray."""
    from kcv.audit import orchestrator

    connect(address)
    opts = orchestrator.with_command_line(opts)
    return orchestrator.run_audit(opts, auditor=RayAuditor(opts, address))
