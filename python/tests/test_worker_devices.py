"""kcv.worker.devices: the CUDA path's layout-keeping copy and its write-back, run on the CPU by
copying to the CPU itself (copy_with_layout always copies)."""

import pytest
import torch

from kcv.worker.devices import copy_back, copy_with_layout, snapshot, to_device


def padded_view() -> torch.Tensor:
    """A 3 x 4 view over a 3 x 6 buffer: two elements of padding after each row."""
    return torch.arange(18, dtype=torch.float32).reshape(3, 6)[:, :4]


def test_the_copy_keeps_strides_and_padding_and_the_cpu_gets_the_view_itself():
    view = padded_view()
    moved = copy_with_layout(view, "cpu")
    assert moved.stride() == view.stride() and torch.equal(moved, view)
    assert moved.data_ptr() != view.data_ptr()
    assert to_device(view, "cpu") is view and snapshot(view, view) is None
    empty = torch.empty(0, 5)
    assert snapshot(empty, copy_with_layout(empty, "cpu")) is None


@pytest.mark.parametrize("compare_on", ["device", "host"])
def test_a_write_reaches_the_view_even_in_the_padding(compare_on):
    base = torch.arange(18, dtype=torch.float32).reshape(3, 6)
    view = base[:, :4]
    moved = copy_with_layout(view, "cpu")
    before = snapshot(view, moved) if compare_on == "device" else None
    assert (before is not None) == (compare_on == "device")
    moved[1, 2] = -1.0
    moved.as_strided((16,), (1,))[4] = -2.0  # the padding after row 0, inside the span
    copy_back(view, moved, before)
    assert view[1, 2] == -1.0 and base[0, 4] == -2.0
    assert base[2, 4] == 16.0  # after the span's last element: never copied, never written


def test_an_untouched_input_is_judged_on_the_device_and_not_written_back():
    view = padded_view()
    moved = copy_with_layout(view, "cpu")
    before = snapshot(view, moved)
    view[0, 0] = 99.0  # the host side is not consulted, so a write-back would show here
    copy_back(view, moved, before)
    assert view[0, 0] == 99.0


def test_the_snapshot_is_a_copy_not_the_moved_tensor():
    view = padded_view()
    moved = copy_with_layout(view, "cpu")
    before = snapshot(view, moved)
    moved[0, 0] = 5.0
    assert before[0] == 0.0
