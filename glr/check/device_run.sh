#!/usr/bin/env bash
# File: glr/check/device_run.sh
# One-shot driver on the H200 (issue 4 items 5-6): installs fla (.whl/) and kcv (this checkout,
# built with the sm_90a kernels) into /tmp/site, then runs the steps named in STEPS, each under
# its own time limit, writing every log under $OUT (default ./device_out):
#
#   install  install.log (skipped when /tmp/site holds a kcv built from identical sources)
#   pytest   pytest.log of PYTEST_PATH (default: python/tests and glr/check/test_glr_check.py)
#            with PYTEST_ARGS (e.g. "-v -k cuda")
#            (PYTEST_S, default 120 s)
#   pipeline pipeline.md, pipeline.json, pipeline/<member>.{json,xml,log}  (PIPELINE_S, default
#            225 s per member, all six members at once): the kernels through kcv's pipeline,
#            `kcv verify --candidate kcv/libkcv_glr_cuda_candidate.so --kernel glr.<member>
#            --grade fp32,bf16 --glr-cases full --resources kcv/glr_ptxas.log`: CMP-01 over the
#            full case list, ORD-02 (10 runs), EXC-01, RES-02 from the build's ptxas report;
#            the in-process executor (PIPELINE_EXECUTOR=forked: a child process per call);
#            PIPELINE_CANDIDATE, PIPELINE_MEMBERS, PIPELINE_GRADES name another library, members
#            and grades
#   mma      mma.md, mma.json, mma/<member>.{json,xml,log}  (PIPELINE_S per member, all six at
#            once): the pipeline step on the tensor-core kernels of glr/dev,
#            `kcv verify --candidate kcv/libkcv_glr_mma_candidate.so --kernel glr.<member>
#            --grade bf16 --glr-cases full --resources kcv/glr_mma_ptxas.log` for every member
#            (MMA_CANDIDATE, MMA_MEMBERS, MMA_GRADES change them)
#   decode   decode.md, decode.tar.gz (decode/<member>.{json,xml,log}, env.txt)  (DECODE_S,
#            default 120 s per member, all six at once): the decode kernel through kcv's
#            pipeline, `kcv verify --candidate kcv/libkcv_glr_cuda_candidate.so --kernel
#            glr.<member>.decode --glr-cases full --runs 10 --resources kcv/glr_ptxas.log`:
#            CMP-01 over the decode case list against the token-serial fp64 oracle, ORD-02,
#            EXC-01, RES-02; the executor as in pipeline (DECODE_EXECUTOR); DECODE_CANDIDATE
#            names another candidate library (the CPU one, libkcv_glr_emulated.so, for a dry run)
#   verify   verification.md, verify.log, verify.json    (VERIFY_S, default 330 s)
#            glr/check/gates_vs_fla.py: ours, fla and FlashQLA under kcv's C++ CMP-01 judge
#            (both grades) + fla's metric, resources
#   train    train.tar.gz: bench/glr/train_lm.py for each family of TRAIN_FAMILIES (default all
#            five) and each backend of TRAIN_BACKENDS (default kcv,fla,reference) with TRAIN_ARGS
#            (e.g. "--steps 500 --batch 8 --seq-len 512 --lift-fla-guard"), those of TRAIN_REPRO
#            (default kcv) twice and compared (--check-repro), all side by side
#            (TRAIN_PARALLEL=0: one after another), each under TRAIN_S (default 500 s);
#            TRAIN_WARM_FLA=1 autotunes fla's kernels first, one family at a time; the JSONL logs, curves.svg and
#            summary.md of bench/glr/plot_curves.py. The corpus is data/text, or
#            .device-data/text.tar.xz (scripts/build-text-corpus, then
#            tar cJf .device-data/text.tar.xz -C data text/train.bin text/val.bin text/manifest.json)
#   bench    bench_<shapes>.md, bench_<shapes>.log       (BENCH_S per entry, default 280 s)
#            bench/glr/bench.py once for each entry of BENCH_SHAPE, an entry being one shape or
#            a comma list measured in one process (1 = B1·T8192·H32·D128, 2 = B4·T4096·H16·D128,
#            3 = B1·T32768·H32·D128, varlen; default "1"); BENCH_ARGS adds options (--grades,
#            --flashqla, --members). FlashQLA runs when its wheels are in .whl/ too
#            (docs/glr/bench.md, "How to run")
#   arch     arch.log: glr_wgmma_check (glr/dev/wgmma_check.cu, built by CMake from glr/): the
#            wgmma atom of glr/arch/wgmma.cuh on the GPU against an fp64 product (26 cases:
#            N = 8, 16, 32, 64, each operand K-major or MN-major)
#   wgmma    wgmma.log: glr_dev_check --state-wgmma (built like arch; WGMMA_S, default 150 s):
#            forward version 13 (the state pass on wgmma, MmaForwardParams::state_wgmma) against
#            the fp64 reference and against version 12's outputs, and both forwards' times
#   ncu      ncu.md, ncu/<member>_<impl>.csv (NCU_S, default 400 s): bench/glr/ncu_profile.py
#            with NCU_ARGS (default "--member gdn --shape 1 --impls kcv-bf16,fla,flashqla"):
#            Nsight Compute's counters for every kernel of one forward+backward
#   phases   phases.md, phases/<member>_source.csv (PHASES_S, default 150 s):
#            bench/glr/ncu_phases.py with PHASES_ARGS (default "--member gdn --shape 1
#            --min-share 2"): kcv bf16's warp-state samples per kernel phase and loop
#
# Run from the repository root, with fla's wheels in .whl/ (and, for kcv._core, the Debian packages
# of scripts/device-deps in .debs/):
#   STEPS="install pipeline" bash glr/check/device_run.sh
#   STEPS="install decode" bash glr/check/device_run.sh
#   STEPS="install mma" bash glr/check/device_run.sh
#   STEPS="install pytest verify" bash glr/check/device_run.sh
#   STEPS="install bench" BENCH_SHAPE="1,2 3,varlen" BENCH_S=600 bash glr/check/device_run.sh
# KCV_SITE_PACK=FILE packs the compiled kcv after a build; KCV_SITE_TAR (default
# .device-data/kcv-site.tar.gz) is such a pack, reused instead of a build when the checkout's
# native sources are the ones it was built from.
# Triton's cache lives in /tmp/triton-cache, so a second run on the same machine reuses every
# kernel fla compiled in the first; TRITON_CACHE_PACK=FILE packs it at the end, and a pack in
# .device-data/triton-cache.tar.gz (TRITON_CACHE_TAR) seeds the cache of a fresh machine.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/device_out}
steps=" ${STEPS:-install pytest verify bench} "
mkdir -p "$out"
cd "$root"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-16}
export FLA_DISABLE_BACKEND_DISPATCH=1
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton-cache}
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export CUDACXX=${CUDACXX:-$nvcc_bin}
export PATH=$PATH:$(dirname "$nvcc_bin")
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

# Triton's compiled kernels from an earlier run on a machine of the same architecture (sm_90):
# TRITON_CACHE_TAR (default .device-data/triton-cache.tar.gz) is unpacked into an empty cache, so
# fla's kernels are not compiled again (autotuning still times every configuration here: its
# choices are this machine's). TRITON_CACHE_PACK=FILE packs the cache at the end of the run.
triton_tar=${TRITON_CACHE_TAR:-.device-data/triton-cache.tar.gz}
if [[ -f $triton_tar && ! -d $TRITON_CACHE_DIR ]]; then
  mkdir -p "$TRITON_CACHE_DIR" && tar xzf "$triton_tar" -C "$TRITON_CACHE_DIR"
  stamp "triton cache: $(find "$TRITON_CACHE_DIR" -name '__grp__*' | wc -l) kernels from $triton_tar"
fi

# The sources kcv is built from; equal hashes mean the installed kcv is this checkout's.
tree_hash=$(find CMakeLists.txt pyproject.toml cmake include src glr python -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \
  -o -name '*.py' -o -name '*.txt' -o -name '*.cmake' -o -name '*.toml' \) 2>/dev/null \
  | LC_ALL=C sort | xargs md5sum 2>/dev/null | md5sum | cut -c1-16)

# The Debian packages of .debs/: headers for the build, shared libraries for kcv._core at run time
# (also when the install step is skipped because /tmp/site already holds this build).
if [[ -f scripts/device-deps ]]; then source scripts/device-deps > "$out/deps.log" 2>&1; fi

# The sources the compiled part of kcv is built from (every file but the Python ones): a build
# packed by an earlier run (KCV_SITE_TAR, see the end of the install step) is reused when this
# hash matches, with this checkout's Python files laid over it.
native_hash=$(find CMakeLists.txt pyproject.toml cmake include src glr python -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \
  -o -name '*.txt' -o -name '*.cmake' -o -name '*.toml' \) 2>/dev/null \
  | LC_ALL=C sort | xargs md5sum 2>/dev/null | md5sum | cut -c1-16)
site_tar=${KCV_SITE_TAR:-.device-data/kcv-site.tar.gz}

if [[ $steps == *" install "* ]]; then
  if [[ -f /tmp/site/kcv/.tree_hash && $(cat /tmp/site/kcv/.tree_hash) == "$tree_hash" ]]; then
    stamp "install: kcv in /tmp/site is already built from these sources ($tree_hash); skipped"
  elif [[ -f $site_tar ]] && [[ $(tar xzOf "$site_tar" kcv/.native_hash 2>/dev/null) == "$native_hash" ]]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl \
      > "$out/install.log" 2>&1
    rm -rf /tmp/site/kcv /tmp/site/bin/kcv*
    tar xzf "$site_tar" -C /tmp/site
    (cd python && find kcv -name '*.py' ! -path '*/__pycache__/*' -exec cp --parents {} /tmp/site/ \;)
    echo "$tree_hash" > /tmp/site/kcv/.tree_hash
    stamp "install: compiled kcv unpacked from $site_tar (native sources $native_hash), Python files from this checkout"
  else
    {
      date -u +%FT%TZ
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
      python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
      rm -rf /tmp/site/kcv /tmp/site/kcv-* /tmp/site/bin/kcv*  # --target never replaces
      # ================= INSTALL kcv =======================================================
      # Built from the repository root (pyproject.toml); the Debian headers kcv._core needs
      # come from .debs/ (scripts/device-deps, sourced above for every step, sets
      # CMAKE_PREFIX_PATH and LD_LIBRARY_PATH). With KCV_GLR_RESOURCE_USAGE=ON ptxas prints
      # every kernel's registers/spills into this log.
      time python3 -m pip install -v --no-build-isolation --no-deps --no-index --upgrade \
        --target /tmp/site --config-settings=cmake.define.KCV_GLR_RESOURCE_USAGE=ON . || {
        # Fallback (checked on the CPU machine): kcv._glr alone from python/ (no core deps);
        # gates_vs_fla.py then judges with its Python mirror and says so in the report.
        echo "kcv: the root build failed; building kcv._glr alone from python/"
        time python3 -m pip install -v --no-build-isolation --no-deps --no-index --upgrade \
          --target /tmp/site --config-settings=cmake.source-dir=python \
          --config-settings=build.targets=_glr --config-settings=build-dir=build/py-glr-only \
          --config-settings=cmake.define.KCV_GLR_RESOURCE_USAGE=ON .
      }
      # ================= end of INSTALL kcv ================================================
      # RES-02's input: the ptxas report of every GLR kernel, from this build's log (the lines of
      # each "Compiling entry function" block whose entry is a GLR kernel; other CUDA sources of
      # the build, the red-team device fixtures among them, are left out): the CUDA-core kernels
      # in glr_ptxas.log, the tensor-core kernels of glr/dev (namespace kcv::glr::dev, mangled
      # 3glr3dev) in glr_mma_ptxas.log, each candidate library's own kernels.
      awk -v mma=/tmp/site/kcv/glr_mma_ptxas.log \
        '/Compiling entry function/ { dev = ($0 ~ /3glr3dev/); keep = ($0 ~ /glr/) && !dev }
         /ptxas info|bytes stack frame/ { if (keep) print; if (dev) print > mma }' \
        "$out/install.log" > /tmp/site/kcv/glr_ptxas.log || true
      echo "$tree_hash" > /tmp/site/kcv/.tree_hash
      echo "$native_hash" > /tmp/site/kcv/.native_hash
    } > "$out/install.log" 2>&1
    stamp "install: exit $? ($(grep -E 'kcv python:' "$out/install.log" | head -2 | tr '\n' ' '))"
    # The compiled build, packed for a later run of the same native sources (KCV_SITE_TAR).
    if [[ -n ${KCV_SITE_PACK:-} ]]; then
      tar czf "$KCV_SITE_PACK" --exclude=__pycache__ -C /tmp/site kcv bin/kcv bin/kcv-worker
      stamp "install: packed into $KCV_SITE_PACK ($(du -h "$KCV_SITE_PACK" | cut -f1))"
    fi
  fi
fi
python3 -c "import kcv.glr as g; print('kcv.glr has_cuda =', g.has_cuda())" || {
  tail -40 "$out/install.log"; exit 1; }
python3 -c "import kcv._core as c; print('kcv._core', c.version)" 2>/dev/null \
  || echo "kcv._core not importable: the verify step cannot judge"

if [[ $steps == *" pytest "* ]]; then
  pytest_args=()
  for p in ${PYTEST_PATH:-python/tests glr/check/test_glr_check.py}; do pytest_args+=("$root/$p"); done
  # kcv's fla backend (test_glr_fla.py) needs fla's dispatch, which the variable turns off.
  (cd /tmp && timeout "${PYTEST_S:-120}" env -u FLA_DISABLE_BACKEND_DISPATCH python3 -m pytest -q -p no:cacheprovider \
    ${PYTEST_ARGS:-} "${pytest_args[@]}") > "$out/pytest.log" 2>&1
  stamp "pytest: exit $? ($(tail -1 "$out/pytest.log"))"
fi

# One `kcv verify` per member, all at once (the fp64 reference of the long cases has only one or
# two (sequence, head) slices, so members run side by side); each rewrites its JSON after every
# grade, so a member stopped at PIPELINE_S keeps the grades it finished. Writes $out/NAME.md (the
# report), $out/NAME.json (every member's reports) and $out/NAME/ (per-member JSON, JUnit, log).
#   run_pipeline NAME CANDIDATE GRADES "MEMBERS" PTXAS_LOG
run_pipeline() {
  local name=$1 lib=$2 grades=$3 members=$4 ptxas=$5
  local pdir=$out/$name kcv_bin res=() m
  mkdir -p "$pdir"
  kcv_bin=$(command -v kcv || echo /tmp/site/bin/kcv)
  [[ -s $ptxas ]] && res=(--resources "$ptxas")
  # In-process by default: the forked executor's child initialises CUDA for every call (~0.3 s,
  # ~80 calls per member), which the time limit cannot spare; each member still runs in its own
  # kcv process. PIPELINE_EXECUTOR=forked runs every call in a fresh child instead.
  local executor=${PIPELINE_EXECUTOR:-in-process}
  {
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    echo "kcv: $kcv_bin ($("$kcv_bin" --version 2>&1))"
    echo "candidate: $lib"
    echo "grades: $grades"
    echo "resources: ${res[*]:-none (no $ptxas)}"
    echo "executor: $executor"
  } > "$pdir/env.txt" 2>&1
  local pcmd="STEPS=\"${STEPS:-install pytest verify bench}\" OUT=\$OUT bash glr/check/device_run.sh"
  for m in $members; do
    timeout -k 10 "${PIPELINE_S:-225}" "$kcv_bin" verify --candidate "$lib" --kernel "glr.$m" \
      --grade "$grades" --glr-cases full --runs 10 --threads "${PIPELINE_THREADS:-4}" \
      --executor "$executor" \
      "${res[@]}" --json "$pdir/$m.json" --junit "$pdir/$m.xml" ${PIPELINE_ARGS:-} \
      > "$pdir/$m.log" 2>&1 &
  done
  wait
  python3 glr/check/pipeline_report.py "$pdir" --members "$(echo $members | tr ' ' ',')" \
    --grades "$grades" --command "$pcmd" > "$out/$name.md"
  stamp "$name: exit $? (0 every report passed; $name.md)"
  python3 - "$pdir" "$out/$name.json" <<'PY' || true
import glob, json, os, sys
out = {"reports": [], "missing": []}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        out["reports"] += json.load(open(path))["reports"]
    except (OSError, ValueError, KeyError) as e:
        out["missing"].append(f"{os.path.basename(path)}: {e}")
json.dump(out, open(sys.argv[2], "w"), indent=1)
PY
}

if [[ $steps == *" pipeline "* ]]; then
  run_pipeline pipeline "${PIPELINE_CANDIDATE:-/tmp/site/kcv/libkcv_glr_cuda_candidate.so}" \
    "${PIPELINE_GRADES:-fp32,bf16}" "${PIPELINE_MEMBERS:-gdn kda gla ssd la deltanet}" \
    /tmp/site/kcv/glr_ptxas.log
fi

# The tensor-core kernels of glr/dev (K = V = 128, bf16 grade; mma_adapter.hpp pads the cases'
# head dims): the members they have, under the grade they are written for.
if [[ $steps == *" mma "* ]]; then
  run_pipeline mma "${MMA_CANDIDATE:-/tmp/site/kcv/libkcv_glr_mma_candidate.so}" \
    "${MMA_GRADES:-bf16}" "${MMA_MEMBERS:-gdn ssd la deltanet gla kda}" /tmp/site/kcv/glr_mma_ptxas.log
fi

if [[ $steps == *" decode "* ]]; then
  # One `kcv verify` per member's decode op, all at once; the folder is packed into one file.
  ddir=$out/decode
  mkdir -p "$ddir"
  kcv_bin=$(command -v kcv || echo /tmp/site/bin/kcv)
  lib=${DECODE_CANDIDATE:-/tmp/site/kcv/libkcv_glr_cuda_candidate.so}
  res=()
  [[ -s /tmp/site/kcv/glr_ptxas.log ]] && res=(--resources /tmp/site/kcv/glr_ptxas.log)
  members=${DECODE_MEMBERS:-gdn kda gla ssd la deltanet}
  executor=${DECODE_EXECUTOR:-in-process}
  {
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    echo "kcv: $kcv_bin ($("$kcv_bin" --version 2>&1))"
    echo "candidate: $lib"
    echo "resources: ${res[*]:-none (no ptxas log in /tmp/site/kcv)}"
    echo "executor: $executor"
  } > "$ddir/env.txt" 2>&1
  dcmd="STEPS=\"${STEPS:-install pytest verify bench}\" OUT=\$OUT bash glr/check/device_run.sh"
  for m in $members; do
    timeout -k 10 "${DECODE_S:-120}" "$kcv_bin" verify --candidate "$lib" \
      --kernel "glr.$m.decode" --glr-cases full --runs 10 --threads "${PIPELINE_THREADS:-4}" \
      --executor "$executor" "${res[@]}" --json "$ddir/$m.json" --junit "$ddir/$m.xml" \
      ${DECODE_ARGS:-} > "$ddir/$m.log" 2>&1 &
  done
  wait
  python3 glr/check/pipeline_report.py "$ddir" --op decode \
    --members "$(echo $members | tr ' ' ',')" --command "$dcmd" > "$out/decode.md"
  rc=$?
  tar czf "$out/decode.tar.gz" -C "$out" decode && rm -rf "$ddir"
  stamp "decode: exit $rc (0 every report passed; decode.md, decode.tar.gz)"
fi

if [[ $steps == *" verify "* ]]; then
  so=$(python3 -c "import kcv._glr as g; print(g.__file__)")
  cuobjdump -res-usage "$so" > "$out/resources_raw.txt" 2>&1 || true
  verify_s=${VERIFY_S:-330}
  timeout "$verify_s" python3 glr/check/gates_vs_fla.py --out "$out/verification.md" \
    --json "$out/verify.json" --resources "$out/resources_raw.txt" --deadline $((verify_s - 40)) \
    --command "STEPS=\"${STEPS:-install pytest verify bench}\" VERIFY_S=$verify_s ${VERIFY_ARGS:+VERIFY_ARGS=\"$VERIFY_ARGS\" }OUT=\$OUT bash glr/check/device_run.sh" \
    ${VERIFY_ARGS:-} > "$out/verify.log" 2>&1
  stamp "verify: exit $? (0 all pass, 1 a failure, 124 time limit)"
fi

# glr_build TARGET: one target of glr/'s own CMake build (the dev checks), in ARCH_BUILD.
glr_build() {
  local abuild=${ARCH_BUILD:-/tmp/glr-arch-build}
  cmake -S glr -B "$abuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKCV_CUDA_CHECKS=ON \
    -DKCV_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" &&
    cmake --build "$abuild" --target "$1"
}

if [[ $steps == *" arch "* ]]; then
  { glr_build glr_wgmma_check && timeout 60 "${ARCH_BUILD:-/tmp/glr-arch-build}/dev/glr_wgmma_check"; } \
    > "$out/arch.log" 2>&1
  stamp "arch: exit $? ($(grep -E '^[0-9]+ of [0-9]+ cases failed' "$out/arch.log"))"
fi

if [[ $steps == *" wgmma "* ]]; then
  { glr_build glr_dev_check &&
    timeout "${WGMMA_S:-150}" "${ARCH_BUILD:-/tmp/glr-arch-build}/dev/glr_dev_check" --state-wgmma \
      --out "$out"; } > "$out/wgmma.log" 2>&1
  stamp "wgmma: exit $? ($(tail -1 "$out/wgmma.log"))"
fi

if [[ $steps == *" ncu "* ]]; then
  timeout "${NCU_S:-400}" python3 bench/glr/ncu_profile.py ${NCU_ARGS:---member gdn --shape 1 --impls kcv-bf16,fla,flashqla} \
    --out "$out/ncu.md" --work "$out/ncu" > "$out/ncu.log" 2>&1
  stamp "ncu: exit $?"
fi

if [[ $steps == *" phases "* ]]; then
  phases_s=${PHASES_S:-150}
  timeout "$phases_s" python3 bench/glr/ncu_phases.py ${PHASES_ARGS:---member gdn --shape 1 --min-share 2} \
    --timeout $(( phases_s * 2 / 3 )) --out "$out/phases.md" --work "$out/phases" > "$out/phases.log" 2>&1
  stamp "phases: exit $?"
fi

if [[ $steps == *" bench "* ]]; then
  for shape in ${BENCH_SHAPE:-1}; do
    name=${shape//,/_}
    timeout "${BENCH_S:-280}" python3 bench/glr/bench.py --shape "$shape" \
      --out "$out/bench_$name.md" ${BENCH_ARGS:-} > "$out/bench_$name.log" 2>&1
    stamp "bench shape $shape: exit $?"
  done
fi

if [[ $steps == *" train "* ]]; then
  # The corpus: data/text (scripts/build-text-corpus), or its archive in .device-data.
  if [[ ! -f data/text/train.bin && -f .device-data/text.tar.xz ]]; then
    mkdir -p data && tar xJf .device-data/text.tar.xz -C data
  fi
  tdir=${TRAIN_OUT:-$root/out/train}
  mkdir -p "$tdir"
  # fla autotunes every kernel at its first call and keeps the winners in Triton's cache
  # (TRITON_CACHE_DIR); with TRAIN_WARM_FLA=1 two steps of each family's fla run go first, one
  # family at a time, so the timed runs find the cache warm rather than autotune side by side.
  if [[ ${TRAIN_WARM_FLA:-0} == 1 && ",${TRAIN_BACKENDS:-kcv,fla,reference}," == *",fla,"* ]]; then
    for f in ${TRAIN_FAMILIES:-gdn kda gla ssd la}; do
      timeout -k 10 "${TRAIN_S:-500}" env -u FLA_DISABLE_BACKEND_DISPATCH python3 \
        bench/glr/train_lm.py --family "$f" --backend fla --out /tmp/train-warm --no-progress \
        ${TRAIN_ARGS:-} --steps 2 > "$tdir/$f.fla-warm.log" 2>&1
    done
    stamp "train: fla's kernels autotuned ($(du -sh "$TRITON_CACHE_DIR" | cut -f1) in $TRITON_CACHE_DIR)"
  fi
  # One process per family and backend, all at once (TRAIN_PARALLEL=0: one after another).
  # Runs side by side share the GPU, so their tokens/s are figures under load; TRAIN_PARALLEL=0
  # gives each run the GPU alone. The backends of TRAIN_REPRO (default kcv) run twice
  # (--check-repro) in their process.
  for f in ${TRAIN_FAMILIES:-gdn kda gla ssd la}; do
    for b in $(echo "${TRAIN_BACKENDS:-kcv,fla,reference}" | tr ',' ' '); do
      repro=()
      [[ ",${TRAIN_REPRO:-kcv}," == *",$b,"* ]] && repro=(--check-repro)
      timeout -k 10 "${TRAIN_S:-500}" env -u FLA_DISABLE_BACKEND_DISPATCH python3 \
        bench/glr/train_lm.py --family "$f" --backend "$b" "${repro[@]}" --out "$tdir" \
        --no-progress ${TRAIN_ARGS:-} > "$tdir/$f.$b.log" 2>&1 &
      [[ ${TRAIN_PARALLEL:-1} == 0 ]] && wait
    done
  done
  wait
  python3 bench/glr/plot_curves.py --runs "$tdir" --out "$tdir/curves.svg" \
    --table "$tdir/summary.md" > "$tdir/plot.log" 2>&1
  tar czf "$out/train.tar.gz" -C "$tdir" .
  stamp "train: $(ls "$tdir"/*/*.jsonl 2>/dev/null | wc -l) run logs (train.tar.gz)"
  cat "$tdir/summary.md" 2>/dev/null
  grep -hE "tokens/s|identical|DIFFERENT|Error" "$tdir"/*.log | head -40
fi

echo
for f in "$out"/pipeline.md "$out"/mma.md; do
  [[ -f $f ]] && { grep -E "^\| (glr|kernel)|report\(s\)" "$f"; echo; }
done
[[ -f $out/verify.log ]] && { grep -E "^\[|report:" "$out/verify.log" | tail -n 45; echo; }
for f in "$out"/arch.log "$out"/wgmma.log; do
  [[ -f $f ]] && { grep -E "^(wgmma|accuracy|state pass|glr_dev_check|[0-9]+ of [0-9]+ cases)" "$f"; echo; }
done
for f in "$out"/bench_*.md; do [[ -f $f ]] && { grep -E "^\|" "$f"; echo; }; done
if [[ -n ${TRITON_CACHE_PACK:-} && -d $TRITON_CACHE_DIR ]]; then
  tar czf "$TRITON_CACHE_PACK" -C "$TRITON_CACHE_DIR" .
  stamp "triton cache: packed into $TRITON_CACHE_PACK ($(du -h "$TRITON_CACHE_PACK" | cut -f1))"
fi
exit 0
