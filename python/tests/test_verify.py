"""kcv.verify and kcv.testing.assert_contracts on plain callables (candidates in
verify_kernels.py run in a pickle-kind worker; the references run here in float64)."""

import pytest

core = pytest.importorskip("kcv._core")
torch = pytest.importorskip("torch")

import kcv.testing  # noqa: E402
import verify_kernels as vk  # noqa: E402
from kcv.verify import verify  # noqa: E402


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def verdict(report, gate, profile="strict"):
    return next(g for g in report.gates if g.gate == gate and g.profile == profile).verdict


def test_correct_candidate_passes_and_report_reads_per_gate():
    report = verify(vk.softmax_by_hand, vk.softmax_reference, [randn(6, 33)])
    assert report.passed, str(report)
    assert verdict(report, "CMP-01") == "pass"
    assert verdict(report, "ORD-02") == "pass"
    assert "CMP-01" in str(report) and "PASS" in str(report)


def test_assert_contracts_names_the_failing_gate_with_evidence():
    with pytest.raises(AssertionError) as info:
        kcv.testing.assert_contracts(vk.relu_in_place, vk.relu_reference, [randn(4, 16)])
    assert "CMP-02" in str(info.value)


def test_nan_dropping_candidate_fails_exc01():
    report = verify(vk.tanh_nan_to_zero, vk.tanh_reference, [randn(3, 10)])
    assert verdict(report, "EXC-01") == "fail"
    assert not report.passed


def test_silent_bf16_downcast_fails_cmp01_under_the_eager_error_model():
    report = verify(vk.matmul_bf16, vk.matmul_reference, [randn(16, 256, seed=1), randn(256, 8, seed=2)])
    assert verdict(report, "CMP-01") == "fail", str(report)
