"""Pin the rota source for the whole run.

rota is installed editable, and src/ may change while a 15-minute bench runs (worker
processes are spawned throughout and would import whatever is on disk at that moment:
a parent on one schema version and a worker on the next). So, before anything imports
rota, src/rota is copied to a temporary directory that goes first on sys.path; spawned
workers inherit sys.path, so every process of the run measures the same code.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "rota"


def _digest(root: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            sha.update(str(path.relative_to(root)).encode())
            sha.update(path.read_bytes())
    return sha.hexdigest()[:12]


def pin_rota_source(source: Path = SOURCE) -> str:
    """Copy ``source`` (src/rota, or another revision's copy of it: bench.ab) aside and
    import rota from there; returns a line for the report."""
    if "rota" in sys.modules:
        raise RuntimeError("rota was imported before its source could be pinned")
    if not source.is_dir():
        return "the installed rota package (no src/ checkout found)"
    root = Path(tempfile.mkdtemp(prefix="rota-bench-src-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    shutil.copytree(source, root / "rota", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(root))
    # Also for anything started with subprocess rather than multiprocessing.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(root), os.environ.get("PYTHONPATH")])
    )
    return f"src/rota as it was when the run started (content sha256 {_digest(root / 'rota')})"
