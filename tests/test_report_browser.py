"""The report as a person sees it: rendered by headless Chromium (Debian's chromium and
chromium-driver; ``make test`` installs them), read from the page's layout and text.

Without the browser these tests are skipped, unless ``PULSNAR_REQUIRE_BROWSER`` is set
(``.ci/run`` sets it), where they fail instead."""

import json
import os
import shutil

import numpy as np
import pytest
from helpers import small_snar
from matplotlib.image import imread

from pulsnar_dask.cli import main
from pulsnar_dask.report import HEADLESS_FLAGS, screenshot

WIDTH, HEIGHT = 1280, 900
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")

if not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("PULSNAR_REQUIRE_BROWSER"):
    pytest.skip("needs Debian's chromium and chromium-driver", allow_module_level=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    small_snar(tmp / "in.parquet", partitions=2)
    out = tmp / "out"
    args = ["run", "--input", str(tmp / "in.parquet"), "--out", str(out), "--n-workers", "2",
            "--quiet", "--calibrate", "--true-label-col", "true_label",
            "--method", "pulsnar"]  # fmt: skip
    assert main(args) == 0
    return out, json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in HEADLESS_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('profile')}")
    options.add_argument(f"--window-size={WIDTH},{HEIGHT}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def test_first_screen_answers_how_many_hidden_positives_and_how_sure(run, browser):
    from selenium.webdriver.common.by import By

    out, summary = run
    browser.get((out / "report.html").as_uri())
    viewport = browser.execute_script("return window.innerHeight")
    heading = browser.find_element(By.TAG_NAME, "h1")
    # on the first screen, as rendered (not only somewhere in the source)
    assert heading.is_displayed()
    assert heading.rect["y"] + heading.rect["height"] <= viewport
    n_u = summary["n_unlabeled"]
    low, high = (round(a * n_u) for a in summary["alpha_interval"])
    assert f"about {summary['hidden_positives']:,} hidden positives" in heading.text
    assert f"95% interval {low:,}-{high:,}" in heading.text
    lead = browser.find_element(By.CLASS_NAME, "lead")
    assert lead.is_displayed() and lead.rect["y"] < viewport
    assert f"(95% interval {low:,} to {high:,})" in lead.text


def test_subtype_table_and_every_plot_with_its_caption_are_shown(run, browser):
    from selenium.webdriver.common.by import By

    out, summary = run
    browser.get((out / "report.html").as_uri())
    assert summary["method"] == "pulsnar"  # the clusters' reading: a row per subtype
    rows = browser.find_elements(By.CSS_SELECTOR, "#subtypes tbody tr")
    assert len(rows) == summary["n_clusters"] == len(summary["subtypes"])
    for row, subtype in zip(rows, summary["subtypes"], strict=True):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[1] == f"{subtype['positives']:,}"
        assert cells[3] == f"{subtype['hidden_positives']:,}"
        assert cells[4].startswith(subtype["distinguishing"][0]["feature"])
    figures = browser.find_elements(By.TAG_NAME, "figure")
    assert len(figures) == 4  # densities, objective, BIC, calibration
    for figure in figures:
        image = figure.find_element(By.TAG_NAME, "img")
        assert browser.execute_script("return arguments[0].naturalWidth", image) > 0  # loaded
        caption = figure.find_element(By.TAG_NAME, "figcaption")
        browser.execute_script("arguments[0].scrollIntoView()", caption)
        assert caption.is_displayed() and len(caption.text) > 40


def test_screenshot_of_the_first_screen(run, tmp_path):
    out, _ = run
    png = screenshot(out / "report.html", tmp_path / "shot.png", WIDTH, HEIGHT)
    pixels = imread(png)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert np.std(pixels[..., :3]) > 0.05  # text on the page, not a blank render
