"""The docs site builds in strict mode (a broken link, a missing anchor or any warning fails),
offline, with its generated pages complete; and the README stays a short user's guide whose
first screens have what a newcomer needs (issue 30, points 1 and 5)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_WORDS = 1600
FIRST_SCREENS = 120  # lines


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2.0
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(config), "--site-dir", str(site)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    out = _build(ROOT / "mkdocs.yml", site)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "WARNING" not in out.stderr, out.stderr
    return site


def test_the_site_builds_in_strict_mode_with_every_page(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {"index.html", "model.html", "data.html", "http-api.html", "cli.html", "operations.html",
            "results.html", "known-gaps.html", "scaling.html", "changelog.html", "contributing.html",
            "reference/http.html", "reference/cli.html"} <= pages


def test_the_http_reference_has_every_route_of_the_openapi_schema(site):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_hooks
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    schema = docs_hooks.openapi_schema()
    page = (site / "reference" / "http.html").read_text(encoding="utf-8")
    for path, methods in schema["paths"].items():
        for method in methods:
            assert f"{method.upper()} {path}" in page, f"{method.upper()} {path} is not in the reference"
    for name in schema["components"]["schemas"]:
        assert f'id="schema-{name.lower()}"' in page


def test_the_cli_reference_has_every_command_and_option(site):
    from cli.main import _parser

    page = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    parser = _parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name, sub in commands.items():
        assert f"recsys {name}" in page
        for action in sub._actions:
            for option in action.option_strings:
                assert option in page, f"recsys {name} {option}"


def test_the_settings_table_has_every_setting(site):
    from api.config import Settings

    page = (site / "operations.html").read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"RECSYS_{name.upper()}" in page
    assert "settings-table" not in page  # the marker was replaced


def test_the_site_loads_nothing_from_elsewhere(site):
    """Offline: no web fonts, no scripts or style sheets from another host."""
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
        for tag in re.findall(r"<(?:script|link|img)\b[^>]*>", html):
            assert not re.search(r"""(src|href)=["']?(https?:)?//""", tag), f"{page}: {tag}"


def test_a_broken_link_fails_the_build(tmp_path):
    """The strict build is what catches a link to a page or an anchor that does not exist."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for name in ("mkdocs.yml", "pyproject.toml", "CHANGELOG.md", "CONTRIBUTING.md"):
        shutil.copy(ROOT / name, copy / name)
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    with open(copy / "docs" / "layout.md", "a", encoding="utf-8") as fh:
        fh.write("\nSee [the model](model.md#no-such-section) and [a page](no-such-page.md).\n")
    out = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert out.returncode != 0
    assert "no-such-section" in out.stderr and "no-such-page.md" in out.stderr


def test_make_docs_builds_in_strict_mode():
    out = subprocess.run(["make", "-n", "docs"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert re.search(r"mkdocs build --strict", out.stdout), out.stdout


# --- the README -------------------------------------------------------------------------------

def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short():
    words = len(_readme().split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words; the rest belongs in docs/"


def test_the_first_screens_have_install_run_query_explanation_and_csv_training():
    head = "\n".join(_readme().splitlines()[:FIRST_SCREENS])
    needed = {
        "install and run": r"make run",
        "the tests": r"make test",
        "a query": r"curl .*localhost:8000/recommend",
        "its explanation": r"recsys explain|/explain",
        "training from CSV": r"recsys train --items \S+\.csv --interactions \S+\.csv",
    }
    missing = [what for what, pattern in needed.items() if not re.search(pattern, head)]
    assert not missing, f"not in the README's first {FIRST_SCREENS} lines: {missing}"


def test_the_readme_links_resolve_in_a_users_clone():
    text = _readme()
    assert "../shared" not in text  # a user's clone has no shared/ beside it
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"
