"""kcv Python package: the audit orchestrator and worker (kcv.audit, kcv.worker), the verifier core
bound as kcv._core, and the gated linear recurrence ops kcv.glr (issue 4 item 4).

In a build tree the extension modules live in <build>/python/kcv while the Python sources stay in
<repo>/python/kcv; with PYTHONPATH=<build>/python:<repo>/python, extend_path adds every kcv/
directory on sys.path to this package's path, so both halves import as one package. An installed
package has everything in one directory, and this changes nothing."""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
