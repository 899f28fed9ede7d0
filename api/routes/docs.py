"""The API's documentation pages, /docs (Swagger UI) and /redoc, with no CDN.

FastAPI's own pages load Swagger UI and ReDoc from a CDN and are blank offline. These are the
same pages (FastAPI's HTML) over the copies of the scripts and styles that the fastapi-offline
package ships, served under ASSETS. Two more requests those scripts would make to the outside
are stopped: Swagger UI's validator badge (an image from swagger.io for every spec not on
localhost) is turned off, and a Content-Security-Policy allows images from this service only,
which keeps ReDoc's sidebar logo from being fetched from its vendor's CDN (the logo hides itself
when it cannot load).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

router = APIRouter(include_in_schema=False)
ASSETS = "/docs/assets"
IMAGES_FROM_HERE = {"Content-Security-Policy": "img-src 'self' data:"}


def assets() -> StaticFiles:
    """The scripts, styles and icon of both pages, from the fastapi-offline package; mounted at ASSETS."""
    return StaticFiles(packages=[("fastapi_offline", "static")])


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    page = get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}", title=f"{request.app.title} - Swagger UI",
        oauth2_redirect_url=f"{root}/docs/oauth2-redirect",
        swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS}/swagger-ui.css", swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
        swagger_ui_parameters={"validatorUrl": None})
    page.headers.update(IMAGES_FROM_HERE)
    return page


@router.get("/docs/oauth2-redirect")
async def swagger_ui_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    page = get_redoc_html(
        openapi_url=f"{root}{request.app.openapi_url}", title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js", redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
        with_google_fonts=False)
    page.headers.update(IMAGES_FROM_HERE)
    return page
