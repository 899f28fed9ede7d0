"""/docs (Swagger UI) and /redoc work offline: their pages load every script, style sheet and
icon from this service (fastapi-offline's copies), none from a CDN."""

from __future__ import annotations

import re

import pytest

URL = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")


@pytest.mark.parametrize(("page", "assets"), [
    ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}),
    ("/redoc", {"redoc.standalone.js", "favicon.png"}),
])
def test_the_docs_pages_load_only_local_assets(client, page, assets):
    r = client.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    # images from this service only: ReDoc's sidebar logo would come from its vendor's CDN
    assert r.headers["content-security-policy"] == "img-src 'self' data:"
    html = r.text
    assert not re.search(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}", html), "an external URL in the page"
    referenced = URL.findall(html)
    assert {u.rsplit("/", 1)[-1] for u in referenced} == assets
    for url in referenced:
        assert url.startswith("/docs/assets/")
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 4000, url  # the real bundle, not a stub
    spec = client.get("/openapi.json")  # what both pages render; they are not in it
    assert spec.status_code == 200 and not {"/docs", "/redoc"} & set(spec.json()["paths"])


def test_the_swagger_ui_bundle_is_the_real_one(client):
    js = client.get("/docs/assets/swagger-ui-bundle.js")
    assert "SwaggerUIBundle" in js.text and js.headers["content-type"].startswith(
        ("application/javascript", "text/javascript"))
    assert "Redoc" in client.get("/docs/assets/redoc.standalone.js").text
