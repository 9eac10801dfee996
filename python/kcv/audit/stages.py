"""A kernel's way through the audit as typed state: the stages it reaches and what the
scheduler does with it when its run returns.

Stages, in order (Stage): the row taken (`load`), the problem sized by the reference alone
(`size`), the judge shape chosen (`choose_shape`: the reference shape or a reduced one),
`admitted` (its GPU and its share of host memory held), then kcv._core.verify_module's three
steps: the workers loaded (`warm_up`), KernelBench's check (`replica`), every gate's probes
(`probes`); last, `record` (its outcome written to the store). kernel.audit_kernel enters the
first four as it does them; verify_module runs the next three in C++ in one call, so they are
entered afterwards from the timings it returns (a step it timed was reached). The scheduler
enters `record` when it writes the store.

A run ends in one Decision: record the outcome, run the kernel again alone at the end (large
inputs, an out-of-memory retry), or postpone it until its host-memory estimate fits. The
decision is a value the kernel's run returns, never an exception thrown through it."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field


class Stage(enum.Enum):
    LOAD = "load"
    SIZE = "size"
    CHOOSE_SHAPE = "choose_shape"
    ADMITTED = "admitted"
    WARM_UP = "warm_up"
    REPLICA = "replica"
    PROBES = "probes"
    RECORD = "record"


# verify_module's timings (kernel.py) that say it reached a stage.
VERIFY_STAGES = ((Stage.WARM_UP, "load"), (Stage.REPLICA, "replica"), (Stage.PROBES, "gates"))


class Decision(enum.Enum):
    RECORD = "record"  # write the outcome (a final status) to the store
    RUN_ALONE = "run_alone"  # run it again at the end with nothing beside it
    POSTPONE = "postpone"  # run it again once its host-memory estimate fits

    @staticmethod
    def of(outcome: dict) -> "Decision":
        """The decision an outcome dict carries (kernel.py's scheduling statuses)."""
        status = outcome.get("status")
        if status == "run_alone":
            return Decision.RUN_ALONE
        if status == "postponed":
            return Decision.POSTPONE
        return Decision.RECORD


@dataclass
class KernelState:
    """The stages one kernel has entered, each with its time since the kernel began."""
    kernel_id: str
    started: float = field(default_factory=time.monotonic)
    entered: list = field(default_factory=list)  # [(Stage, seconds since started)]

    def enter(self, stage: Stage) -> None:
        if self.entered and list(Stage).index(stage) <= list(Stage).index(self.entered[-1][0]):
            raise ValueError(f"{self.kernel_id}: stage {stage.value} after "
                             f"{self.entered[-1][0].value}")
        self.entered.append((stage, time.monotonic() - self.started))

    def enter_verified(self, timings: dict) -> None:
        """The stages verify_module reached, read from the timings it returned."""
        for stage, key in VERIFY_STAGES:
            if key in timings:
                self.enter(stage)

    @property
    def stage(self) -> Stage | None:
        """The last stage entered (None before the first)."""
        return self.entered[-1][0] if self.entered else None

    def record(self) -> tuple:
        """The stages as ((name, seconds), ...): what KernelRun carries."""
        return tuple((s.value, round(t, 4)) for s, t in self.entered)
