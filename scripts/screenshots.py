"""Retake the README's screenshots (docs/screenshot.png, docs/screenshot-phone.png) of the page
as a new user sees it after `make run`: the default synthetic catalogue and the model `recsys
serve` trains on its first start, in a throwaway folder, never the test suite's small catalogue.

    python scripts/screenshots.py [--query "crimson casual dress"] [--out docs]

Starts `recsys serve` on 127.0.0.1 (one worker), drives Debian's headless Chromium through
Playwright (`scripts/install_chromium.sh` installs it; never `playwright install`), stops the
server's whole process group at the end, also on an error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
FIRST_START_S = 600  # the first start generates the catalogue and trains: ~1 min quiet, more when busy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _default_service(workdir: Path) -> Iterator[str]:
    """`recsys serve` as `make run` starts it, with its artifacts and data under `workdir`."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECSYS_")}
    env.update(RECSYS_ARTIFACTS_DIR=str(workdir / "artifacts"), RECSYS_DATA_DIR=str(workdir / "data"),
               RECSYS_DEFAULT_DATA_DIR=str(workdir / "data" / "generated" / "default"))
    log = workdir / "serve.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1",
                                 "--port", str(port), "--workers", "1"],
                                cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + FIRST_START_S
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"recsys serve exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/ready", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"recsys serve not ready after {FIRST_START_S} s; its log: {log}")
            time.sleep(1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_results(page: Page) -> None:
    page.wait_for_function("document.querySelector('#results').dataset.state === 'ready'")


def _open_first_item(page: Page) -> None:
    page.locator("#results .result").first.locator("button.open").click()
    page.wait_for_function("(() => { const d = document.querySelector('#detail');"
                           " return !d.hidden && d.dataset.state === 'ready'; })()")


def take(browser: Browser, base: str, query: str, out: Path) -> list[Path]:
    """The explain view with the first result's heatmaps open (desktop) and the shopper's view
    at a phone's width: the two images the README and the docs show."""
    written = [out / "screenshot.png", out / "screenshot-phone.png"]
    desktop = browser.new_context(viewport={"width": 1280, "height": 1500}, base_url=base)
    try:
        page = desktop.new_page()
        page.goto(f"/?view=explain&q={query}")
        _wait_results(page)
        _open_first_item(page)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(written[0]))
    finally:
        desktop.close()
    phone = browser.new_context(viewport={"width": 375, "height": 812}, base_url=base,
                                device_scale_factor=2, is_mobile=True, has_touch=True)
    try:
        page = phone.new_page()
        page.goto(f"/?q={query}")
        _wait_results(page)
        page.screenshot(path=str(written[1]))
    finally:
        phone.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--query", default="crimson casual dress", help="the query both images show")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="folder the PNGs are written to")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} not found: run `bash scripts/install_chromium.sh` (as root) first")
    with tempfile.TemporaryDirectory(prefix="recsys-screenshots-") as tmp, _default_service(Path(tmp)) as base, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for path in take(browser, base, args.query, args.out):
                print(f"wrote {path}")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
