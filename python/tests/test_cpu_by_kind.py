"""scripts/cpu-by-kind: a frame of `top -b -c` summed by kind of process."""

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts/cpu-by-kind"

FRAME = """\
top - 03:41:12 up 9 min,  0 user,  load average: 33.32, 27.55, 14.66
Tasks: 767 total,  20 running, 747 sleeping,   0 stopped,   0 zombie
%Cpu(s): 55.0 us, 15.2 sy,  0.0 ni, 29.4 id,  0.0 wa,  0.0 hi,  0.5 si,  0.0 st
MiB Mem : 257811.0 total, 124258.3 free, 130443.6 used,  11448.7 buff/cache
MiB Swap:      0.0 total,      0.0 free,      0.0 used. 127367.4 avail Mem

    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND
   2000 root      20   0   80.2g  67.9g   3.2g R 812.0  27.0  53:44.00 /venv/bin/python3 -m kcv.audit a.jsonl --jobs 30
   8333 root      20   0   17.1g 910092 588684 R  99.9   0.3   1:16.01 /venv/bin/python3 -m kcv.worker --gpu 0 --threads 1
  11167 root      20   0 1959664   1.9g   8492 R  99.9   0.7   0:20.53 cudafe++ --c++17 --static-host-stub
  11215 root      20   0 1192416   1.0g  19664 R  98.0   0.4   0:16.76 /opt/gcc/bin/cc1plus -quiet -imultiarch x86_64-linux-gnu
  11390 root      20   0  936828 752132  28384 R  97.1   0.3   0:02.77 /usr/local/cuda/nvvm/bin/cicc --c++17
  11391 root      20   0    8252   2020      0 S   3.0   0.0   0:00.10 ninja -v
  11438 root      20   0   11936   5828   3632 R   5.9   0.0   0:00.03 top -bn2 -d 5 -c -w 512
"""


def test_a_top_frame_is_summed_by_kind():
    res = subprocess.run(["bash", str(SCRIPT)], input=FRAME, capture_output=True, text=True,
                         check=True)
    assert res.stdout == ("cpu: build 298 orchestrator 812 workers 100 other 6\n"
                          "host: user 55.0 system 15.2 idle 29.4\n")


def test_a_busy_hosts_summary_without_spaces_is_read():
    frame = FRAME.replace("55.0 us, 15.2 sy,  0.0 ni, 29.4 id", "0.0 us,100.0 sy,  0.0 ni,  0.0 id")
    res = subprocess.run(["bash", str(SCRIPT)], input=frame, capture_output=True, text=True,
                         check=True)
    assert res.stdout.splitlines()[1] == "host: user 0.0 system 100.0 idle 0.0"


def test_an_empty_frame_prints_zeros():
    res = subprocess.run(["bash", str(SCRIPT)], input="", capture_output=True, text=True,
                         check=True)
    assert res.stdout == "cpu: build 0 orchestrator 0 workers 0 other 0\n"
