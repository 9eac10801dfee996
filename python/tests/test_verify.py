"""kcv.verify and kcv.testing.assert_contracts on plain callables, through the pipeline the audit
uses (kcv._core.verify_module with "pickle" loads: the reference and the candidates of
verify_kernels.py each run in a `python -m kcv.worker`). A correct candidate passes every
applicable gate with no finding; each broken one fails the gate of its defect with the finding
that names it, under every profile asked for; a candidate that raises or returns the wrong shape
gets a kernel status and no gate verdicts; the contract's "deterministic": false makes ORD-02
not applicable; assert_contracts passes silently on a correct candidate and lists each failing
gate with its finding and probe otherwise. Bad arguments are refused before a worker starts."""

import re

import pytest

core = pytest.importorskip("kcv._core")
torch = pytest.importorskip("torch")

import kcv.testing  # noqa: E402
import verify_kernels as vk  # noqa: E402
from kcv.verify import verify  # noqa: E402

GATES = {"CMP-01", "CMP-02", "CMP-03", "ORD-01", "ORD-02", "ORD-03", "EXC-01", "EXC-02",
         "PRC-01", "PRC-02", "RES-01", "RES-02"}


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def gate(report, name, profile="strict"):
    return next(g for g in report.gates if g.gate == name and g.profile == profile)


def failures(report, profile="strict"):
    return {g.gate: g.finding for g in report.failures if g.profile == profile}


def test_correct_candidate_passes_and_report_reads_per_gate():
    report = verify(vk.softmax_by_hand, vk.softmax_reference, [randn(6, 33)])
    assert report.passed, str(report)
    assert (report.status, report.replica) == ("ok", "accepted")
    assert {g.gate for g in report.gates} == GATES and {g.profile for g in report.gates} == {"strict"}
    for name in ("CMP-01", "CMP-02", "CMP-03", "ORD-02", "EXC-01", "RES-01"):
        g = gate(report, name)
        assert (g.verdict, g.finding) == ("pass", "none"), g
    assert all(g.finding == "none" for g in report.gates)
    cmp01 = gate(report, "CMP-01")
    assert 0 <= cmp01.worst_ratio <= 1 and "within the bound" in cmp01.evidence["summary"]
    text = str(report)
    assert text.startswith("kcv.verify: PASS (status ok)") and "CMP-01" in text
    assert kcv.testing.assert_contracts(vk.softmax_by_hand, vk.softmax_reference,
                                        [randn(6, 33)]).passed  # silent, returns the report


def test_a_non_deterministic_contract_under_two_profiles():
    report = verify(vk.softmax_by_hand, vk.softmax_reference, [randn(6, 33)],
                    contract={"deterministic": False}, profiles=["strict", "fast-math"])
    assert report.passed, str(report)
    assert {g.profile for g in report.gates} == {"strict", "fast-math"}
    assert len(report.gates) == 2 * len(GATES)
    for profile in ("strict", "fast-math"):
        ord02 = gate(report, "ORD-02", profile)
        assert ord02.verdict == "not_applicable" and "non-deterministic" in ord02.reason


def test_assert_contracts_names_the_failing_gate_with_its_finding_and_probe():
    with pytest.raises(AssertionError) as info:
        kcv.testing.assert_contracts(vk.relu_in_place, vk.relu_reference, [randn(4, 16)])
    text = str(info.value)
    assert text.startswith("kcv contracts violated by relu_in_place")
    assert "CMP-02 [strict] input_modified: call 0: input0 modified" in text
    assert "RES-01 [strict] input_modified" in text and " probe " in text
    assert not any(line.startswith("  status ") for line in text.splitlines())  # it ran


def test_nan_dropping_candidate_fails_exc01_with_a_class_mismatch():
    report = verify(vk.tanh_nan_to_zero, vk.tanh_reference, [randn(3, 10)])
    assert not report.passed and report.replica == "accepted"  # KernelBench's check accepts it
    assert failures(report) == {"EXC-01": "class_mismatch"}, str(report)
    ev = gate(report, "EXC-01").evidence
    assert ev["candidate_value"] == 0.0 and ev["oracle_value"] == "nan"
    assert str(report).startswith("kcv.verify: FAIL (status ok)")


def test_silent_bf16_downcast_fails_the_value_gates():
    report = verify(vk.matmul_bf16, vk.matmul_reference,
                    [randn(16, 256, seed=1), randn(256, 8, seed=2)])
    got = failures(report)
    assert got["CMP-01"] == "value_over_bound" and got["PRC-01"] == "precision_lost", str(report)
    assert gate(report, "CMP-01").worst_ratio > 100
    assert "CMP-02" not in got and "RES-01" not in got  # structurally it is fine


@pytest.mark.parametrize("candidate,status,says", [
    (vk.softmax_raises, "runtime_error", "ValueError: not implemented for this shape"),
    (vk.softmax_wrong_shape, "bad_output", "expected f32 [6, 33], got f32 [5, 33]"),
])
def test_a_candidate_that_fails_at_the_given_inputs_gets_a_status_and_no_verdicts(
        candidate, status, says):
    report = verify(candidate, vk.softmax_reference, [randn(6, 33)])
    assert (report.status, report.gates, report.passed) == (status, [], False)
    assert says in report.message and report.replica == "rejected"
    with pytest.raises(AssertionError, match=f"status {status}: .*{re.escape(says)}"):
        kcv.testing.assert_contracts(candidate, vk.softmax_reference, [randn(6, 33)])


def test_bad_arguments_are_refused_before_any_worker_starts():
    with pytest.raises(ValueError, match="unknown profile nope"):
        verify(vk.softmax_by_hand, vk.softmax_reference, [randn(2, 3)], profiles=["nope"])
    try:
        import cloudpickle  # noqa: F401
    except ImportError:
        with pytest.raises(TypeError, match="cannot be pickled"):
            verify(lambda x: x, vk.softmax_reference, [randn(2, 3)])


def test_the_workers_fork_from_warm_parents_and_a_dead_parent_is_replaced():
    """After a call the warm parents run; a parent that dies is replaced by the next call, whose
    verdicts are those of cold workers (warm_workers=False)."""
    import os
    import signal

    import kcv.verify as kv

    args = (vk.softmax_by_hand, vk.softmax_reference, [randn(6, 33)])
    assert verify(*args).passed
    servers = kv._servers
    assert servers is not None and servers.running() and not servers.wait_ready(0)
    os.kill(servers.pid("candidate", None), signal.SIGKILL)
    servers._servers[("candidate", None)].proc.wait()
    warm = verify(*args)
    assert kv._servers is not servers and kv._servers.running()
    cold = verify(*args, warm_workers=False)
    assert [(g.gate, g.verdict, g.worst_ratio) for g in warm.gates] == \
        [(g.gate, g.verdict, g.worst_ratio) for g in cold.gates]
