"""The report's first screen, as the README shows it.

Runs ``pulsnar-dask demo`` (synthetic SNAR data, the default method, a local cluster) and
renders its ``report.html`` in headless Chromium (Debian's ``chromium``), saving what a
1280 x 900 window shows to benchmarks/results/report_first_screen.png.

    python jobs/report_screenshot.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from common import RESULTS

from pulsnar_dask.cli import main as cli
from pulsnar_dask.report import screenshot


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pulsnar-report-") as tmp:
        out = Path(tmp) / "demo"
        if cli(["demo", "--out", str(out), "--quiet"]) != 0:
            raise SystemExit("the demo failed")
        png = screenshot(out / "report.html", RESULTS / "report_first_screen.png")
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
