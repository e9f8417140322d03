"""Writing a run's outputs to a local directory or an fsspec URL, safely.

One run at a time writes at an output location: :meth:`RunOutput.prepare` creates its
``_running.json`` exclusively (a hard link locally, a conditional put on S3; other
stores warn that they cannot), and a second run there is refused until the first has
ended. Every file of a run (the predictions, written by the workers, the model, the
report and its plots, ``summary.json``) is written under a staging folder inside the
output location; :meth:`RunOutput.commit` moves them into place at the end,
``summary.json`` last, so a location without ``summary.json`` is visibly an unfinished
run. A failed or interrupted run leaves the location as it found it: with ``overwrite``,
the previous run stays whole until the new one is complete.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask.dataframe as dd
import fsspec
import pandas as pd
from dask.core import flatten, get_dependencies
from distributed import Client, wait
from fsspec.implementations.local import LocalFileSystem

from pulsnar_dask.core.combine import RowOutputs
from pulsnar_dask.core.model import PUModel
from pulsnar_dask.dask_executor.sending import sent_once
from pulsnar_dask.errors import PUError
from pulsnar_dask.io import RUN_SUMMARY
from pulsnar_dask.pipeline.result import HeldRows

logger = logging.getLogger(__name__)

SUMMARY = RUN_SUMMARY
PREDICTIONS = "predictions"
STAGING_PREFIX = "_staging-"
PREVIOUS_PREFIX = "_previous-"  # an older run's files, set aside while a run commits
LOCK = "_running.json"  # the run writing at the location: host, pid, start, token
# The report and its plots (pulsnar_dask.report.CAPTIONS names the same plots).
REPORT_FILES = ("report.html", "densities.png", "objective.png", "bic.png", "calibration.png")


def is_run_entry(name: str) -> bool:
    """Whether a file or folder name is one a run writes (or leaves while writing): only
    those are ever replaced or removed at an output location."""
    from pulsnar_dask.io import MODEL_DIR

    return name in (SUMMARY, PREDICTIONS, MODEL_DIR, *REPORT_FILES) or name.startswith(
        (STAGING_PREFIX, PREVIOUS_PREFIX, LOCK)  # and a lock being written whole
    )


class RunOutput:
    """The output location of one run.

    Parameters
    ----------
    url : str
        Local directory or fsspec URL.
    storage_options : dict or None
        fsspec options.
    overwrite : bool
        Replace a finished run already at ``url``.
    """

    def __init__(self, url: str, storage_options: dict | None = None, overwrite: bool = False):
        self.url = url.rstrip("/")
        self.storage_options = storage_options or {}
        self.overwrite = overwrite
        try:
            self.fs, self.path = fsspec.core.url_to_fs(self.url, **self.storage_options)
        except (ImportError, ValueError) as exc:
            raise PUError(f"cannot use output location {url}: {exc}") from None
        self.path = self.path.rstrip("/")
        self.token = uuid.uuid4().hex[:12]  # names this run's staging and its lock
        self.staging = f"{self.path}/{STAGING_PREFIX}{self.token}"
        self._created: str | None = None  # the top folder this run creates (see prepare)

    @property
    def _protocol(self) -> str:
        protocol = self.fs.protocol
        return protocol if isinstance(protocol, str) else protocol[0]

    def _url(self, path: str) -> str:
        return path if self._protocol in ("file", "local") else f"{self._protocol}://{path}"

    def _entries(self, folder: str | None = None) -> list[str]:
        """Names directly under ``folder`` (default: the location; none when it does not
        exist; an object store's marker of the folder itself is not one)."""
        from pulsnar_dask.io import folder_names

        folder = folder or self.path
        self.fs.invalidate_cache()
        if not self.fs.exists(folder) or not self.fs.isdir(folder):
            return []
        return folder_names(self.fs, folder)

    def check_apart_from(self, url: str, role: str = "input") -> None:
        """Refuse an output location that is, holds or lies inside ``url`` (the input, or
        the model a ``score`` applies): the run would write into it, or replace it."""
        try:
            fs, path = fsspec.core.url_to_fs(url.rstrip("/"), **self.storage_options)
        except (ImportError, ValueError):
            return  # the input's reader says what is wrong with it
        if type(fs) is not type(self.fs):
            return
        if isinstance(fs, LocalFileSystem):
            path, own = str(Path(path).resolve()), str(Path(self.path).resolve())
        else:
            path, own = path.rstrip("/"), self.path
        if path == own or path.startswith(own + "/") or own.startswith(path + "/"):
            raise PUError(
                f"--out {self.url} and the {role} {url} overlap; the outputs need a "
                "location of their own"
            )

    def prepare(self) -> None:
        """Refuse a finished run unless overwriting, a location holding files that are
        not a run's, and a location that cannot be written; then take the location for
        this run (:data:`LOCK`), or refuse it while another run holds it.

        The location is checked again once taken, for a run that finished meanwhile.
        Only ``_running.json`` (and the folders of a new location) are written, and
        :meth:`discard_staging` removes them.
        """
        self._check_entries(warn=False)
        top = self._first_missing_folder()
        try:
            if isinstance(self.fs, LocalFileSystem):  # object stores have no folders
                self.fs.makedirs(self.path, exist_ok=True)
            claimed = self._claim()
        except Exception as exc:
            self._remove_empty(top)
            raise PUError(f"cannot write to output location {self.url}: {exc}") from None
        if not claimed:
            self._remove_empty(top)
            raise PUError(self._in_use())
        self._created = top
        try:
            self._check_entries(warn=True)
        except PUError:
            self.discard_staging()
            raise

    def _check_entries(self, warn: bool) -> None:
        """Refuse what :meth:`prepare` refuses; ``warn``: name the folders an interrupted
        run left (only once the location is this run's: before, they may be the
        holder's)."""
        try:
            existed = self.fs.exists(self.path)
            is_file = existed and not self.fs.isdir(self.path)
            entries = self._entries() if existed and not is_file else []
        except Exception as exc:
            raise PUError(f"cannot access output location {self.url}: {exc}") from None
        if is_file:
            raise PUError(
                f"--out {self.url} is a file, not a folder; the outputs need a folder of their own"
            )
        if SUMMARY in entries and not self.overwrite:
            raise PUError(
                f"{self.url} already holds a finished run ({SUMMARY}); "
                "pass --overwrite to replace it"
            )
        # hidden files (a file browser's .DS_Store) are neither a run's nor in the way
        foreign = sorted(n for n in entries if not is_run_entry(n) and not n.startswith("."))
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise PUError(
                f"{self.url} holds files that are not a run's ({shown}); "
                "choose a new or empty location"
            )
        # a run killed outright (SIGKILL, a lost node) leaves its staged files; they may
        # be large, and they are another run's, so they are named, not removed
        stale = sorted(n for n in entries if n.startswith((STAGING_PREFIX, PREVIOUS_PREFIX)))
        if stale and warn:
            logger.warning(
                "%s holds %d folder(s) an interrupted run left (%s); they are kept: remove "
                "them when no run is writing there",
                self.url,
                len(stale),
                ", ".join(stale[:3]) + (", ..." if len(stale) > 3 else ""),
            )

    @property
    def _lock(self) -> str:
        return f"{self.path}/{LOCK}"

    def _claim(self) -> bool:
        """Create :data:`LOCK` exclusively, whole; ``False`` where another run holds it."""
        holder = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "token": self.token,
        }
        data = json.dumps(holder).encode()
        if isinstance(self.fs, LocalFileSystem):
            # written whole beside it, then linked: the link fails where a lock exists,
            # and no reader ever sees a part of one
            whole = f"{self._lock}.{self.token}"
            try:
                with open(whole, "xb") as f:
                    f.write(data)
                os.link(whole, self._lock)
            except FileExistsError:
                return False
            except OSError as exc:  # a filesystem with no hard links: created in place
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                try:
                    with open(self._lock, "xb") as f:
                        f.write(data)
                except FileExistsError:
                    return False
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(whole)
            return True
        if self._protocol in ("s3", "s3a"):
            try:
                self.fs.pipe_file(self._lock, data, mode="create")  # If-None-Match: *
                return True
            except FileExistsError:
                return False
            except OSError as exc:  # a store that does not do conditional writes
                if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    raise
        logger.warning(
            "%s cannot be claimed exclusively on this storage: a run started there at the "
            "same moment could write beside this one",
            self.url,
        )
        if self.fs.exists(self._lock):
            return False
        self.fs.pipe_file(self._lock, data)
        return True

    def _holder(self) -> dict[str, Any] | None:
        """The run :data:`LOCK` names (``None``: gone, or not readable yet)."""
        try:
            held = json.loads(self.fs.cat_file(self._lock))
        except (FileNotFoundError, ValueError):
            return None
        return held if isinstance(held, dict) else None

    def _in_use(self) -> str:
        held = self._holder() or {}
        lock = self._url(self._lock)
        if not held:
            return f"{self.url} is in use by a run starting now ({lock})"
        who = f"process {held.get('pid')} on {held.get('host')}, since {held.get('started')}"
        if held.get("host") == socket.gethostname() and _gone(held.get("pid")):
            return (
                f"{self.url} was claimed by {who}, which has ended without releasing it "
                f"(killed?): remove {lock} once you are sure no run writes there"
            )
        return (
            f"{self.url} is in use by another run ({who}); wait for it to end, or remove "
            f"{lock} if no run is writing there"
        )

    def _release(self) -> None:
        """Remove :data:`LOCK` where it is this run's."""
        held = self._holder()
        if held is not None and held.get("token") == self.token:
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm(self._lock)

    def _remove_empty(self, top: str | None) -> None:
        """Remove the folders of a new local location, from the location up to ``top``,
        each only while it is empty (another run may have begun there)."""
        if top is None:
            return
        path = Path(self.path)
        while True:
            try:
                path.rmdir()
            except OSError:
                return
            if str(path) == top:
                return
            path = path.parent

    def _first_missing_folder(self) -> str | None:
        """The outermost folder of a local location that does not exist yet (what
        creating the location creates), or ``None``."""
        if not isinstance(self.fs, LocalFileSystem):
            return None
        path, top = Path(self.path), None
        while not path.exists() and path != path.parent:
            path, top = path.parent, path
        return None if top is None else str(top)

    @contextlib.contextmanager
    def writing_predictions(
        self,
        client: Client,
        frame: dd.DataFrame,
        id_col: str,
        label_col: str,
        results: dd.DataFrame,
    ) -> Iterator[str]:
        """Have the workers write (id, label, result columns) as Parquet while the body
        runs (the client builds the report meanwhile); yield the URL the dataset will have
        once committed.

        The result columns (:func:`results_frame`, held by the workers) are joined to the
        input's (id, label) rows by a shuffle, so each worker receives its share of them,
        and none comes here. Leaving waits for every partition's write to end
        (:meth:`_submit_frame`) and raises the first error; where the body failed too,
        its error is raised and the write's is logged.

        Parameters
        ----------
        client : distributed.Client
            Where the writing runs.
        frame : dask.dataframe.DataFrame
            The input, with ``id_col`` and ``label_col``.
        results : dask.dataframe.DataFrame
            ``id_col`` and the result columns.
        """
        rows = frame[[id_col, label_col]].merge(results, on=id_col, how="left")
        if isinstance(rows[label_col].dtype, pd.CategoricalDtype):
            # the checked labels, 0 and 1, as numbers: a categorical's lazy schema names
            # placeholder text categories, which pyarrow refuses to match against the
            # numbers (a warning today, an error in its later versions)
            rows[label_col] = rows[label_col].astype("int8")
        futures = self._submit_frame(client, rows, [])
        try:
            yield self._url(f"{self.path}/{PREDICTIONS}")
        except BaseException:
            try:  # the body's error is the one raised, whatever becomes of the writes
                wait(futures)
                failed = next((f for f in futures if f.status == "error"), None)
                if failed is not None:
                    logger.error("writing the predictions failed too: %s", failed.exception())
            except Exception as exc:
                logger.error("writing the predictions failed too: %s", exc)
            raise
        wait(futures)
        client.gather(futures)

    def write_frame(
        self, client: Client, rows: dd.DataFrame, compute_with: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Have the workers write ``rows`` as the run's ``predictions`` dataset (staged);
        return once every partition's write has ended (:meth:`_submit_frame`).

        Parameters
        ----------
        client : distributed.Client
            Where the writing runs.
        rows : dask.dataframe.DataFrame
        compute_with : dict of dask collections, or None
            Computed in the same pass as the writing (sharing its reads).

        Returns
        -------
        (url, values)
            The dataset's URL once committed, and ``compute_with``'s collections computed.
        """
        compute_with = compute_with or {}
        futures = self._submit_frame(client, rows, list(compute_with.values()))
        wait(futures)
        done = client.gather(futures)
        values = dict(zip(compute_with, done[1 : 1 + len(compute_with)], strict=True))
        return self._url(f"{self.path}/{PREDICTIONS}"), values

    def _submit_frame(self, client: Client, rows: dd.DataFrame, others: list[Any]) -> list[Any]:
        """Start writing ``rows`` into the staging folder's ``predictions``, computing
        ``others`` in the same pass (one graph, so they share its reads).

        Returns the futures of the writing and of ``others``, in that order, then one of
        each partition's write. A failed partition fails the writing at once while the
        others still run: waiting for every partition's own future is what keeps a file
        from landing in the staging folder after it is discarded. The graph is built the
        way ``Client.compute`` builds it, with those futures added.
        """
        from dask._expr import FinalizeCompute
        from dask.base import collections_to_expr

        self.fs.makedirs(self.staging, exist_ok=True)
        write = rows.to_parquet(
            self._url(f"{self.staging}/{PREDICTIONS}"),
            storage_options=self.storage_options,
            write_index=False,
            compute=False,
        )
        expr = FinalizeCompute(collections_to_expr([write, *others], True)).optimize()
        names = list(flatten(expr.__dask_keys__()))
        graph = dict(expr.__dask_graph__())
        parts = sorted(get_dependencies(graph, names[0]), key=str)  # the writing's barrier
        with sent_once():  # a large graph: many partitions' writes
            return client.get(graph, [*names, *parts], sync=False)

    def write_model(self, model: PUModel) -> str:
        """Write a run's model (:func:`pulsnar_dask.io.write_model`, staged); return the
        URL of its ``model/`` folder once committed."""
        from pulsnar_dask.io import MODEL_DIR, write_model

        write_model(model, self._url(f"{self.staging}/{MODEL_DIR}"), self.storage_options)
        return self._url(f"{self.path}/{MODEL_DIR}")

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write one file of the run (report, plot, summary; staged)."""
        self.fs.makedirs(self.staging, exist_ok=True)
        self.fs.pipe_file(f"{self.staging}/{name}", data)

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json`` (staged; :meth:`commit` moves it into place last)."""
        self.write_bytes(SUMMARY, json.dumps(summary, sort_keys=True).encode())

    def commit(self) -> None:
        """Move the staged run into place: an older run's files are set aside (its
        summary first), the new files moved in (``summary.json`` last), and the older
        files removed. If a move fails or is interrupted, the new files that were placed
        are removed and the older run is put back (its summary last).

        A local folder moves with one rename; object stores have no folders and move
        object by object.
        """
        staged = set(self._entries(self.staging))
        aside = f"{self.path}/{PREVIOUS_PREFIX}{self.token}"
        transient = (STAGING_PREFIX, PREVIOUS_PREFIX, LOCK)
        older = [n for n in self._entries() if is_run_entry(n) and not n.startswith(transient)]
        older = sorted(older, key=lambda n: n != SUMMARY)  # the summary first
        moved: list[str] = []
        placed: list[str] = []
        try:
            for name in older:
                self._move(f"{self.path}/{name}", f"{aside}/{name}")
                moved.append(name)
            for name in sorted(staged - {SUMMARY}) + [SUMMARY] * (SUMMARY in staged):
                self._move(f"{self.staging}/{name}", f"{self.path}/{name}")
                placed.append(name)
        except BaseException:
            try:
                for name in placed:
                    self.fs.rm(f"{self.path}/{name}", recursive=True)
                for name in sorted(moved, key=lambda n: n == SUMMARY):  # the summary last
                    self._move(f"{aside}/{name}", f"{self.path}/{name}")
            except Exception:
                if moved:
                    logger.error("could not put the older run back; its files are in %s", aside)
                else:  # a reader is told that the location holds no finished run
                    logger.error(
                        "could not remove this run's files already placed at %s (it has no "
                        "summary.json: no finished run)",
                        self.path,
                    )
                raise
            self._remove(aside)
            raise
        self._remove(aside)

    def _remove(self, path: str | None) -> None:
        if path is not None and self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def _move(self, source: str, target: str) -> None:
        if isinstance(self.fs, LocalFileSystem):
            self.fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
            self.fs.mv(source, target, recursive=True)  # one rename
        elif self.fs.isdir(source):
            for item in self.fs.find(source):
                self.fs.mv(item, target + item[len(source) :])
        else:
            self.fs.mv(source, target)

    def discard_staging(self) -> None:
        """Remove the staging folder (after success or failure), release the location
        (:data:`LOCK`, where it is this run's), and remove the folders this run created
        for the location where it left nothing there."""
        try:
            self._remove(self.staging)
        except Exception:
            logger.warning("could not remove %s", self.staging)
        try:
            self._release()
            if self._created is not None:
                self._remove_empty(self._created)
        except Exception:
            logger.warning("could not remove %s: remove it once the run has ended", self._lock)


def results_frame(client: Client, rows: HeldRows, id_col: str, id_type: Any) -> dd.DataFrame:
    """A run's result columns as a Dask dataframe of ``id_col`` (as ``id_type``, the
    input's id type as Dask reads it) and ``probability``, with
    ``calibrated_probability`` and ``improved_probability`` where the run made them: one
    partition per partition of the rows, computed by the workers that hold them."""
    retrained = rows.retrained or [None] * len(rows.parts)
    futures = [
        client.submit(_results_part, part, retrain, id_col, id_type, pure=False)
        for part, retrain in zip(rows.parts, retrained, strict=True)
    ]
    meta = client.submit(_empty, futures[0]).result()  # the columns, no row
    return dd.from_delayed(futures, meta=meta, verify_meta=False)


def _empty(table: pd.DataFrame) -> pd.DataFrame:
    return table.iloc[:0]


def _results_part(
    outputs: RowOutputs, retrained: tuple | None, id_col: str, id_type: Any
) -> pd.DataFrame:
    """One partition's result columns (:func:`results_frame`)."""
    table = pd.DataFrame({id_col: outputs.row_ids, "probability": outputs.probability})
    if outputs.calibrated is not None:
        table["calibrated_probability"] = outputs.calibrated
    if retrained is not None:
        proba, _, ids = retrained
        improved = pd.DataFrame({id_col: ids, "improved_probability": proba})
        table = table.merge(improved, on=id_col, how="outer")
    return table.astype({id_col: id_type})


def _gone(pid: Any) -> bool:
    """Whether no process of this host has the id ``pid``."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process
        return False
    return False
