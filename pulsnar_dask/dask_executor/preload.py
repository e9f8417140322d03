"""What the fork server imports before it forks local workers (see :mod:`.forkserver`).

Importing this module imports what every job's workers run (the engine's tasks and
XGBoost, which the client itself does not import; PULSNAR's mixtures import
scikit-learn on their first fit), then freezes those objects for the garbage collector,
as Python's documentation advises before forking (``gc.freeze``): forked workers share
the pages instead of copying them as their collections walk each object, and the server
exits without walking them either. The collector is off while the modules import. It is
the fork server's preload, not a module to import elsewhere.

Ctrl-C reaches every process of the terminal's process group. The command stops the job
and closes the cluster it started, which ends the workers; the fork server and the
workers forked from it (which keep the handlers the server had once its preload was
imported) ignore SIGINT, instead of each printing a traceback of its own. A worker logs
an error as one line, the exception's type and message without its traceback
(:class:`OneLineErrors`), and a failed task as its key and exception: when the cluster
closes under running tasks, the workers still alive log the connections cut under them,
and a task that fails (storage gone) logs its traceback; the command's own line should
stay the only long one.
"""

import gc
import logging
import signal
import sys

signal.signal(signal.SIGINT, signal.SIG_IGN)  # first: the imports below take seconds
# No collections while importing: they would walk the new modules' objects again and
# again (0.15-0.25 s of the 1.3-1.5 s these imports take); the workers wait for them.
gc.disable()


def _import_xgboost_without_sklearn() -> None:
    """Import XGBoost with scikit-learn hidden, unless scikit-learn is imported already.

    XGBoost imports scikit-learn, where installed, for the base classes of its estimators,
    and scikit-learn imports scipy.stats: about 1 s of the server's start, for classes the
    workers do not use (they train with ``xgboost.train``). With scikit-learn hidden,
    XGBoost takes the path it has for installations without it; scikit-learn imports as
    usual afterwards (the mixtures import it on their first fit).
    """
    hidden = "sklearn" not in sys.modules
    if hidden:
        sys.modules["sklearn"] = None  # type: ignore[assignment] - None: "import sklearn" fails
    try:
        import xgboost  # noqa: F401
    finally:
        if hidden:
            del sys.modules["sklearn"]


try:
    import distributed  # noqa: F401

    _import_xgboost_without_sklearn()

    import pulsnar_dask.dask_executor.engine  # noqa: F401
except Exception:  # the workers import them again, and report what fails
    # Python's fork server survives only an ImportError of its preload; anything else
    # (XGBoost's own error where its library does not load) would end it, and every
    # worker would then fail to start without saying why
    pass
finally:
    gc.enable()


class OneLineErrors(logging.Filter):
    """A record's exception as ``(Type: message)`` at the end of its line, not a
    traceback; a failed task's record (``Compute Failed``, with the task's traceback as
    text) as its key and exception (the command reports the error it causes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        failed = isinstance(record.msg, str) and record.msg.startswith("Compute Failed\n")
        if failed and isinstance(record.args, tuple) and len(record.args) == 5:
            key, _, _, exception, *_ = record.args
            record.msg, record.args = "task %s failed: %s", (key, exception)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()} ({type(error).__name__}: {error})"
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


for handler in logging.getLogger("distributed").handlers:
    handler.addFilter(OneLineErrors())

gc.freeze()
