"""Large blocks from the heap inside the Dask executor's mapped tasks, where Dask's nanny
turned glibc's dynamic mmap threshold off; nothing changes elsewhere or after."""

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pulsnar_dask.dask_executor.malloc import MALLOC_VARIABLES


def _glibc_version() -> tuple[int, ...]:
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, ValueError, OSError):
        return ()
    return tuple(int(v) for v in version.split(".")[:2]) if name == "glibc" else ()


pytestmark = pytest.mark.skipif(
    _glibc_version() < (2, 33), reason="glibc's malloc parameters and mallinfo2 (glibc 2.33+)"
)


def new_block_mmapped_bytes() -> int:
    """Bytes glibc mmaps for one new 4 MiB array (0: it came from the heap)."""

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                *("arena", "ordblks", "smblks", "hblks", "hblkhd"),
                *("usmblks", "fsmblks", "uordblks", "fordblks", "keepcost"),
            )
        ]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    block = np.ones(1 << 19)  # once first: glibc's dynamic threshold learns from a free
    del block
    before = libc.mallinfo2().hblkhd
    block = np.ones(1 << 19)
    grown = libc.mallinfo2().hblkhd - before
    del block
    return int(grown)


PROBE = """
import json, os, sys
if sys.argv[1:] == ["late"]:  # set after start-up, as a nanny sets its own process's
    os.environ["MALLOC_TRIM_THRESHOLD_"] = "65536"
from tests.test_malloc import new_block_mmapped_bytes
from pulsnar_dask.dask_executor.malloc import heap_blocks
before = new_block_mmapped_bytes()
with heap_blocks() as changed:
    inside = new_block_mmapped_bytes()
print(json.dumps([before, changed, inside, new_block_mmapped_bytes()]))
"""


def probe(env: dict[str, str], *args: str) -> list:
    """Mmapped bytes of a new 4 MiB array before ``heap_blocks``, whether it changed
    anything, the same inside it and after it, in a process started with ``env``
    (malloc reads its variables at start-up)."""
    ours = (*MALLOC_VARIABLES, "GLIBC_TUNABLES")
    base = {k: v for k, v in os.environ.items() if k not in ours}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    return json.loads(out.stdout)


def test_the_nanny_setting_is_lifted_for_the_block_only():
    before, changed, inside, after = probe({"MALLOC_TRIM_THRESHOLD_": "65536"})
    assert before >= 4 * 2**20  # every large block mmapped, as on a Dask worker
    assert changed and inside == 0
    assert after >= 4 * 2**20


def test_a_plain_process_keeps_glibcs_behaviour():
    assert probe({}) == [0, False, 0, 0]
    # a variable put into os.environ after start-up was never read by glibc: its
    # dynamic threshold is on, and a fixed value put back after the block would end it
    assert probe({}, "late") == [0, False, 0, 0]


def test_the_users_own_choice_stands():
    before, changed, inside, after = probe(
        {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TOP_PAD_": "0"}
    )
    assert not changed and min(before, inside, after) >= 4 * 2**20


def test_the_dask_executors_mapped_tasks_use_the_heap(client):
    import dask.dataframe as dd
    import pandas as pd

    from pulsnar_dask.dask_executor.engine import DaskExecutor
    from pulsnar_dask.io import PUFrame

    frame = dd.from_pandas(pd.DataFrame({"f0": [0.0, 1.0], "label": [0, 1], "row_id": [0, 1]}))
    executor = DaskExecutor(client, PUFrame(frame, ["f0"], "label", "row_id", None))
    assert executor.map(new_block_mmapped_bytes, [()] * 4) == [0] * 4
    # the workers' own setting (Dask's) outside the mapped tasks
    assert all(v >= 4 * 2**20 for v in client.run(new_block_mmapped_bytes).values())
