"""Helpers shared by the job scripts: synthetic Parquet inputs and timed CLI runs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from pulsnar_dask import make_pu_data
from pulsnar_dask.core.config import PUConfig
from pulsnar_dask.datasets.synthetic import iter_pu_chunks
from pulsnar_dask.io import write_pu_parquet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the harness, benchmarks/, is imported from the repository root

from benchmarks.realdata import HELD_OUT_SETS, REAL_SETS, scar_pu_data  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DATA = ROOT.parent / "shared" / "data"  # the real data sets (its README)
CLI = [sys.executable, "-m", "pulsnar_dask"]
# the real SNAR tables whose positive classes are subtypes (SCARSUB_*: hidden at one rate)
SUBTYPE_SETS = ("segment", "digits", "gas", "shuttle", "avila")
# the held-out panel's SNAR tables (benchmarks.realdata.HELD_OUT_SETS), SCARSUB_* alike
HELD_OUT_SUBTYPE_SETS = ("pendigits", "satimage", "vehicle", "contraceptive")


def build(family: str, fraction: float, seed: int):
    """A run's PU data and its categorical columns (the estimator's names)."""
    if family in ("SNAR_synthetic", "SCAR_synthetic"):
        scenario = family.split("_")[0].lower()
        return make_pu_data(scenario, 2000, 6000, 50, fraction, random_state=seed), None
    sets = {**REAL_SETS, **HELD_OUT_SETS}
    if family.startswith("SCARSUB_"):
        real = sets["SNAR_" + family.removeprefix("SCARSUB_")]
        X, classes = real.read(Path(DATA) / real.folder)
        values, sizes = np.unique(classes, return_counts=True)
        # the SNAR construction's negative class: shuttle's 1, elsewhere the largest
        negative = 1 if family == "SCARSUB_shuttle" else int(values[np.argmax(sizes)])
        return scar_pu_data(X, classes != negative, fraction, seed), None
    real = sets[family]
    return real.pu_data(DATA, fraction, seed), [f"x{i}" for i in real.categorical] or None


def provenance() -> str:
    """One line that says what produced a results file: the command, the commit (with
    ``+changes`` where the checkout's code differs from it), the date, the machine, and
    the versions of Python and the packages the figures depend on."""
    import datetime
    import importlib.metadata
    import platform

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return out.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    # results files a job has just written are not changes to what produced them
    if git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results"):
        commit += "+changes"
    packages = ("pulsnar-dask", "xgboost", "dask", "distributed", "numpy", "scikit-learn")
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in packages)
    memory = psutil.virtual_memory().total / 2**30
    command = " ".join(["python", *sys.argv])
    return (
        f"Produced by `{command}` at commit {commit} on "
        f"{datetime.date.today().isoformat()}, on {os.cpu_count()} cores and {memory:.0f} GiB "
        f"({platform.machine()}); Python {platform.python_version()}, {versions}."
    )


def write_result(path: Path, text: str) -> None:
    """Write a results file with its :func:`provenance` line at the end."""
    path.write_text(text.rstrip("\n") + "\n\n" + provenance() + "\n")


def half_width(values) -> float:
    """Half the width of the normal 95% interval of the mean of ``values``: 1.96
    standard errors (NaN for fewer than two values)."""
    values = pd.Series(values, dtype=float)
    return float(1.96 * values.std(ddof=1) / np.sqrt(len(values)))


def config_from_settings(
    items: Iterable[str], source: str, allowed: Sequence[str] | None = None, why: str = ""
) -> PUConfig:
    """``OPTION=JSON`` items as the PUConfig they name (a job's ``--set``, a variant).

    A malformed item, an option outside ``allowed`` (``why`` says why only those), one
    named twice, a value that is not JSON or that PUConfig refuses ends the job with one
    line beginning with ``source`` (the flag and what it was given).
    """
    options = {}
    for item in items:
        name, equals, value = item.partition("=")
        name = name.strip()
        if not equals or (allowed is not None and name not in allowed):
            raise SystemExit(f"{source}: {item!r} is not OPTION=VALUE{why}")
        if name in options:
            raise SystemExit(f"{source}: {name} is named twice")
        try:
            options[name] = json.loads(value)
        except ValueError:
            raise SystemExit(
                f"{source}: {value!r} is not JSON (text needs double quotes, "
                'e.g. bin_method="sturges")'
            ) from None
    try:
        return PUConfig(**options)
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"{source}: {exc}") from None


def synthetic_parquet(
    path: Path,
    scenario: str,
    n_pos: int,
    n_unlab: int,
    n_features: int,
    alpha: float,
    seed: int = 0,
    partitions: int = 4,
    class_sep: float = 0.3,
    chunked: bool = False,
) -> float:
    """Write the paper's synthetic data to ``path`` unless it is already there.

    ``chunked`` draws it with :func:`iter_pu_chunks` (``partitions`` chunks, bounded
    memory) instead of the paper's :func:`make_pu_data`.

    Returns
    -------
    float
        The data's true alpha.
    """
    marker = path / "_true_alpha"
    if not marker.exists():
        if chunked:
            chunk_rows = -(-(n_pos + n_unlab) // partitions)
            chunks = iter_pu_chunks(
                scenario, n_pos, n_unlab, n_features, alpha, chunk_rows, class_sep,
                random_state=seed,
            )  # fmt: skip
        else:
            data = make_pu_data(
                scenario, n_pos, n_unlab, n_features, alpha, class_sep=class_sep,
                random_state=seed,
            )  # fmt: skip
            chunks = data.split(partitions)
        _, true_alpha = write_pu_parquet(chunks, path)
        marker.write_text(str(true_alpha))
    return float(marker.read_text())


def _tree_rss(proc: psutil.Process) -> tuple[int, int]:
    """Return (sum, largest) of the RSS of ``proc`` and everything it started."""
    sizes = [0]
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            sizes.append(p.memory_info().rss)
    return sum(sizes), max(sizes)


def timed_run(
    args: list[str],
    env: dict | None = None,
    watch: list[psutil.Process] | None = None,
    quiet: bool = True,
    command: str = "run",
) -> dict:
    """Run ``pulsnar-dask run`` (or another ``command``) as its own process under
    /usr/bin/time.

    ``watch``: further processes (a cluster's workers) whose RSS is sampled with the
    client's; ``quiet=False`` keeps the run's log (``stderr`` in the result).

    Returns
    -------
    dict
        The summary plus ``wall_s`` (whole process), ``finished`` (``time.time()`` at
        its end), ``peak_rss_mib`` (/usr/bin/time's
        figure: the client's own peak, as local workers are forked by a server rather
        than waited for by the client), and, sampled every 0.2 s over the client and
        everything it started, ``peak_process_rss_mib`` (the largest single process) and
        ``peak_tree_rss_mib`` (the largest sum; pages shared by forked workers count in
        each of them); with ``watch``, ``samples``: (``time.time()``, largest RSS in MiB
        of each watched process and its children).
    """
    line = ["/usr/bin/time", "-v", *CLI, command, *args, "--overwrite"]
    if quiet:
        line.append("--quiet")
    start = time.perf_counter()
    proc = subprocess.Popen(
        line,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    peak = [0, 0]
    samples: list[tuple[float, list[float]]] = []
    done = threading.Event()

    def sample() -> None:
        root = psutil.Process(proc.pid)
        while not done.wait(0.2):
            try:
                peak[:] = map(max, peak, _tree_rss(root))
            except psutil.Error:
                return
            if watch:
                moment = time.time()
                samples.append((moment, [_tree_rss(w)[1] / 2**20 for w in watch]))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"run failed ({proc.returncode}): {stderr[-2000:]}")
    summary = json.loads(stdout.strip().splitlines()[-1])
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    summary["wall_s"] = wall
    summary["finished"] = time.time()
    summary["peak_rss_mib"] = int(rss.group(1)) / 1024 if rss else float("nan")
    summary["peak_tree_rss_mib"] = peak[0] / 2**20
    summary["peak_process_rss_mib"] = peak[1] / 2**20
    summary["samples"] = samples
    summary["stderr"] = stderr
    return summary
