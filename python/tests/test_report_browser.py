"""Reports open in headless Chromium (issue 8): no console errors, every figure
rendered (the screenshot is not blank and every <img> decodes)."""

import re
import shutil
import subprocess

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                "(make test installs it when it can)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def render(page, tmp_path):
    shot = tmp_path / "shot.png"
    p = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                        "--window-size=1100,2400", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile2'}",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    return shot, p.stderr + dom.stderr, dom.stdout


def check_page(page, tmp_path):
    import matplotlib.image as mpimg

    shot, log, dom = render(page, tmp_path)
    # Chromium logs page console output as "INFO:CONSOLE:<line>] ..." (older
    # builds "CONSOLE(<line>)"); any such line is a console message from the page.
    assert not re.search(r"CONSOLE[:(]", log), log
    img = mpimg.imread(shot)
    assert img.shape[0] > 500 and np.std(img[..., :3]) > 0.05, "blank screenshot"
    assert dom.count("<img") == page.read_text().count("<img")
    assert dom.count("<img") >= 1


def test_run_report_renders(tmp_path):
    import tcpeval
    from tcpeval.report import run_report

    res = tcpeval.run({"network": {"bottleneck": "20Mbps", "rtt": "40ms"},
                       "flows": [{"cc": "reno", "count": 2}],
                       "run": {"duration": "5s", "measure_from": "1s"}})
    check_page(run_report(res, tmp_path / "report.html"), tmp_path)


def test_study_report_renders(tmp_path):
    from tcpeval.studies.runner import report_study, run_study

    run_study("bhatti2009", "smoke", tmp_path / "store", workers=2)
    check_page(report_study("bhatti2009", tmp_path / "store"), tmp_path)
