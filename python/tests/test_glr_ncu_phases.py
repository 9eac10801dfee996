"""bench/glr/ncu_phases.py: an Nsight Compute source page (the CSV layout `ncu -i REPORT --page
source --csv --print-source sass` writes: per kernel a "Kernel Name" line, a header, one row per
SASS instruction) folded into barrier-delimited phases, on a hand-made page whose sums are known."""

import importlib.util
import io
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "kcv_bench_ncu_phases", os.path.join(REPO, "bench", "glr", "ncu_phases.py"))
ph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ph)

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)",
          "Warp Stall Sampling (Not-issued Samples)", "Instructions Executed", "stall_barrier",
          "stall_long_sb", "stall_wait", "stall_barrier (Not Issued)"]


def page(kernels):
    """A source page: [(kernel name, [(address, sass, {reason: samples})])]."""
    out = io.StringIO()
    for name, rows in kernels:
        out.write(f'"Kernel Name","{name}",\n')
        out.write(",".join(f'"{h}"' for h in HEADER) + "\n")
        for addr, sass, by in rows:
            total = sum(by.values())
            vals = [addr, f"      {sass}", str(total), str(total), "1",
                    str(by.get("barrier", 0)), str(by.get("long_sb", 0)), str(by.get("wait", 0)),
                    "0"]
            out.write(",".join(f'"{v}"' for v in vals) + "\n")
    return out.getvalue().splitlines(keepends=True)


# Two phases: loads (LDGSTS, long scoreboard) closed by a barrier, whose wait is sampled two
# instructions after it (the skid), then products (HMMA) closed by the exit.
K = [("0x7f00", "LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]", {"long_sb": 30}),
     ("0x7f10", "@!P0 LDG.E R3, desc[UR4][R4.64]", {"wait": 10}),
     ("0x7f20", "BAR.SYNC.DEFER_BLOCKING 0x0", {"barrier": 5}),
     ("0x7f30", "ISETP.GT.AND P0, PT, R7, RZ, PT", {}),
     ("0x7f40", "BSSY B0, 0x7f80", {"barrier": 40, "wait": 2}),
     ("0x7f50", "HMMA.16816.F32.BF16 R8, R12, R16, R8", {"wait": 8}),
     ("0x7f60", "LDSM.16.M88.4 R12, [R20]", {"wait": 5}),
     ("0x7f70", "EXIT", {})]
NAME = "void kcv::glr::dev::grad_kernel<(kcv::glr::GateKind)1, (bool)1>(kcv::glr::dev::X)"


def test_read_kernels_keeps_a_kernel_listed_twice_once():
    kernels = ph.read_kernels(page([(NAME, K), (NAME, K), ("void other<1>(X)", K[:3])]))
    assert [(n, len(r)) for n, r in kernels] == [(NAME, 8), ("void other<1>(X)", 3)]
    assert ph.short_name(NAME) == "grad_kernel<1, 1>"
    assert ph.opcode("@!P0 BAR.SYNC.DEFER_BLOCKING 0x0") == "BAR.SYNC.DEFER_BLOCKING"


def test_phases_cut_after_each_barrier_and_the_skid_goes_back():
    (_, rows), = ph.read_kernels(page([(NAME, K)]))
    parts = ph.phases(rows)
    assert [len(p) for p in parts] == [3, 5]
    reasons = [c for c in rows[0] if ph.REASON.match(c)]
    (s0, by0), (s1, by1) = ph.phase_samples(parts, reasons)
    # the 40 barrier samples two instructions after the BAR are the first phase's wait
    assert (s0, s1) == (85, 15)
    assert by0 == {"barrier": 45, "long_sb": 30, "wait": 10}
    assert by1 == {"barrier": 0, "long_sb": 0, "wait": 15}


def test_phase_table_rows():
    (_, rows), = ph.read_kernels(page([(NAME, K)]))
    lines = ph.phase_table(NAME, rows)
    assert lines[0] == "### `grad_kernel<1, 1>`"
    body = [line for line in lines if line.startswith("| 0 ") or line.startswith("| 1 ")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in body]
    # phase, addresses, instr., samples %, HMMA, LDSM, LDGSTS, MUFU, LDS/STS, LDG/STG, stalls, hot
    assert cells[0][:10] == ["0", "x7f00–x7f20", "3", "85.0", "0", "0", "1", "0", "0", "1"]
    assert cells[0][10] == "barrier 53, long_sb 35"
    assert cells[1][:10] == ["1", "x7f30–x7f70", "5", "15.0", "1", "1", "0", "0", "0", "0"]
    assert cells[1][10] == "wait 100"
    assert cells[1][11].startswith("`BSSY B0, 0x7f80` (42.0)")


def test_hot_table_lists_instructions_by_samples_with_their_phase_and_stalls():
    (_, rows), = ph.read_kernels(page([(NAME, K)]))
    lines = ph.hot_table(rows, 3)
    assert lines[0] == "The 3 hottest instructions:"
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:7]]
    # BSSY 42 samples (barrier 40, wait 2), LDGSTS 30 (long_sb), LDG 10 (wait), of 100
    assert cells[0] == ["x7f40", "1", "`BSSY B0, 0x7f80`", "42.0", "barrier 95, wait 5"]
    assert cells[1] == ["x7f00", "0", "`LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]`", "30.0",
                        "long_sb 100"]
    assert cells[2][:2] == ["x7f10", "0"] and cells[2][3:] == ["10.0", "wait 100"]
    assert ph.hot_table(rows, 0) == []
    assert len(ph.hot_table(rows, 50)) == 4 + 6 + 1  # the 6 instructions with samples only


def test_fold_a_file(tmp_path):
    path = tmp_path / "src.csv"
    path.write_text("".join(page([(NAME, K)])))
    kernels, lines = ph.fold(str(path), min_share=20.0)
    assert len(kernels) == 1
    assert any(line.startswith("| 0 |") for line in lines)
    assert not any(line.startswith("| 1 |") for line in lines)  # 15 % < 20 %
    assert any(line.startswith("| 1 others | | | 15.0 |") for line in lines)


def test_loops_are_backward_branches():
    body = [("0x8000", "IMAD R1, R2, 0x10, RZ", {"wait": 6}),
            ("0x8010", "LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]", {"long_sb": 10}),
            ("0x8020", "@!P1 BRA 0x8000", {"wait": 4}),
            ("0x8030", "@P0 BRA 0x8050", {}),  # forward: not a loop
            ("0x8040", "EXIT", {"wait": 80})]
    (_, rows), = ph.read_kernels(page([(NAME, body)]))
    found = ph.loops(rows)
    assert [(a, b, len(r)) for a, b, r in found] == [("0x8000", "0x8020", 3)]
    lines = ph.loop_table(rows)
    assert lines[-2] == "| x8000–x8020 | 3 | 20.0 | LDGSTS 1 | 1 |"


def test_capture_then_fold_with_a_stand_in_ncu(tmp_path):
    """The default mode's plumbing, with a stand-in for ncu: the capture's -o names the report,
    the export (-i REPORT --page source --csv --print-source sass) prints the page, and the
    tables come out of it; a failing ncu gives exit 1 and its log."""
    import subprocess
    import sys
    csv_text = "".join(page([(NAME, K)]))
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import sys\n"
        "a = sys.argv[1:]\n"
        "if '-o' in a:\n"
        "    open(a[a.index('-o') + 1] + '.ncu-rep', 'w').write('report')\n"
        "elif '-i' in a:\n"
        "    assert a[a.index('--page') + 1] == 'source' and '--csv' in a\n"
        f"    sys.stdout.write({csv_text!r})\n"
        "else:\n"
        "    sys.exit(3)\n")
    fake.chmod(0o755)
    out = tmp_path / "phases.md"
    tool = os.path.join(REPO, "bench", "glr", "ncu_phases.py")
    proc = subprocess.run([sys.executable, tool, "--ncu", str(fake), "--member", "gdn",
                           "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = out.read_text()
    assert "gdn at shape 1, kcv bf16" in text and "### `grad_kernel<1, 1>`" in text
    assert (tmp_path / "phases" / "gdn_source.csv").exists()
    assert not (tmp_path / "phases" / "gdn_source.ncu-rep").exists()  # the CSV keeps what counts
    fake.write_text("#!/bin/sh\nexit 3\n")
    proc = subprocess.run([sys.executable, tool, "--ncu", str(fake), "--out", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "ncu exit 3" in proc.stdout
