"""`gpulint report --html`: the page's data, that it is self-contained, and how it behaves in a
real headless Chromium (skipped where Chromium, ChromeDriver or selenium is missing)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gpulint.config import Settings
from gpulint.dynamic import html_report
from gpulint.dynamic.analyze import analyze
from gpulint.rules import RULES
from test_cli import run

REPO = Path(__file__).resolve().parents[1]
HEAT = REPO / "examples/trace/heat.jsonl"


def heat_run(tmp_path: Path) -> Path:
    """The bundled trace with a `heat.cu` beside it whose line N reads `line N`, so the page can
    copy in the lines each finding points at (the trace's stacks name `heat.cu`)."""
    for suffix in ("", ".npz"):
        shutil.copy(str(HEAT) + suffix, tmp_path / ("heat.jsonl" + suffix))
    (tmp_path / "heat.cu").write_text("".join(f"line {n}\n" for n in range(1, 80)))
    return tmp_path / "heat.jsonl"


def page_of(html: str) -> dict:
    data = re.search(r'<script type="application/json" id="gpulint-data">(.*?)</script>', html, re.S)
    assert data
    return json.loads(data.group(1))


def test_page_data_and_cli(tmp_path: Path) -> None:
    trace = heat_run(tmp_path)
    out = run("report", str(trace), "--html", str(tmp_path / "r.html"), cwd=tmp_path)
    assert out.exit_code == 0, out.output
    assert "wrote" in out.output and "r.html" in out.output
    html = (tmp_path / "r.html").read_text()
    data = page_of(html)
    assert data["peaks"]["actual"] == 8 << 20 and data["peaks"]["all_fixed"] == 5 << 20
    assert max(data["live"]) == 8 << 20 and all(f <= v for f, v in zip(data["fixed"], data["live"]))
    assert len(data["times"]) == len(data["live"]) == len(data["fixed"])
    assert [layer["name"] for layer in data["layers"]] == ["cudaMalloc#1 (4.0 MiB)", "cudaMalloc#2 (4.0 MiB)"]
    # The pool plan: both objects placed, never overlapping while both are alive.
    a, b = sorted(data["boxes"], key=lambda box: box["offset"])
    assert a["offset"] + a["bytes"] <= b["offset"] and data["peaks"]["pool"] == 8 << 20
    # Findings sorted by saving, each with the lines around it.
    assert [f["code"] for f in data["findings"]][0] == "GL008"
    first = data["findings"][0]
    assert first["saved"] == 3 << 20 and first["lines"]["row"] == 41
    assert first["lines"]["text"][41 - first["lines"]["first"]] == "line 41"
    # Self-contained: nothing is fetched (the only URLs are the SVG namespace and rule pages in data).
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?(https?:)?//""", html)
    assert "url(http" not in html and "@import" not in html


def test_terminal_summary_shows_each_objects_offset(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # one table row per object
    out = run("report", str(heat_run(tmp_path)), cwd=tmp_path)
    assert out.exit_code == 0 and "offset (first-fit plan)" in out.stdout
    rows = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
            for line in out.stdout.splitlines() if line.startswith("│ cudaMalloc#")}
    assert rows["cudaMalloc#1 (4.0 MiB)"][2] == "0 B" and rows["cudaMalloc#2 (4.0 MiB)"][2] == "4.0 MiB"


def test_unwritable_html_path_is_a_clear_error(tmp_path: Path) -> None:
    out = run("report", str(heat_run(tmp_path)), "--html", str(tmp_path / "no/such/dir/r.html"), cwd=tmp_path)
    assert out.exit_code == 2 and "cannot write" in out.output


def test_a_script_end_in_a_message_cannot_end_the_data_early() -> None:
    data = {"title": "t </script><script>alert(1)</script>", "findings": [{"message": "</script>"}]}
    html = html_report.render(data)
    assert html.count("</script>") == 2  # the data element's and the script's own
    assert page_of(html) == data


def test_long_curves_are_thinned_without_losing_the_peak(tmp_path: Path) -> None:
    analysis = analyze(heat_run(tmp_path), Settings(), sorted(RULES))
    rng = np.random.default_rng(3)
    n = 50_000
    analysis.peaks.times = np.arange(n, dtype=np.int64) * 2
    analysis.peaks.live = rng.integers(0, 1 << 30, n)
    analysis.peaks.live[31_337] = 5 << 30
    analysis.peaks.live_fixed = analysis.peaks.live // 2
    times, live, fixed = html_report._curves(analysis, 1_000)
    assert len(times) <= 1_000 and times == sorted(times)
    assert max(live) == 5 << 30 and 31_337 * 2 in times
    assert all(f == v // 2 for f, v in zip(fixed, live))


# ---- in a real browser ------------------------------------------------------------------------------

def _browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                    None)
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("Chromium and ChromeDriver are not installed (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,1500",
                "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.fixture
def browser():
    driver = _browser()
    yield driver
    driver.quit()


def test_the_page_in_headless_chromium(tmp_path: Path, browser) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    trace = heat_run(tmp_path)
    assert run("report", str(trace), "--html", str(tmp_path / "r.html"), cwd=tmp_path).exit_code == 0
    data = page_of((tmp_path / "r.html").read_text())
    browser.get((tmp_path / "r.html").as_uri())
    css = browser.find_elements
    # One band per stacked object, one for the other objects, and the all-fixed curve.
    series = css(By.CSS_SELECTOR, "#memory path.series")
    assert len(series) == len(data["layers"]) + 2
    assert [s.get_attribute("data-name") for s in series][-2:] == ["other objects", "every finding fixed"]
    assert len(css(By.CSS_SELECTOR, "#memory circle.marker")) == len([f for f in data["findings"] if f["start"] is not None])
    assert len(css(By.CSS_SELECTOR, "#plan rect.box")) == len(data["boxes"]) == 2
    rows = css(By.CSS_SELECTOR, "#findings tr.finding-row")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == ["GL008", "GL002", "GL001"]

    # Clicking a finding shows its source lines, the flagged one marked.
    rows[1].click()
    detail = browser.find_element(By.ID, "detail")
    assert detail.is_displayed() and "GL002" in detail.text
    flagged = detail.find_elements(By.CSS_SELECTOR, "pre.source span.line.flagged")
    assert flagged and flagged[0].get_attribute("data-row") == "40" and flagged[0].text.endswith("line 40")
    assert "selected" in rows[1].get_attribute("class")
    # ... and so does clicking its marker on the chart; the object's box in the plan is outlined.
    marker = next(m for m in css(By.CSS_SELECTOR, "#memory circle.marker")
                  if data["findings"][int(m.get_attribute("data-finding"))]["code"] == "GL008")
    marker.click()
    assert "GL008" in browser.find_element(By.ID, "detail").text
    assert len(css(By.CSS_SELECTOR, "#plan rect.box.selected")) == 1
    assert len(css(By.CSS_SELECTOR, "#memory rect.lifetime")) == 1

    # Zoom: a drag across the left half narrows the time axis; double-click restores it.
    full = browser.execute_script("return window.gpulintReport.domain()")
    overlay = css(By.CSS_SELECTOR, "#memory > rect[fill='transparent']")[0]
    width = overlay.size["width"]
    ActionChains(browser).move_to_element_with_offset(overlay, int(-width * 0.4), 0).click_and_hold() \
        .move_by_offset(int(width * 0.3), 0).release().perform()
    zoomed = browser.execute_script("return window.gpulintReport.domain()")
    assert full[0] <= zoomed[0] < zoomed[1] < full[1] and zoomed[1] - zoomed[0] < 0.5 * (full[1] - full[0])
    overlay = css(By.CSS_SELECTOR, "#memory > rect[fill='transparent']")[0]
    ActionChains(browser).double_click(overlay).perform()
    assert browser.execute_script("return window.gpulintReport.domain()") == full

    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert not errors, errors
    shot = tmp_path / "report.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one


def test_a_run_without_findings_still_draws(tmp_path: Path, browser) -> None:
    from selenium.webdriver.common.by import By

    from gpulint.dynamic.trace import write_events

    events = [{"ev": "meta", "version": 1, "collector": "native", "argv": ["./quiet"], "device": "test", "granularity": 32},
              {"ev": "alloc", "t": 1, "obj": 1, "addr": 4096, "size": 1024, "stream": 0, "api": "cudaMalloc",
               "site": [["q.cu", 3, "main"]]},
              {"ev": "launch", "t": 2, "kernel": "k(float*)", "stream": 0, "reads": [1], "writes": [1],
               "site": [["q.cu", 4, "main"]]},
              {"ev": "free", "t": 3, "obj": 1, "stream": 0, "site": [["q.cu", 5, "main"]]}]
    trace = write_events(tmp_path / "q.jsonl", events)
    assert run("report", str(trace), "--html", str(tmp_path / "q.html"), cwd=tmp_path).exit_code == 0
    browser.get((tmp_path / "q.html").as_uri())
    assert "No findings." in browser.find_element(By.ID, "findings").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#memory path.series")) == 3
    assert not [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def test_report_min_bytes_shows_the_small_sites(tmp_path: Path) -> None:
    from gpulint.dynamic.trace import write_events

    events = [{"ev": "meta", "version": 1, "collector": "native", "argv": ["./small"], "device": "test",
               "granularity": 32},
              {"ev": "alloc", "t": 1, "obj": 1, "addr": 4096, "size": 4096, "stream": 0, "api": "cudaMalloc",
               "site": [["s.cu", 3, "main"]]}]
    events += [{"ev": "launch", "t": t, "kernel": "k(float*)", "stream": 0, "reads": [], "writes": [],
                "site": [["s.cu", 4, "main"]]} for t in range(2, 6)]
    events += [{"ev": "launch", "t": 6, "kernel": "k(float*)", "stream": 0, "reads": [1], "writes": [1],
                "site": [["s.cu", 5, "main"]]}, {"ev": "free", "t": 7, "obj": 1, "stream": 0, "site": [["s.cu", 6, "main"]]}]
    trace = write_events(tmp_path / "s.jsonl", events)
    assert run("report", str(trace), "--html", str(tmp_path / "d.html"), cwd=tmp_path).exit_code == 0
    default = page_of((tmp_path / "d.html").read_text())
    assert default["findings"] == [] and default["hidden"] >= 1  # a 4 KiB object: below 1 MiB
    assert run("report", str(trace), "--min-bytes", "0", "--html", str(tmp_path / "a.html"), cwd=tmp_path).exit_code == 0
    shown = page_of((tmp_path / "a.html").read_text())
    assert "GL001" in {f["code"] for f in shown["findings"]} and shown["hidden"] == 0


def timed_run(tmp_path: Path) -> Path:
    """A run whose events carry the host clock (`ns`): 1 ms apart, except a 2-second pause before
    the free."""
    from gpulint.dynamic.trace import write_events

    base = 5_000_000_000
    events = [{"ev": "meta", "version": 1, "collector": "native", "argv": ["./timed"], "device": "test",
               "granularity": 32},
              {"ev": "alloc", "ns": base, "t": 1, "obj": 1, "addr": 4096, "size": 8 << 20, "stream": 0,
               "api": "cudaMalloc", "site": [["q.cu", 3, "main"]]},
              {"ev": "launch", "ns": base + 1_000_000, "t": 2, "kernel": "k(float*)", "stream": 0, "reads": [1],
               "writes": [1], "site": [["q.cu", 4, "main"]]},
              {"ev": "free", "ns": base + 2_001_000_000, "t": 3, "obj": 1, "stream": 0, "site": [["q.cu", 9, "main"]]}]
    return write_events(tmp_path / "timed.jsonl", events)


def test_the_time_axis_is_real_where_the_trace_has_host_times(tmp_path: Path) -> None:
    trace = timed_run(tmp_path)
    assert run("report", str(trace), "--html", str(tmp_path / "t.html"), cwd=tmp_path).exit_code == 0
    data = page_of((tmp_path / "t.html").read_text())
    assert data["time"] == "real"
    # Microseconds since the first event: the object lives from 0 to the free, 2.001 s later.
    (box,) = data["boxes"]
    assert (box["start"], box["end"]) == (0.0, 2_001_000.0)
    assert data["times"][0] == 0.0 and data["end_t"] >= 2_001_000.0
    assert all(a <= b for a, b in zip(data["times"], data["times"][1:]))
    # Without host times, the steps of the topological order, as before.
    untimed = heat_run(tmp_path)
    assert run("report", str(untimed), "--html", str(tmp_path / "s.html"), cwd=tmp_path).exit_code == 0
    steps = page_of((tmp_path / "s.html").read_text())
    assert steps["time"] == "steps" and all(isinstance(t, int) for t in steps["times"])


def test_real_time_in_headless_chromium(tmp_path: Path, browser) -> None:
    from selenium.webdriver.common.by import By

    trace = timed_run(tmp_path)
    assert run("report", str(trace), "--html", str(tmp_path / "t.html"), cwd=tmp_path).exit_code == 0
    browser.get((tmp_path / "t.html").as_uri())
    ticks = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "#memory g.axis text")]
    assert any(t.endswith(" s") for t in ticks) and "time since the first event" in ticks, ticks
    assert "host's clock" in browser.find_element(By.ID, "subtitle").text
    box = browser.find_element(By.CSS_SELECTOR, "#plan rect.box title")
    assert "0 µs – 2.001 s" in box.get_attribute("textContent")
    assert not [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
