"""kcv.worker.devices: the CUDA path's layout-keeping copy and its write-back, run on the CPU by
copying to the CPU itself (copy_with_layout always copies)."""

import torch

from kcv.worker.devices import copy_back, copy_with_layout, to_device


def test_the_copy_keeps_strides_and_padding_and_the_cpu_gets_the_view_itself():
    view = torch.arange(18, dtype=torch.float32).reshape(3, 6)[:, :4]  # 2 padding per row
    moved = copy_with_layout(view, "cpu")
    assert moved.stride() == view.stride() and torch.equal(moved, view)
    assert moved.data_ptr() != view.data_ptr()
    assert to_device(view, "cpu") is view


def test_a_write_reaches_the_view_even_in_the_padding_and_nothing_past_the_span():
    base = torch.arange(18, dtype=torch.float32).reshape(3, 6)
    view = base[:, :4]
    moved = copy_with_layout(view, "cpu")
    moved[1, 2] = -1.0
    moved.as_strided((16,), (1,))[4] = -2.0  # the padding after row 0, inside the span
    copy_back(view, moved)
    assert view[1, 2] == -1.0 and base[0, 4] == -2.0
    assert base[2, 4] == 16.0 and base[2, 5] == 17.0  # past the span's last element

