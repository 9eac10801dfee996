"""kcv.worker.devices: the CUDA path's layout-keeping copy and its write-back, run on the CPU by
copying to the CPU itself (copy_with_layout always copies), and the references' layout_copy
(strides kept at another dtype, broadcast views included)."""

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



def test_the_references_copies_keep_every_layout_at_their_own_dtype():
    from kcv.worker.devices import layout_copy

    base = torch.arange(44, dtype=torch.float32)
    views = {"padded": base.as_strided((4, 8), (11, 1)), "transposed": base[:32].reshape(8, 4).t(),
             "broadcast": base[:8].expand(4, 8), "offset": base.as_strided((3, 2), (1, 5), 7),
             "empty": base[:0].reshape(0, 4)}
    for name, view in views.items():
        for dtype in (torch.float64, torch.float32):
            got = layout_copy(view, "cpu", dtype)
            assert got.stride() == view.stride() and got.dtype == dtype, name
            assert torch.equal(got, view.to(dtype)), name
            assert got.numel() == 0 or got.data_ptr() != view.data_ptr(), name
    assert not layout_copy(views["padded"], "cpu", torch.float64).is_contiguous()
