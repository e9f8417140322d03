"""The ``pulsnar-dask`` command: ``synth``, ``run``, ``score`` and ``demo``.

User mistakes end with one line on stderr and exit status 2; ``--debug`` adds the
traceback. SIGINT and SIGTERM stop the job, close a cluster it started, and leave no
``summary.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from pulsnar_dask.core.config import PUConfig, check_seed, default_of
from pulsnar_dask.core.scoring import asks_for_gpu
from pulsnar_dask.dask_executor.forkserver import start_fork_server
from pulsnar_dask.errors import PUError

logger = logging.getLogger("pulsnar_dask")

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
PAPER_GENERATOR_LIMIT = 2 * 2**30  # bytes the paper's generator may hold with --generator auto
CHUNK_CELLS = 25_000_000  # values per chunk of the chunked generator (200 MB as float64)


def _positive_int(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


SEED_HELP = "seed of the folds, the subsamples, XGBoost and the mixtures (default: 0)"
OVERWRITE_HELP = "replace a finished run's outputs at --out"


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    try:
        check_seed(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every user error
        raise PUError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pulsnar-dask", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    synth = sub.add_parser("synth", help="write the paper's synthetic PU data as Parquet")
    synth.add_argument(
        "--scenario",
        choices=("scar", "snar"),
        required=True,
        help="scar: positives hidden at random; snar: positive subtypes labeled in equal "
        "numbers and hidden in shares 1:2:4:... (the paper's constructions)",
    )
    synth.add_argument("--n-pos", type=_positive_int(1), required=True, help="labeled positives")
    synth.add_argument("--n-unlab", type=_positive_int(1), required=True, help="unlabeled rows")
    synth.add_argument("--n-features", type=_positive_int(1), required=True, help="features")
    synth.add_argument(
        "--alpha",
        type=_fraction,
        required=True,
        help="fraction of positives among the unlabeled rows, in [0, 1)",
    )
    synth.add_argument(
        "--seed", type=_seed, default=0, help="seed of the generator and the row order (default: 0)"
    )
    synth.add_argument("--out", required=True, help="output Parquet dataset (a local folder)")
    synth.add_argument(
        "--partitions", type=_positive_int(1), default=1, help="Parquet files (default: 1)"
    )
    synth.add_argument(
        "--class-sep",
        type=float,
        default=0.3,
        help="how far apart the classes lie (make_classification's class_sep; default: 0.3, "
        "the paper's)",
    )
    synth.add_argument(
        "--n-subtypes",
        type=_positive_int(1),
        default=5,
        help="positive subtypes (default: 5, the paper's)",
    )
    synth.add_argument(
        "--generator",
        choices=("auto", "paper", "chunked"),
        default="auto",
        help="paper: sklearn's make_classification as the paper (memory grows with "
        "max(P, U) x classes x 2 rows); chunked: the same distribution drawn a chunk at a "
        "time; auto: paper unless it would need more than 2 GiB",
    )
    synth.add_argument(
        "--overwrite", action="store_true", help="replace a dataset synth wrote at --out before"
    )

    run = sub.add_parser("run", help="estimate alpha (and calibrate, classify) on a Dask cluster")
    run.add_argument("--input", required=True, help="Parquet file or dataset, path or URL")
    run.add_argument(
        "--method",
        choices=("auto", "pulscar", "pulsnar"),
        default="auto",
        help="auto (default): PULSCAR's alpha, with the positives' clusters read as PULSNAR "
        "reads them beside it, and their alpha where even their tail reading lies past "
        "PULSCAR's beyond the noise; the interval spans both",
    )
    run.add_argument("--out", required=True, help="output directory or URL")
    _add_run_options(run)

    score = sub.add_parser("score", help="score new rows with a run's saved model")
    score.add_argument("--model", required=True, help="a run's output location or its model/")
    score.add_argument("--input", required=True, help="Parquet file or dataset, path or URL")
    score.add_argument("--out", required=True, help="output directory or URL")
    score.add_argument(
        "--id-col",
        default=None,
        help="unique row ids, any type (default: row_id where present, else generated "
        "from the row position)",
    )
    _add_cluster_options(score)
    score.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)

    demo = sub.add_parser(
        "demo", help="synthetic SNAR data + the default method on a local cluster"
    )
    demo.add_argument(
        "--out", default="demo_output", help="output directory (default: demo_output)"
    )
    demo.add_argument(
        "--n-workers",
        type=_positive_int(1),
        default=None,
        help="local worker processes (default: one per core)",
    )
    demo.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.add_argument("--debug", action="store_true", help="show tracebacks")
    for p in (synth, run, score):
        p.add_argument(
            "--quiet",
            action="store_true",
            help="no progress bars (drawn only when stderr is a terminal; a log gets the "
            "stages' lines)",
        )
        p.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def _add_run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--label-col", default="label", help="1 = labeled positive, 0 = unlabeled (default: label)"
    )
    run.add_argument(
        "--id-col",
        default=None,
        help="unique row ids, any type (default: row_id where "
        "present, else generated from the row position)",
    )
    run.add_argument(
        "--true-label-col",
        default=None,
        help="benchmarks only: the ground truth (0 negative, 1 or more a positive's "
        "subtype), for true_alpha and the metrics; never a feature (default: true_label "
        "where present)",
    )
    run.add_argument(
        "--features",
        nargs="+",
        default=None,
        help="feature columns (default: every numeric, string and category column)",
    )
    run.add_argument(
        "--categorical",
        nargs="+",
        default=None,
        help="numeric columns to take as categorical codes (string and category "
        "columns always are)",
    )
    _add_cluster_options(run)
    run.add_argument("--seed", type=_seed, default=0, help=SEED_HELP)
    run.add_argument(
        "--iterations",
        type=_positive_int(1),
        default=1,
        help="repeats with seeds seed, seed+1, ...; alpha is their mean (default: 1)",
    )
    run.add_argument(
        "--calibrate",
        action="store_true",
        help="calibrated probabilities with the estimated alpha (Algorithm 3)",
    )
    run.add_argument(
        "--classify",
        action="store_true",
        help="retrain on the recovered labels (Algorithm 4); calibrates first",
    )
    run.add_argument(
        "--engine",
        choices=("auto", "task", "dask"),
        default="auto",
        help="task: each fold model trained as one task on its training rows; dask: "
        "xgboost.dask over all workers; auto: by size",
    )
    _add_config_options(run)
    run.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    run.add_argument(
        "--performance-report",
        default=None,
        help="save Dask's performance report (task stream, profiles) as this new HTML file",
    )


def _add_cluster_options(command: argparse.ArgumentParser) -> None:
    """Where the work runs, and how storage is reached."""
    where = command.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, help="address of an existing scheduler")
    where.add_argument("--cluster-config", default=None, help="YAML from cluster_configs/")
    command.add_argument(
        "--n-workers", type=_positive_int(1), default=None, help="local cluster size"
    )
    command.add_argument(
        "--dashboard",
        action="store_true",
        help="serve Dask's dashboard from the local cluster (its address is logged)",
    )
    command.add_argument("--storage-options", default=None, help="fsspec options as JSON")


def _add_config_options(run: argparse.ArgumentParser) -> None:
    """One option per :class:`PUConfig` field that names a flag: its default, choices and
    help come from the field's declaration."""
    settings = run.add_argument_group("settings", "(see PUConfig; checked before any work)")
    for f in fields(PUConfig):
        meta = f.metadata
        if meta["flag"] is None:
            continue
        default = default_of(f)
        settings.add_argument(
            meta["flag"],
            dest=f.name,
            type=meta["parse"],
            nargs=meta["nargs"],
            metavar=meta["metavar"],
            choices=meta["choices"],
            default=default,
            help=f"{meta['help']} (default: {default})".replace("%", "%%"),
        )


def config_from_args(args: argparse.Namespace) -> PUConfig:
    """The settings the command line was given.

    Raises
    ------
    PUError
        For a value :class:`PUConfig` refuses.
    """
    values = {f.name: getattr(args, f.name) for f in fields(PUConfig) if f.metadata["flag"]}
    try:
        return PUConfig(**values)
    except ValueError as exc:
        raise PUError(f"invalid settings: {exc}") from None


def _check_room(out: Path, size: int) -> None:
    """Refuse a dataset of at least ``size`` bytes (its features as float64, which
    Parquet hardly compresses) where the disk that would hold ``out`` has less free.

    Raises
    ------
    PUError
    """
    folder = out.absolute()
    while not folder.exists():
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if size > free:
        raise PUError(
            f"the data would take at least {size / 2**30:,.1f} GiB and {folder} has "
            f"{free / 2**30:,.1f} GiB free; draw fewer rows or features"
        )


def _synth(args: argparse.Namespace) -> None:
    from pulsnar_dask.datasets.synthetic import iter_pu_chunks, make_pu_data, paper_generator_bytes
    from pulsnar_dask.io import check_replaceable_dataset, write_pu_parquet

    if "://" in args.out:
        raise PUError(f"--out {args.out}: synth writes a local folder, not a URL")
    out = Path(args.out)
    check_replaceable_dataset(out)  # before drawing what may be gigabytes
    if (out.exists() or out.is_symlink()) and not args.overwrite:
        raise PUError(f"{out} already exists; pass --overwrite to replace it")
    _check_room(out, (args.n_pos + args.n_unlab) * args.n_features * 8)
    generator = args.generator
    if generator == "auto":
        size = paper_generator_bytes(
            args.scenario, args.n_pos, args.n_unlab, args.n_features, args.n_subtypes
        )
        generator = "paper" if size <= PAPER_GENERATOR_LIMIT else "chunked"
        if generator == "chunked":
            logger.info(
                "the paper's generator would hold %.1f GiB; drawing the same distribution in "
                "chunks instead (--generator paper to insist)",
                size / 2**30,
            )
    try:
        if generator == "paper":
            chunks = make_pu_data(
                args.scenario,
                args.n_pos,
                args.n_unlab,
                args.n_features,
                args.alpha,
                class_sep=args.class_sep,
                n_subtypes=args.n_subtypes,
                random_state=args.seed,
            ).split(args.partitions)
        else:
            total = args.n_pos + args.n_unlab
            chunk_rows = min(-(-total // args.partitions), max(1, CHUNK_CELLS // args.n_features))
            chunks = iter_pu_chunks(
                args.scenario,
                args.n_pos,
                args.n_unlab,
                args.n_features,
                args.alpha,
                chunk_rows=chunk_rows,
                class_sep=args.class_sep,
                n_subtypes=args.n_subtypes,
                random_state=args.seed,
            )
        n_rows, true_alpha = write_pu_parquet(chunks, out)
    except PUError:
        raise
    except ValueError as exc:
        raise PUError(f"cannot generate this data: {exc}") from None
    except MemoryError as exc:
        raise PUError(f"cannot generate this data: not enough memory ({exc})") from None
    print(f"wrote {n_rows} rows to {out} (true alpha {true_alpha:.4f}, {generator} generator)")


def late_imports(method: str, calibration_method: str, iterations: int) -> tuple[str, ...]:
    """What the job's client will import of scikit-learn and scipy.stats (0.4-0.6 s of
    CPU, most of it scipy.stats), which :func:`_import_in_background` takes off its
    critical path: the mixtures' fits that a clustering run receives from its workers,
    the logistic calibration, and the t interval of several iterations' mean. A single
    PULSCAR run with the (default) isotonic calibration needs none of it: on a local
    cluster the import would only compete with the workers' start for the cores."""
    modules = ("sklearn.mixture",) if method != "pulscar" else ()
    modules += ("sklearn.linear_model",) if calibration_method == "sigmoid" else ()
    return modules + (("scipy.stats",) if iterations > 1 else ())


def _import_in_background(modules: Sequence[str]) -> None:
    """Import ``modules`` on a thread of their own, while this one waits for the cluster
    to start (or, on an existing one, for the job's first tasks): the job then finds them
    imported instead of paying for them after its last task."""
    if not modules:
        return

    def run() -> None:
        for name in modules:
            # a module that fails to import here fails again where the job imports it,
            # and is reported there as the job's own error
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    threading.Thread(target=run, name="pulsnar-late-imports", daemon=True).start()


def _check_nothing_empty(args: argparse.Namespace) -> None:
    """Refuse a path, address or column name given as an empty string: it would read as
    the current folder, no scheduler, or a column without a name."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise PUError(f"--{name.replace('_', '-')} is given an empty value")


def _check_new_local_file(path: str, option: str) -> None:
    """Refuse a path for a file the run writes outside its output location where
    something is already, where its folder is missing or cannot be written, or where it
    is not local: the file would replace another, or fail as the run ends."""
    target = Path(path)
    if "://" in path:
        raise PUError(f"{option} {path}: a local file path is needed")
    if target.exists() or target.is_symlink():
        raise PUError(f"{option} {path} exists; name a file that does not (nothing is replaced)")
    if not target.parent.is_dir():
        raise PUError(f"{option} {path}: its folder {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise PUError(f"{option} {path}: its folder {target.parent} cannot be written")


def _run(args: argparse.Namespace) -> dict:
    from distributed import performance_report

    from pulsnar_dask.dask_executor.connect import connect
    from pulsnar_dask.dask_executor.engine import run_job
    from pulsnar_dask.io import parse_storage_options, read_pu_parquet
    from pulsnar_dask.outputs import RunOutput, results_frame
    from pulsnar_dask.report import build_report

    config = config_from_args(args)
    try:  # seeds seed .. seed + iterations - 1, checked before a cluster starts
        check_seed(args.seed, args.iterations)
    except ValueError as exc:
        raise PUError(f"--seed with --iterations {args.iterations}: {exc}") from None
    storage_options = parse_storage_options(args.storage_options)
    output = RunOutput(args.out, storage_options, overwrite=args.overwrite)
    output.check_apart_from(args.input)
    if args.performance_report:
        # written as the job ends, outside the run's staging: inside --out it would be a
        # file that is not a run's, in the way of the next --overwrite
        output.check_apart_from(args.performance_report, "performance report")
        _check_new_local_file(args.performance_report, "--performance-report")
    output.prepare()
    try:  # the location is this run's from here: released whatever happens
        _import_in_background(late_imports(args.method, config.calibration_method, args.iterations))
        with connect(args.scheduler, args.cluster_config, args.n_workers, args.dashboard) as client:
            shown = args.dashboard or _names_a_cluster(args)  # else no dashboard to link to
            logger.info(
                "cluster: %s", (shown and client.dashboard_link) or client.scheduler.address
            )
            puf = read_pu_parquet(
                args.input,
                label_col=args.label_col,
                id_col=args.id_col,
                true_label_col=args.true_label_col,
                features=args.features,
                categorical=args.categorical,
                storage_options=storage_options,
            )
            if args.performance_report:
                try:
                    import bokeh  # noqa: F401 - Dask's performance report renders with bokeh
                except ImportError:
                    raise PUError(
                        "--performance-report needs bokeh: pip install 'pulsnar-dask[diagnostics]'"
                    ) from None
            report_context = (
                performance_report(filename=args.performance_report)
                if args.performance_report
                else contextlib.nullcontext()
            )
            with report_context:
                result = run_job(
                    client,
                    puf,
                    method=args.method,
                    config=config,
                    seed=args.seed,
                    iterations=args.iterations,
                    calibrate_probabilities=args.calibrate,
                    classify=args.classify,
                    engine=args.engine,
                    # bars redrawn ten times a second would fill a batch job's log
                    show_progress=not args.quiet and sys.stderr.isatty(),
                    on_stage=lambda _: _stop_if_signalled(),  # a lost signal stops here
                )
            # as Dask reads the ids (strings: Arrow's)
            results = results_frame(client, result.rows, puf.id, puf.frame._meta[puf.id].dtype)
            summary = result.summary()
            logger.info("writing the predictions, the report and the summary to %s", args.out)
            summary["input"] = args.input
            summary["left_out_columns"] = puf.left_out(result.model.schema.names)
            with _writing(args.out):
                with output.writing_predictions(
                    client, puf.frame, puf.id, puf.label, results
                ) as summary["predictions"]:  # the workers write while the report is built
                    summary["model"] = output.write_model(result.model)
                    page, images = build_report(result, summary)
                    for name, data in images.items():
                        output.write_bytes(name, data)
                    output.write_bytes("report.html", page.encode())
                output.write_summary(summary)
                _stop_if_signalled()
                output.commit()
    finally:
        output.discard_staging()
    return summary


def _score(args: argparse.Namespace) -> dict:
    import time

    from pulsnar_dask.dask_executor.apply import check_scored, scored_rows
    from pulsnar_dask.dask_executor.connect import connect
    from pulsnar_dask.io import parse_storage_options, read_model, read_rows_to_score
    from pulsnar_dask.outputs import RunOutput
    from pulsnar_dask.pipeline.checks import n_rows

    start = time.perf_counter()
    storage_options = parse_storage_options(args.storage_options)
    output = RunOutput(args.out, storage_options, overwrite=args.overwrite)
    output.check_apart_from(args.model, "model")
    output.check_apart_from(args.input)
    model = read_model(args.model, storage_options)
    output.prepare()
    try:  # the location is this run's from here: released whatever happens
        with connect(args.scheduler, args.cluster_config, args.n_workers, args.dashboard) as client:
            frame, id_col = read_rows_to_score(
                args.input, model.schema, args.id_col, storage_options, client
            )
            scores, totals = scored_rows(client, frame, id_col, model)
            logger.info("scoring %s with the model at %s", args.input, args.model)
            with _writing(args.out):
                url, totals = output.write_frame(client, scores, compute_with=totals)
            check_scored(totals, id_col)
            unseen = {name: int(n) for name, n in totals["unseen"].items() if n}
            if unseen:
                logger.warning(
                    "categories the model has not seen, scored as missing: %s",
                    ", ".join(f"{name} ({n_rows(n)})" for name, n in unseen.items()),
                )
            summary = {
                "command": "score",
                "model": args.model,
                "model_alpha": model.alpha,
                "model_kind": model.kind,
                "input": args.input,
                "predictions": url,
                "n_rows": int(totals["n_rows"]),
                "expected_positives": round(float(totals["expected_positives"]), 1),
                "unseen_categories": unseen,
                "seconds": round(time.perf_counter() - start, 3),
            }
            with _writing(args.out):
                output.write_summary(summary)
                _stop_if_signalled()
                output.commit()
    finally:
        output.discard_staging()
    return summary


@contextlib.contextmanager
def _writing(out: str):
    """Storage errors while writing the outputs (a full disk, a lost permission: an
    ``OSError`` with an error number; a lost connection to the cluster has none) end in
    one line; the staged files are discarded by the caller."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None:
            raise
        raise PUError(f"cannot write the outputs to {out}: {exc.strerror or exc}") from None


def _demo(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="pulsnar-demo-") as tmp:
        data_dir = Path(tmp) / "snar.parquet"
        print("demo: writing synthetic SNAR data (P=2000, U=10000, 20 features, alpha 0.25)")
        from pulsnar_dask.datasets.synthetic import make_pu_data
        from pulsnar_dask.io import write_pu_parquet

        data = make_pu_data("snar", 2000, 10000, 20, 0.25, class_sep=1.0, random_state=0)
        write_pu_parquet(data.split(4), data_dir)
        run_args = build_parser().parse_args(
            [
                "run",
                "--input",
                str(data_dir),
                "--out",
                args.out,
                "--true-label-col",
                "true_label",
                "--calibrate",
            ]
            + (["--overwrite"] if args.overwrite else [])
            + (["--n-workers", str(args.n_workers)] if args.n_workers else [])
            + (["--quiet"] if args.quiet else [])
        )
        summary = _run(run_args)
    print(f"demo: report at {Path(args.out) / 'report.html'}")
    return summary


def _quiet_distributed(level: int) -> None:
    """Raise the level of Dask's own loggers (they set theirs when imported); the
    shuffle that joins the predictions to the rows reports each shuffle as a warning,
    which is routine here: those only from errors up."""
    import distributed.shuffle  # noqa: F401 - import first so their loggers exist

    for name in _distributed_loggers():
        shuffle = name.startswith("distributed.shuffle")
        logging.getLogger(name).setLevel(max(level, logging.ERROR) if shuffle else level)


def _distributed_loggers() -> list[str]:
    """The names of Dask's loggers that exist so far (imports nothing)."""
    return [
        name
        for name in list(logging.root.manager.loggerDict)
        if name == "distributed" or name.startswith("distributed.")
    ]


def _stop_loggers() -> list[str]:
    """The loggers a stopping signal silences: Dask's, and its event loop's errors in
    callbacks (``tornado.application``: distributed's ``sync`` can schedule a callback
    that fails when the interrupt lands before the call it cancels has started)."""
    return [*_distributed_loggers(), "tornado.application"]


def _names_a_cluster(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "scheduler", None) or getattr(args, "cluster_config", None))


def _hide_gpus_from_cpu_runs(args: argparse.Namespace) -> None:
    """Hide the GPUs from this process and the local workers it starts
    (``CUDA_VISIBLE_DEVICES=""``) unless XGBoost's ``device`` names one (``cuda``,
    ``cuda:1``, ``gpu``...) or the variable is set already: a CUDA build of XGBoost takes
    about 500 MiB of a GPU in every process that uses it, even on the CPU
    (dmlc/xgboost#12116; 8,383 MiB for a 16-worker local cluster:
    benchmarks/results/gpu.md)."""
    if asks_for_gpu(getattr(args, "xgb_params", None) or {}):
        return
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


_signalled: list[int] = []  # the stopping signals this command received


def _terminate(signum: int, frame) -> None:
    """SIGINT and SIGTERM: stop. Dask's own loggers go quiet first
    (:func:`_stop_loggers`), so that the cluster's shutdown (tasks cancelled under it)
    adds no tracebacks to the one line (no import here: the signal may arrive in the
    middle of one).

    The interrupt is raised wherever the main thread is; inside a callback whose errors
    Python only prints (one of distributed's garbage-collector callbacks, in a test run)
    it is lost, so the signal is also recorded, and the command stops at the next stage
    or before it commits any output (:func:`_stop_if_signalled`)."""
    _signalled.append(signum)
    for name in _stop_loggers():
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    raise KeyboardInterrupt(f"signal {signum}")


def _quiet_lost_interrupt(unraisable: sys.UnraisableHookArgs) -> None:
    """``sys.unraisablehook``: an interrupt of :func:`_terminate` raised inside a callback
    whose errors Python only prints (a garbage collector's ``__del__``) is lost, not
    printed as a traceback; :func:`_stop_if_signalled` stops the command. Anything else
    is printed as Python prints it."""
    if _signalled and isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def _stop_if_signalled() -> None:
    """Raise the interrupt of a stopping signal whose own raise was lost."""
    if _signalled:
        raise KeyboardInterrupt(f"signal {_signalled[0]}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    quiet = "--quiet" in argv
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    _signalled.clear()
    sys.unraisablehook = _quiet_lost_interrupt
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    try:
        args = build_parser().parse_args(argv)
        _check_nothing_empty(args)
        if args.command in ("run", "score", "demo"):
            _hide_gpus_from_cpu_runs(args)  # before XGBoost, or a worker, starts
            if not _names_a_cluster(args):
                start_fork_server()  # imports the workers' modules while this process does its own
        _quiet_distributed(logging.ERROR if quiet else logging.WARNING)
        if args.command == "synth":
            _synth(args)
            return 0
        summary = {"run": _run, "score": _score, "demo": _demo}[args.command](args)
    except PUError as exc:
        if debug:
            traceback.print_exc()
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)  # always one line
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted: stopped, no summary written", file=sys.stderr)
        return EXIT_INTERRUPTED
    import json

    from pulsnar_dask.pipeline.result import headline

    if args.command == "score":
        print(
            f"scored {summary['n_rows']:,} rows: about {summary['expected_positives']:,.0f} "
            f"positives expected (calibrated); predictions at {summary['predictions']}",
            file=sys.stderr,
        )
    else:
        print(headline(summary), file=sys.stderr)
    print(json.dumps(summary, sort_keys=True))
    return 0


def console() -> None:
    """The ``pulsnar-dask`` command and ``python -m pulsnar_dask``: run, then exit."""
    status = main()
    # Everything is written; keep the interpreter's exit-time garbage collections from
    # walking every object of the run (half a second on a 100k-row run).
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    console()
