"""The report: self-contained HTML (sections, embedded plots, nothing loaded from the network) checked in
a real headless browser, and the Markdown version. Needs chromium for the browser part:
``apt-get install -y chromium`` (the test is skipped with that hint when no binary is found)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from cnsim.experiments import reproduce as rp

pytestmark = pytest.mark.skipif(
    __import__("importlib").util.find_spec("cnsim._core") is None, reason="cnsim._core is not built (make build)"
)
CHROMIUM = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome") if shutil.which(b)), None
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    res = rp.reproduce("seed-000", out, quick=True, progress=False, overrides={"run.duration": "8ms"}, replications=2)
    return out, res["report_html"], res["report_md"]


def test_html_is_self_contained_with_sections(report):
    out, html_path, md_path = report
    html = html_path.read_text()
    for anchor in (
        "provenance",
        "overview",
        "seed-000",
        "seed-000-tables",
        "seed-000-figures",
        "seed-000-parameters",
        "method",
    ):
        assert f"id='{anchor}'" in html
    assert "data:image/png;base64," in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "no network resource"
    assert "<script" not in html.lower() or "src=" not in html.lower()
    md = md_path.read_text()
    assert "## seed-000" in md and "| published |" in md.replace("published | band", "published |")
    assert "](figures/" in md
    for name in re.findall(r"\]\((figures/[^)]+)\)", md):
        assert (md_path.parent / name).stat().st_size > 1000


def test_cli_report_rewrites(report, cli):
    out, html_path, _ = report
    before = html_path.stat().st_mtime_ns
    r = cli(["report", out])
    assert r.exit_code == 0, r.stderr
    assert html_path.stat().st_mtime_ns >= before


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary; install it with `apt-get install -y chromium`")
def test_renders_in_headless_chromium_offline(report, tmp_path):
    _, html_path, _ = report
    common = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--proxy-server=127.0.0.1:9",  # any network access fails
        "--proxy-bypass-list=<-loopback>",
    ]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=1280,2000", html_path.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 10_000
    dom = subprocess.run(
        [*common, "--dump-dom", html_path.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert "Published vs cnsim" in dom and "Figures" in dom and "Sweeps, parameters and seeds" in dom
    assert dom.count("<img") >= 1 and "data:image/png;base64," in dom
    assert not re.search(r"""(src|href)=["'](https?:)?//""", dom)


def test_the_legend_and_the_replication_count_sit_beside_the_verdicts(report):
    """Issue 34: the verdict legend was at the bottom and "claims hold 4/8" showed on 2 replications
    without saying so. The legend follows the overview table and names each study's replications;
    each study's table says what its means rest on."""
    _, html_path, md_path = report
    html = html_path.read_text()
    overview_end = html.index("</table>", html.index("id='overview'"))
    legend = html.index("id='legend'")
    assert overview_end < legend < html.index("class='study'")
    text = html[legend : html.index("</p>", legend)]
    assert "within band" in text and "claim" in text and "seed-000 2 replications" in text
    assert "fewer than 5 replications (seed-000)" in text
    assert "mean ± 95 % CI over 2 replications" in html[html.index("id='seed-000-tables'") :]
    md = md_path.read_text()
    assert md.index("**Legend.**") < md.index("## seed-000")


def test_the_legend_counts_the_replications_the_verdicts_rest_on():
    """A study whose verdicts all rest on 10 replications is not called a smoke test because its
    sensitivity rows (never a verdict) ran 3; the legend shows those apart. A sweep a claim reads is a
    verdict's, whatever its cells."""
    from cnsim.report.document import verdict_legend

    def sweep(n):
        return {"replications": n}

    study = {
        "id": "seed-x",
        "sweeps": {"main": sweep(10), "rl0": sweep(3), "claimed": sweep(10), "unread": sweep(1)},
        "cells": [{"sweep": "main", "terms": {}}, {"sweep": "rl0", "terms": {}, "sensitivity": True}],
        "claims": [{"terms": {"a": {"sweep": "claimed"}, "b": {"sweep": "main"}}}],
    }
    text = verdict_legend([study])
    assert "seed-x 10 replications (sensitivity rows 3)" in text and "fewer than 5" not in text
    study["sweeps"]["claimed"] = sweep(3)
    text = verdict_legend([study])
    assert "seed-x 3–10 replications (sensitivity rows 3)" in text and "fewer than 5 replications (seed-x)" in text


def test_overview_counts_structural_cells_apart():
    """Issue 32 (model reference §12 R9, R11): the overview gives the structural cells apart from the discriminating cells'
    verdicts; a published number repeating another cell's measurement counts once; sensitivity rows never; the
    Markdown row survives a '|' in a study's title."""
    from cnsim.report import document as report

    def cell(verdict, **kw):
        return {"verdict": verdict, "table": "t", "row": "r", "column": "c", **kw}

    study = {
        "id": "seed-009",
        "title": "A [B|F]ECN study",
        "claim_counts": {"holds": 1},
        "claims": [{"id": "X-1"}, {"id": "X-2"}],
        "cells": [
            cell("within band", structural="a zero with the mechanism off"),
            cell("within band"),
            cell("explained"),
            cell("outside band"),
            cell("within band", same_as="r / c"),
            cell("outside band", sensitivity=True),
        ],
    }
    h: list[str] = []
    m: list[str] = []
    report.overview([study], h, m)
    m = "\n".join(m).splitlines()
    head = next(line for line in m if line.startswith("| study"))
    row = next(line for line in m if line.startswith("| seed-009"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    vals = dict(zip(cols[1:], [c.strip() for c in row.split(" | ")[1:]]))
    assert vals["cells"] == "4" and vals["structural (within band)"] == "1 (1)" and vals["discriminating"] == "3"
    assert vals["discriminating within band"] == "1 / 3" and vals["explained"] == "1"
    assert vals["open (outside band)"] == "1" and vals["claims hold"].rstrip(" |") == "1 / 2"
    assert "A [B\\|F]ECN study" in row and any("counted once" in line for line in m)
