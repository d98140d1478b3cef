"""Reports open in headless Chromium (issue 8): no console errors, every figure
rendered (the screenshot is not blank and every <img> decodes)."""

import re
import shutil
import subprocess

import numpy as np
import pytest

from tcpeval.studies import STUDIES

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


def decoded_images(page, tmp_path) -> int:
    """How many of the page's images Chromium decoded (naturalWidth > 0), read
    from a copy of the page with a probe script appended (the page itself is
    checked untouched)."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", (
        "<script>window.addEventListener('load', () => document.body.setAttribute("
        "'data-decoded', [...document.images].filter(i => i.complete && i.naturalWidth > 0)"
        ".length));</script></body>")))
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile3'}",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    found = re.search(r'data-decoded="(\d+)"', dom)
    assert found, "the probe did not run"
    return int(found.group(1))


def figures_drawn(page) -> list[float]:
    """Pixel spread of every embedded PNG (0 for a blank figure)."""
    import base64
    import io

    import matplotlib.image as mpimg

    return [float(np.std(mpimg.imread(io.BytesIO(base64.b64decode(b64)), format="png")[..., :3]))
            for b64 in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page.read_text())]


def check_page(page, tmp_path):
    import matplotlib.image as mpimg

    shot, log, dom = render(page, tmp_path)
    # Chromium logs page console output as "INFO:CONSOLE:<line>] ..." (older
    # builds "CONSOLE(<line>)"); any such line is a console message from the page.
    assert not re.search(r"CONSOLE[:(]", log), log
    img = mpimg.imread(shot)
    assert img.shape[0] > 500 and np.std(img[..., :3]) > 0.05, "blank screenshot"
    n = page.read_text().count("<img")
    assert n >= 1 and dom.count("<img") == n
    assert decoded_images(page, tmp_path) == n, "an image did not decode"
    spreads = figures_drawn(page)
    assert len(spreads) == n and min(spreads) > 0.02, f"a blank figure: {spreads}"
    return dom


def test_run_report_renders(tmp_path):
    import tcpeval
    from tcpeval.report import run_report
    from tcpeval.version import version

    res = tcpeval.run({"network": {"bottleneck": "20Mbps", "rtt": "40ms"},
                       "flows": [{"cc": "reno", "count": 2}],
                       "run": {"duration": "5s", "measure_from": "1s"}})
    page = run_report(res, tmp_path / "report.html")
    # What the rendered page must show (issue 31 item 2): six captioned
    # figures, the tool version, the scenario folded away, the summary table.
    dom = check_page(page, tmp_path)
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", dom)
    assert len(captions) == dom.count("<img") == 6
    assert any("CDF" in c for c in captions) and any("buffer" in c for c in captions)
    assert f"tcpeval {version()}" in dom
    assert re.search(r"<details><summary>scenario[^<]*</summary><pre>", dom)
    assert "<details open" not in dom and "reno-1" in dom


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_study_report_renders(tmp_path, smoke_store, name):
    from tcpeval.studies.runner import report_study

    store, _ = smoke_store(name)
    check_page(report_study(name, store, tmp_path / "report"), tmp_path)
