"""Writing a run's outputs to a local directory or an fsspec URL, safely.

Order: predictions are written by the workers under a staging folder inside the output
location, moved into place when complete, then the model, the report, and ``summary.json`` last, so
a location without ``summary.json`` is visibly an unfinished run. A rerun with
``overwrite`` first removes the old summary for the same reason.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import dask.dataframe as dd
import fsspec
import pandas as pd
from distributed import Client
from fsspec.implementations.local import LocalFileSystem

from pulsnar_dask.core.model import PUModel
from pulsnar_dask.errors import PUError

logger = logging.getLogger(__name__)

SUMMARY = "summary.json"
PREDICTIONS = "predictions"


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
        self.staging = f"{self.path}/_staging-{uuid.uuid4().hex[:12]}"

    def _url(self, path: str) -> str:
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return path if protocol in ("file", "local") else f"{protocol}://{path}"

    def prepare(self) -> None:
        """Refuse a finished run unless overwriting, and a location that cannot be
        written; clear the old summary when overwriting.

        Writing is tried with an empty probe file, removed at once (and the location with
        it when the probe created it): nothing stays until the first result is written.
        """
        summary = f"{self.path}/{SUMMARY}"
        try:
            existed = self.fs.exists(self.path)
            finished = existed and self.fs.exists(summary)
        except Exception as exc:
            raise PUError(f"cannot access output location {self.url}: {exc}") from None
        if finished and not self.overwrite:
            raise PUError(
                f"{self.url} already holds a finished run ({SUMMARY}); "
                "pass --overwrite to replace it"
            )
        probe = f"{self.path}/.write-check-{uuid.uuid4().hex[:12]}"
        try:
            if isinstance(self.fs, LocalFileSystem):  # object stores have no folders
                self.fs.makedirs(self.path, exist_ok=True)
            self.fs.pipe_file(probe, b"")
            self.fs.rm(probe)
            if not existed and self.fs.exists(self.path):
                self.fs.rm(self.path, recursive=True)
        except Exception as exc:
            raise PUError(f"cannot write to output location {self.url}: {exc}") from None
        if finished:
            self.fs.rm(summary)

    def write_predictions(
        self,
        client: Client,
        frame: dd.DataFrame,
        id_col: str,
        label_col: str,
        table: pd.DataFrame,
    ) -> str:
        """Have the workers write (id, label, result columns) as Parquet; return its URL.

        The result columns are split by row id over as many partitions as the input has
        and joined to the input's (id, label) rows by a shuffle, so each worker receives
        its share of them, never the whole table.

        Parameters
        ----------
        client : distributed.Client
            Where the writing runs.
        frame : dask.dataframe.DataFrame
            The input, with ``id_col`` and ``label_col``.
        table : pandas.DataFrame
            Result columns indexed by row id, sorted.
        """
        results = dd.from_pandas(table, npartitions=max(frame.npartitions, 1), sort=True)
        rows = frame[[id_col, label_col]].merge(
            results, left_on=id_col, right_index=True, how="left"
        )
        return self.write_frame(client, rows)[0]

    def write_frame(
        self, client: Client, rows: dd.DataFrame, compute_with: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Have the workers write ``rows`` as the run's ``predictions`` dataset. The files
        go to the staging folder and move into place when all are written.

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
            The dataset's URL, and ``compute_with``'s collections computed.
        """
        self.fs.makedirs(self.path, exist_ok=True)
        staged = f"{self.staging}/{PREDICTIONS}"
        write = rows.to_parquet(
            self._url(staged),
            storage_options=self.storage_options,
            write_index=False,
            compute=False,
        )
        names = list(compute_with or {})
        done = client.gather(client.compute([write, *(compute_with or {}).values()]))
        values = dict(zip(names, done[1:], strict=True))
        final = f"{self.path}/{PREDICTIONS}"
        if self.fs.exists(final):
            self.fs.rm(final, recursive=True)
        if isinstance(self.fs, LocalFileSystem):
            self.fs.mv(staged, final, recursive=True)  # one rename: atomic
        else:  # object stores have no directories to rename: move object by object
            for source in self.fs.find(staged):
                self.fs.mv(source, final + source[len(staged) :])
        return self._url(final), values

    def write_model(self, model: PUModel) -> str:
        """Write a run's model to ``model/`` (:func:`pulsnar_dask.io.write_model`); return
        its URL."""
        from pulsnar_dask.io import MODEL_DIR, write_model

        url = self._url(f"{self.path}/{MODEL_DIR}")
        write_model(model, url, self.storage_options)
        return url

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write one file of the run (report, plot)."""
        self.fs.pipe(f"{self.path}/{name}", data)

    def write_summary(self, summary: dict[str, Any]) -> str:
        """Write ``summary.json`` (the last file of a run) and return its text."""
        text = json.dumps(summary, sort_keys=True)
        self.fs.pipe(f"{self.path}/{SUMMARY}", text.encode())
        return text

    def discard_staging(self) -> None:
        """Remove the staging folder (after success or failure)."""
        try:
            if self.fs.exists(self.staging):
                self.fs.rm(self.staging, recursive=True)
        except Exception:
            logger.warning("could not remove %s", self.staging)
