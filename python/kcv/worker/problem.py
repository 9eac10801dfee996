"""Loading a KernelBench pair in a worker (load kind "kernelbench", docs/06_worker_protocol.md).

Model, get_inputs and get_init_inputs always come from reference_code; ModelNew from
candidate_code (a get_inputs the candidate redefines is ignored, as KernelBench's pairing rule
says). Both are executed as fresh modules (kcv.worker.modexec) with the load's "constants"
applied to their top-level assignments, so the orchestrator can rescale a problem's shapes.
Both models are built (kcv.worker.kernelbench) under torch.manual_seed(seed); the candidate then
receives the reference's parameters and buffers wherever names and shapes match, so a different
init order cannot make a correct kernel look wrong.

The reference role serves the trusted values through typed tasks (docs/06 §7.3,
kcv.worker.reference): draw makes the inputs of a seed (and keeps them with keep), reference64
runs Model in float64 (floating inputs widened with their layout, integer inputs untouched, TF32
off, tensors the model makes itself widened too, see kcv.worker.float64) under the task's NaN and
subnormal semantics, reference32 runs Model at its own precision (the eager result the error
model calls declared, under TF32 flags and autocast), forget drops a seed's kept inputs; the
reference tasks with inputs_seed run on a copy of the kept inputs instead of the call's. Its
load also learns the problem's facts (kcv.worker.facts), tracing the module again at bumped
constants on the meta device (_retrace). The candidate role serves run and describe
(kcv.worker.candidate): on the CPU on the input views themselves, so in-place writes to inputs
reach kcv's mutation check; on CUDA on device copies with their layout (strides, padding) intact,
copied back over the views afterwards. A reference load with "size_on_meta_over": N first sizes
the problem on the meta device (kcv.worker.meta.size_on_meta); over N bytes of inputs + outputs
it stops there: the reply's problem says "sized_on_meta": true, and the worker refuses calls.
With "refuse_models_over": M as well, a load whose forward meta cannot size fails when the two
models' parameters and buffers, counted on meta, come to more than M bytes
(kcv.worker.meta.model_bytes_on_meta).

Environment first: without a GPU TRITON_INTERPRET=1, before torch (and so Triton) is imported
by this process. Then the compile caches: TORCH_EXTENSIONS_DIR and TRITON_CACHE_DIR point at
the build-cache entry of the role's code under cache_dir (kcv.worker.buildcache: one entry per
role, code text and toolchain), set before any code of the load runs. Corpus rows reuse
load_inline names ("custom_softmax") with other sources, and workers building two of them in
one directory at once would load each other's half-written .so; workers of the same code (the
rescaled-shape pair, a re-run, another row with the same text) share the entry, and torch's
lock in each extension's build directory makes one of them build and the other load that
build. A load that succeeds marks the entry built (kcv-build.json, with the load's seconds).
Its reply's `build` says what torch's JIT builds cost it (kcv.worker.jitbuild): the calls to
torch.utils.cpp_extension.load / load_inline, their seconds, whether the entry was marked
built before the load began (`cached`: every build was in place) and whether the calls compiled
(`compiled`: a library of the entry written during the load).
"""

import os
import tempfile
import time

from kcv.worker import buildcache, jitbuild, modexec
from kcv.worker.errors import LoadError, load_error

ROLES = ("reference", "candidate")
DEVICES = ("auto", "cuda", "cpu")


def _cuda_possible() -> bool:
    """False when no CUDA device can be visible to this process (decided without torch)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl")


def extensions_dir(cache_dir: str, code: str, role: str = "candidate",
                   device: str = "cpu") -> str:
    """TORCH_EXTENSIONS_DIR of a load of `code` in `role` on `device` (this process's toolchain;
    torch imported)."""
    tools = buildcache.toolchain(device)
    return os.path.join(buildcache.entry_dir(cache_dir, buildcache.key(role, code, tools)),
                        "torch_extensions")


def prepare_environment(device: str) -> None:
    """Triton's interpreter when the device will be the CPU (before torch is imported)."""
    if device == "cpu" or (device == "auto" and not _cuda_possible()):
        os.environ["TRITON_INTERPRET"] = "1"


def _fields(req: dict) -> dict:
    """The load request's fields, checked; LoadError("bad_request: <field>: ...") otherwise."""
    def bad(field, what):
        return LoadError(f"bad_request: {field}: {what}")

    role = req.get("role")
    if role not in ROLES:
        raise bad("role", f"{role!r} is not one of {list(ROLES)}")
    out = {"role": role}
    for key in ("reference_code",) + (("candidate_code",) if role == "candidate" else ()):
        if not isinstance(req.get(key), str):
            raise bad(key, "missing or not a string")
        out[key] = req[key]
    seed = req.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise bad("seed", f"{seed!r} is not an integer")
    device = req.get("device", "auto")
    if device not in DEVICES:
        raise bad("device", f"{device!r} is not one of {list(DEVICES)}")
    cache_dir = req.get("cache_dir") or os.path.join(tempfile.gettempdir(),
                                                     f"kcv-cache-{os.getuid()}")
    if not isinstance(cache_dir, str):
        raise bad("cache_dir", "not a string")
    constants = req.get("constants") or {}
    if not isinstance(constants, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in constants.values()):
        raise bad("constants", "not an object of integers")
    over = req.get("size_on_meta_over", 0)
    if not isinstance(over, int) or isinstance(over, bool) or over < 0:
        raise bad("size_on_meta_over", f"{over!r} is not a non-negative integer")
    if over and role != "reference":
        raise bad("size_on_meta_over", "only the reference role sizes the problem")
    refuse = req.get("refuse_models_over", 0)
    if not isinstance(refuse, int) or isinstance(refuse, bool) or refuse < 0:
        raise bad("refuse_models_over", f"{refuse!r} is not a non-negative integer")
    if refuse and not over:
        raise bad("refuse_models_over", "needs size_on_meta_over (the reference role)")
    want_facts = req.get("facts", True)
    if not isinstance(want_facts, bool):
        raise bad("facts", f"{want_facts!r} is not a boolean")
    out.update(seed=seed, device=device, cache_dir=cache_dir, constants=constants,
               size_on_meta_over=over, refuse_models_over=refuse, facts=want_facts,
               name=req.get("name") or req.get("kernel") or
               ("ModelNew" if role == "candidate" else "Model"),
               op=req.get("op") or "kernelbench")
    return out


def _exec(code: str, what: str, src_dir: str, constants: dict, *, strict: bool):
    """The module of `code`; with `strict`, every constant must be a top-level name of it."""
    try:
        names = modexec.top_level_names(code)
    except SyntaxError as e:
        raise load_error(e, "import_error", what) from None
    if strict:
        for key in constants:
            if key not in names:
                raise LoadError(f"bad_request: constants.{key}: {what} assigns no module-level "
                                f"{key}")
    overrides = {k: v for k, v in constants.items() if k in names}
    try:
        return modexec.exec_module(code, what.split("_")[0], src_dir, overrides)
    except BaseException as e:  # noqa: BLE001 (SystemExit from candidate code is a failure too)
        raise load_error(e, "import_error", what) from None


def _require(module, names, what: str) -> None:
    for name in names:
        if not callable(getattr(module, name, None)):
            raise LoadError(f"import_error: {what}: defines no {name}")


def load(req: dict):
    """The KernelBenchPair a load request describes; LoadError with the class prefix if not."""
    f = _fields(req)
    prepare_environment(f["device"])
    import torch  # noqa: PLC0415 (deliberately after the environment is set)

    if f["device"] == "cuda" and not torch.cuda.is_available():
        raise LoadError("bad_request: device: 'cuda' requested but no CUDA device is available")
    device = "cuda" if f["device"] != "cpu" and torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    code = f["candidate_code"] if f["role"] == "candidate" else f["reference_code"]
    tools = buildcache.toolchain(device)
    entry = buildcache.use(f["cache_dir"], buildcache.key(f["role"], code, tools))
    cached = buildcache.is_built(entry)
    t0 = time.monotonic()
    wall0 = time.time()
    src_dir = os.path.join(f["cache_dir"], "kb_src")
    with jitbuild.measured() as jit:
        ref = _exec(f["reference_code"], "reference_code", src_dir, f["constants"], strict=True)
        _require(ref, ("Model", "get_inputs", "get_init_inputs"), "reference_code")
        cand = None
        if f["role"] == "candidate":
            cand = _exec(f["candidate_code"], "candidate_code", src_dir, f["constants"],
                         strict=False)
            _require(cand, ("ModelNew",), "candidate_code")
        from kcv.worker.kernelbench import KernelBenchPair  # noqa: PLC0415 (imports torch)

        retrace = _retrace(f["reference_code"], src_dir, f["constants"]) \
            if f["role"] == "reference" else None
        pair = KernelBenchPair(f, device, ref, cand, retrace)
    compiled = jit.calls > 0 and jitbuild.libraries_written_since(
        os.environ["TORCH_EXTENSIONS_DIR"], wall0) > 0
    pair.build = {"jit_calls": jit.calls, "jit_s": round(jit.seconds, 4), "cached": cached,
                  "compiled": compiled}
    try:
        buildcache.mark_built(entry, {"role": f["role"], "load_s": round(time.monotonic() - t0, 3),
                                      "toolchain": tools})
    except OSError:  # a cache that cannot be written stays unmarked; the load stands
        pass
    return pair


def _retrace(code: str, src_dir: str, constants: dict):
    """retrace(overrides): the reference module executed again with the load's constants and
    `overrides` on top (facts trace the problem on meta at bumped constants), None if it fails.
    It runs with meta as the default device, so module-level tensors of a bumped shape take no
    memory (a module that needs real values there just gives no trace)."""
    import torch  # noqa: PLC0415 (after prepare_environment, as everywhere here)

    names = modexec.top_level_names(code)

    def retrace(overrides: dict):
        wanted = {k: v for k, v in {**constants, **overrides}.items() if k in names}
        try:
            with torch.device("meta"):
                return modexec.exec_module(code, "retrace", src_dir, wanted)
        except BaseException:  # noqa: BLE001 (a bumped constant the module rejects)
            return None

    return retrace

