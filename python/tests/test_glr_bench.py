"""bench/glr: the FLOP and byte model (roofline.py) on hand-computed cases, the target table
from made-up times, and bench.py's CPU path end to end (--device cpu --shape tiny in a
subprocess: kcv.glr's CPU path timed with time.perf_counter, fla and FlashQLA skipped with a
reason, every member's rows in the markdown with numbers, two interleaved rounds and their
spread)."""

import importlib.util
import math
import os
import re
import subprocess
import sys
import time
import types

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_DIR = os.path.join(REPO, "bench", "glr")
MEMBERS = ["gdn", "kda", "gla", "ssd", "la", "deltanet"]


def _load(name):
    spec = importlib.util.spec_from_file_location(f"kcv_bench_{name}",
                                                  os.path.join(BENCH_DIR, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rl = _load("roofline")


# ------------------------------------------------------------------ the FLOP model


def test_chunk_flops_small_dims_by_hand():
    # c = 2, K = 3, V = 5:
    # linear forward  2c²K + 2c²V + 4cKV = 24 + 40 + 120 = 184
    # linear backward 6c²K + 4c²V + 10cKV = 72 + 80 + 300 = 452
    # delta forward   6c²K + 4c²V + 6cKV + c³/3 = 72 + 80 + 180 + 8/3
    # delta backward  16c²K + 10c²V + 16cKV + 4c³ = 192 + 200 + 480 + 32 = 904
    for m in ("la", "ssd", "gla"):
        assert rl.chunk_flops(m, "fwd", 2, 3, 5) == 184
        assert rl.chunk_flops(m, "bwd", 2, 3, 5) == 452
        assert rl.chunk_flops(m, "fwd+bwd", 2, 3, 5) == 636
    for m in ("deltanet", "gdn", "kda"):
        assert rl.chunk_flops(m, "fwd", 2, 3, 5) == pytest.approx(332 + 8 / 3)
        assert rl.chunk_flops(m, "bwd", 2, 3, 5) == 904


def test_chunk_flops_at_64_128():
    # c = 64, K = V = 128: c²K = 524288, cKV = 1048576, c³ = 262144
    assert rl.chunk_flops("la", "fwd", 64, 128, 128) == 6_291_456
    assert rl.chunk_flops("la", "bwd", 64, 128, 128) == 15_728_640
    assert rl.chunk_flops("gdn", "fwd", 64, 128, 128) == pytest.approx(11_534_336 + 262144 / 3)
    assert rl.chunk_flops("gdn", "bwd", 64, 128, 128) == 31_457_280


def test_products_are_named_matmuls():
    for m in MEMBERS:
        for p in ("fwd", "bwd"):
            prods = rl.products(m, p, 64, 128, 96)
            assert all(len(t) == 4 and t[0] for t in prods)
            assert len({t[0] for t in prods}) == len(prods)
    with pytest.raises(ValueError):
        rl.products("mamba", "fwd", 64, 128, 128)


def test_chunk_lengths_and_varlen_flops():
    assert rl.chunk_lengths([130]) == [64, 64, 2]
    assert rl.chunk_lengths([64, 1, 0]) == [64, 1]
    assert rl.chunk_lengths([100], chunk=32) == [32, 32, 32, 4]
    # two heads, sequences of 65 and 1 tokens: chunks 64, 1, 1
    want = 2 * (rl.chunk_flops("ssd", "fwd", 64, 8, 8) + 2 * rl.chunk_flops("ssd", "fwd", 1, 8, 8))
    assert rl.flops("ssd", [65, 1], 2, 8, 8, "fwd") == want
    # a dense batch is B sequences of T
    assert rl.flops("gdn", [8192], 32, 128, 128, "fwd+bwd") == pytest.approx(
        4096 * (11_534_336 + 262144 / 3 + 31_457_280))


# ------------------------------------------------------------------ the byte model


def test_bytes_by_hand():
    # GDN, 10 tokens in 2 sequences, H = 1, K = 2, V = 3, bf16 q/k/v/o/β, fp32 g and states:
    # q 40, k 40, v 60, g 40, β 20, h0 48 (inputs 248); o 60, ht 48
    t = rl.tensor_bytes("gdn", 10, 2, 1, 2, 3)
    assert t == {"q": 40, "k": 40, "v": 60, "g": 40, "beta": 20, "h0": 48, "o": 60, "ht": 48}
    assert rl.hbm_bytes("gdn", 10, 2, 1, 2, 3, "fwd") == 356
    # backward: inputs, dO and dht read (248 + 60 + 48), gradients written (248)
    assert rl.hbm_bytes("gdn", 10, 2, 1, 2, 3, "bwd") == 604
    assert rl.hbm_bytes("gdn", 10, 2, 1, 2, 3, "fwd+bwd") == 960
    # per-channel gate (KDA, GLA): g is [tokens, HV, K]; LA and DeltaNet have no g
    assert rl.tensor_bytes("gla", 10, 2, 1, 2, 3)["g"] == 80
    assert "beta" not in rl.tensor_bytes("gla", 10, 2, 1, 2, 3)
    assert "g" not in rl.tensor_bytes("deltanet", 10, 2, 1, 2, 3)
    assert rl.tensor_bytes("deltanet", 10, 2, 1, 2, 3)["beta"] == 20
    assert set(rl.tensor_bytes("la", 10, 2, 1, 2, 3)) == {"q", "k", "v", "h0", "o", "ht"}


def test_bytes_at_shape_1():
    # B1·T8192·H32·D128 GDN forward: q,k,v 3·8192·32·128·2, g 8192·32·4, β 8192·32·2,
    # h0 and ht 32·128·128·4 each, o 8192·32·128·2
    want = 3 * 67_108_864 + 1_048_576 + 524_288 + 2 * 2_097_152 + 67_108_864
    assert rl.hbm_bytes("gdn", 8192, 1, 32, 128, 128, "fwd") == want == 274_202_624


def test_achieved():
    tf, gbs, ftf, fbw = rl.achieved(989e9, 4.8e9, 1.0)  # in 1 ms
    assert tf == pytest.approx(989.0) and ftf == pytest.approx(1.0)
    assert gbs == pytest.approx(4800.0) and fbw == pytest.approx(1.0)
    assert all(math.isnan(v) for v in rl.achieved(1.0, 1.0, float("nan")))
    assert all(math.isnan(v) for v in rl.achieved(1.0, 1.0, 0.0))
    _, _, ftf, fbw = rl.achieved(989e9, 3.35e9, 1.0, rl.H100_SXM)
    assert ftf == pytest.approx(1.0) and fbw == pytest.approx(1.0)


def test_ceilings_follow_the_gpu_torch_names():
    assert rl.ceilings_of("NVIDIA H100 80GB HBM3") is rl.H100_SXM
    assert rl.ceilings_of("NVIDIA H100 PCIe") is rl.H100_PCIE
    assert rl.ceilings_of("NVIDIA H200") is rl.H200
    assert rl.ceilings_of("") is rl.H200  # the CPU path


# ------------------------------------------------------------------ targets and the CPU path

torch = pytest.importorskip("torch")


def test_targets_from_made_up_times():
    bench = _load("bench")
    shapes = bench.parse_shapes("1,2")
    res = {}
    for s in shapes:
        for m in MEMBERS:
            res[(s.name, m, "fla")] = (1.0, 3.0, None)
            res[(s.name, m, "kcv fp32")] = (1.0, 1.0, None)  # 3x fla: met
            res[(s.name, m, "kcv bf16")] = (1.0, 2.0, None)  # 1.5x: not met
    res[("1", "gdn", "kcv bf16")] = (0.2, 0.5, None)  # 0.5 ms <= 0.6: met; 6x fla
    res[("1", "gdn", "kcv fp32")] = (1.0, 1.5, None)  # 1.5 ms > 1.2: not met; exactly 2x fla
    rows, tail = bench.targets_table(res, shapes, MEMBERS, ["fp32", "bf16"])
    assert not tail
    gdn = [r for r in rows if r.startswith("| GDN fwd+bwd")]
    assert gdn[0].startswith("| GDN fwd+bwd, fp32 grade") and gdn[0].endswith("| not met |")
    assert gdn[1].startswith("| GDN fwd+bwd, bf16 grade") and gdn[1].endswith("| met |")
    ratio = [r for r in rows if "x fla" in r]
    assert len(ratio) == 2 * 2 * len(MEMBERS)
    assert all(r.endswith("| met |") for r in ratio if "fp32 grade" in r)
    assert "| 2.00 |" in [r for r in ratio if r.startswith("| gdn fwd+bwd, fp32")][0]
    bf16 = [r for r in ratio if "bf16 grade" in r]
    assert sum(r.endswith("| met |") for r in bf16) == 1  # gdn at shape 1
    assert "| 6.00 |" in [r for r in bf16 if r.startswith("| gdn") and "T8192" in r][0]
    rows, tail = bench.targets_table(res, bench.parse_shapes("tiny"), MEMBERS, ["fp32"])
    assert len(rows) == 2 and "shape 1" in tail[0] and "shape 2" in tail[0]


def test_varlen_shape():
    bench = _load("bench")
    s = bench.parse_shape("varlen")
    assert s.B == 1 and s.T == 32768 and s.H == 32 and s.D == 128
    assert s.cu[0] == 0 and s.cu[-1] == 32768 and len(s.cu) == len(bench.VARLEN_LENGTHS) + 1
    assert s.seq_lengths == bench.VARLEN_LENGTHS and s.seqs == len(bench.VARLEN_LENGTHS)
    assert bench.parse_shape("2x100x4x64").label == "B2 T100 H4 D64"


def test_cpu_path_end_to_end(tmp_path):
    pytest.importorskip("kcv._glr")
    out = tmp_path / "bench_cpu.md"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    proc = subprocess.run([sys.executable, os.path.join(BENCH_DIR, "bench.py"), "--device",
                           "cpu", "--shape", "tiny", "--cpu-reps", "1", "--rounds", "2",
                           "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = out.read_text()
    bf16 = _load("bench").kcv_precision_support()[0]
    assert "- fla: not run: --device cpu" in text
    assert "- FlashQLA: not run: --device cpu" in text
    times = text.split("## Times (ms)")[1].split("## Spread over 2 rounds")[0]
    spread = text.split("## Spread over 2 rounds")[1].split("## Achieved")[0]
    span = re.compile(r"^(\d+\.\d+)–(\d+\.\d+)$")
    thru = text.split("## Achieved throughput")[1].split("## Targets")[0]
    number = re.compile(r"^\d+\.\d+$")
    for member in MEMBERS:
        for pass_ in ("fwd", "fwd+bwd"):
            row = [r for r in times.splitlines()
                   if r.startswith(f"| B1 T256 H2 D32 | {member} | {pass_} |")]
            assert len(row) == 1, (member, pass_, times)
            cells = [c.strip() for c in row[0].strip("|").split("|")]
            assert number.match(cells[3]), row  # kcv fp32
            if bf16:  # a kcv.glr with the precision keyword: the bf16 grade runs too
                assert number.match(cells[4]), row
            else:
                assert cells[4] == "-", row
            assert cells[5] == "-"  # fla
            # the spread: lowest ≤ the median ≤ highest of the two rounds; no ratio without fla
            row = [r for r in spread.splitlines()
                   if r.startswith(f"| B1 T256 H2 D32 | {member} | {pass_} |")]
            assert len(row) == 1, (member, pass_, spread)
            lo_hi = [c.strip() for c in row[0].strip("|").split("|")]
            m = span.match(lo_hi[3])
            assert m and float(m[1]) <= float(cells[3]) <= float(m[2]), (row, cells)
            assert lo_hi[5] == "-" and lo_hi[-1] == "-"
            row = [r for r in thru.splitlines()
                   if r.startswith(f"| B1 T256 H2 D32 | {member} | {pass_} |")]
            assert len(row) == 1 and "%) · " in row[0], (member, pass_, thru)
    assert "Not measured in this run" in text and text.rstrip().splitlines()[-1].startswith(
        "Total ")


# ------------------------------------------------------------------ ncu_profile.py's reading


NCU_RAW = """==PROF== Connected to process 4242
kcv-bf16: one forward+backward profiled
"ID","Process ID","Process Name","Kernel Name","gpu__time_duration.sum","launch__registers_per_thread","{barrier}","{long}"
"","","","","nsecond","register/thread","ratio","ratio"
"0","4242","python3","void kcv::glr::dev::grad_kernel<(int)1, true>(kcv::glr::dev::MmaBackwardParams)","1,635,000","168","3.25","7.5"
"1","4242","python3","chunk_fwd_kernel_o","12,500","96","0","0"
==PROF== Disconnected from process 4242
"""


def test_ncu_raw_csv_to_the_kernel_table(tmp_path):
    ncu = _load("ncu_profile")
    stall = ncu.STALL_METRIC.format
    path = tmp_path / "raw.csv"
    path.write_text(NCU_RAW.format(barrier=stall("barrier"), long=stall("long_scoreboard")))
    rows = ncu.read_rows(str(path))
    assert [r["ID"] for r in rows] == ["0", "1"]  # the units row and ncu's own lines left out
    metrics = {"gpu__time_duration.sum", "launch__registers_per_thread", stall("barrier"),
               stall("long_scoreboard")}
    lines = ncu.table("kcv-bf16", rows, metrics)
    assert lines[2] == "| kernel | µs | regs | top stalls (cycles per issue) |"
    assert lines[4] == ("| `grad_kernel<(int)1, true>` | 1635.0 | 168 | long_scoreboard 7.5, "
                        "barrier 3.2 |")
    assert lines[5] == "| `chunk_fwd_kernel_o` | 12.5 | 96 | - |"
    assert lines[7] == "2 launches, 1647.5 µs summed (one replay each)."


def test_ncu_profile_of_an_implementation_past_its_timeout_returns_124(tmp_path):
    # a stand-in for ncu that never finishes, with a child of its own as the profiled process:
    # the report's other implementations must survive, so profile() returns a status, writes what
    # it has, names the timeout in the log, and leaves no process of the stand-in running
    ncu = _load("ncu_profile")
    fake, pid_file = tmp_path / "ncu", tmp_path / "child.pid"
    fake.write_text(f"#!/bin/sh\necho partial\nsleep 30 &\necho $! > {pid_file}\nwait\n")
    fake.chmod(0o755)
    args = types.SimpleNamespace(ncu=str(fake), member="gla", shape="1", timeout=1)
    path = tmp_path / "gla_fla.csv"
    assert ncu.profile(args, "fla", ["gpu__time_duration.sum"], str(path)) == ncu.TIMED_OUT
    assert "partial" in path.read_text()
    assert "out of time after 1 s" in (tmp_path / "gla_fla.csv.log").read_text()
    assert ncu.read_rows(str(path)) == []
    child = int(pid_file.read_text())
    for _ in range(50):  # killed with its group; reaped by init a moment later
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:
            if f.read().split(") ")[-1].startswith("Z"):
                break  # killed, not yet reaped
        time.sleep(0.1)
    else:
        raise AssertionError("the stand-in's child still runs after the timeout")


def test_ncu_profile_of_two_members_writes_a_section_per_member_and_implementation(
        tmp_path, monkeypatch):
    # a stand-in ncu: the metric list on --query-metrics, else one kernel row naming the member
    # it was asked to profile (the --member after --target), as ncu's raw CSV page
    ncu = _load("ncu_profile")
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--query-metrics" ]; then echo "gpu__time_duration  Duration"; exit 0; fi\n'
        'member=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "--member" ] && member=$a; prev=$a; done\n'
        'echo \'"ID","Kernel Name","gpu__time_duration.sum"\'\n'
        'echo \'"","","nsecond"\'\n'
        'echo "\\"0\\",\\"kernel_of_$member\\",\\"1,000\\""\n')
    fake.chmod(0o755)
    out = tmp_path / "ncu.md"
    monkeypatch.setattr(sys, "argv", ["ncu_profile.py", "--member", "kda,gla", "--shape", "1",
                                      "--impls", "kcv-bf16", "--ncu", str(fake), "--out",
                                      str(out), "--work", str(tmp_path / "work")])
    assert ncu.main() == 0
    text = out.read_text()
    assert text.startswith("# Nsight Compute: kda, gla forward+backward at")
    assert "### kda · kcv-bf16" in text and "### gla · kcv-bf16" in text
    kda, gla = text.split("### kda · kcv-bf16")[1].split("### gla · kcv-bf16")
    assert "`kernel_of_kda`" in kda and "`kernel_of_gla`" in gla
    assert (tmp_path / "work" / "kda_kcv-bf16.csv").exists()
    assert (tmp_path / "work" / "gla_kcv-bf16.csv").exists()


def test_ncu_metric_names_reduce_to_the_base_names_it_lists():
    ncu = _load("ncu_profile")
    assert ncu.base_name("sm__throughput.avg.pct_of_peak_sustained_elapsed") == "sm__throughput"
    assert ncu.base_name("launch__grid_size") == "launch__grid_size"
    assert len({c for _, c, _ in ncu.METRICS}) == len(ncu.METRICS)


# ------------------------------------------------------------------ launch.py: workers under a memory budget


def _job(launch, tmp_path, name, gib, script):
    """A real worker process: appends "start NAME t" and "end NAME t" to a shared log around
    `script` (Python run in the worker; `marker` is a per-job path it may use)."""
    log, marker = tmp_path / "log", tmp_path / f"{name}.marker"
    code = (f"import time, sys, os\nmarker = {str(marker)!r}\n"
            f"open({str(log)!r}, 'a').write('start {name} %f\\n' % time.time())\n"
            f"print('hello from {name}')\nrc = 0\n{script}\ntime.sleep(0.3)\n"
            f"open({str(log)!r}, 'a').write('end {name} %f\\n' % time.time())\nsys.exit(rc)\n")
    return launch.Job(name, [sys.executable, "-c", code], gib)


def _spans(tmp_path):
    spans = {}
    for line in (tmp_path / "log").read_text().splitlines():
        what, name, t = line.split()
        spans.setdefault(name, []).append((what, float(t)))
    return spans


def _overlap(a, b):
    return a[0][1] < b[-1][1] and b[0][1] < a[-1][1]


def test_launch_keeps_the_running_estimates_within_the_budget(tmp_path):
    launch = _load("launch")
    big = [_job(launch, tmp_path, f"big{i}", 10, "") for i in range(2)]
    small = [_job(launch, tmp_path, f"small{i}", 2, "") for i in range(2)]
    lines = []
    launch.run(big + small, 14, echo=lines.append)
    spans = _spans(tmp_path)
    assert not _overlap(spans["big0"], spans["big1"])  # 10 + 10 > 14: one after the other
    assert all(j.rc == 0 and j.runs == 1 for j in big + small)
    assert sum("hello from" in line for line in lines) == 4
    assert launch.summary(big + small) == "4 workers"


def test_launch_runs_a_worker_that_ran_out_of_memory_again(tmp_path):
    launch = _load("launch")
    flaky = _job(launch, tmp_path, "flaky", 4, (
        "if not os.path.exists(marker):\n"
        f"    open(marker, 'w').close()\n    rc = {launch.OUT_OF_MEMORY_RC}"))
    ok = _job(launch, tmp_path, "ok", 4, "")
    launch.run([flaky, ok], 8, echo=lambda line: None)
    assert (flaky.rc, flaky.runs) == (0, 2)
    assert (ok.rc, ok.runs) == (0, 1)
    assert "1 of them run again after running out of GPU memory" in launch.summary([flaky, ok])
    assert "did not finish" not in launch.summary([flaky, ok])


def test_launch_gives_up_on_a_worker_that_does_not_fit_alone(tmp_path):
    launch = _load("launch")
    never = _job(launch, tmp_path, "never", 4, f"rc = {launch.OUT_OF_MEMORY_RC}")
    broken = _job(launch, tmp_path, "broken", 1, "rc = 3")
    launch.run([never, broken], 16, echo=lambda line: None)
    assert never.rc == launch.OUT_OF_MEMORY_RC
    assert never.runs == 4  # budgets 16, 8, 4, then one at a time
    assert (broken.rc, broken.runs) == (3, 1)  # another failure is not retried
    text = launch.summary([never, broken])
    assert "2 did not finish (never: exit 75, broken: exit 3)" in text
    assert "compiled their configs itself" in text


def test_launch_estimate_grows_with_the_model_bytes():
    launch = _load("launch")
    assert launch.estimate_gib(0) == 1.0
    assert launch.estimate_gib(2**30) == 4.0
