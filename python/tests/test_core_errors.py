"""kcv's C++ error codes cross the nanobind edge as typed exceptions (python/src/core_errors.cpp):
the class of the code, with code, context and worker_class as attributes, each class also a
ValueError or RuntimeError; nothing is told apart by its message."""

from __future__ import annotations

import pytest

core = pytest.importorskip("kcv._core")

CLASSES = {"InvalidArgumentError": ("invalid_argument", ValueError),
           "NotFoundError": ("not_found", RuntimeError), "IoError": ("io", RuntimeError),
           "ParseError": ("parse", ValueError), "CandidateError": ("candidate", RuntimeError),
           "InternalError": ("internal", RuntimeError)}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_code_has_a_class_under_error(name):
    cls = getattr(core, name)
    assert issubclass(cls, core.Error) and issubclass(cls, CLASSES[name][1])
    assert cls.__module__ == "kcv._core" and cls.__doc__


def test_unparsable_contract_is_a_parse_error_with_its_code():
    with pytest.raises(core.ParseError) as e:
        core.parse_contract("{not json")
    assert e.value.code == "parse" and e.value.worker_class is None
    assert isinstance(e.value, ValueError)


def test_a_bad_contract_field_is_an_invalid_argument():
    with pytest.raises(core.InvalidArgumentError) as e:
        core.parse_contract('{"op": "add", "inputs": ["float32"], "profile": "nope"}')
    assert e.value.code == "invalid_argument"


def test_a_missing_corpus_file_is_an_error_of_the_core(tmp_path):
    with pytest.raises(core.Error) as e:
        core.read_corpus(str(tmp_path / "missing.jsonl"))
    assert e.value.code in ("io", "not_found") and "missing.jsonl" in str(e.value)


def test_a_reference_that_does_not_import_carries_the_workers_class(tmp_path):
    from kcv.audit.workers import worker_command

    load = {"kind": "kernelbench", "role": "reference", "seed": 1, "device": "cpu",
            "reference_code": "import no_such_module_kcv\n"}
    with core.Worker(worker_command(threads=1), load, name="bad", startup_timeout_ms=60000) as w:
        with pytest.raises(core.Error) as e:
            w.start()
    assert e.value.worker_class == "import_error", (e.value.code, e.value.worker_class, str(e.value))


def test_a_worker_program_that_does_not_exist_is_not_found(tmp_path):
    w = core.Worker([str(tmp_path / "no-such-worker")], {"kind": "fake"}, name="x",
                    startup_timeout_ms=5000)
    with pytest.raises(core.NotFoundError) as e:
        w.start()
    assert e.value.code == "not_found" and "no-such-worker" in str(e.value)
    w.close()
