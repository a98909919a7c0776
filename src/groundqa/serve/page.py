"""The web page `groundqa serve` shows at /: three static files under `web/`, read once.

The page is a client of the same API as anyone else's; nothing here renders an
answer. A missing file is served as a placeholder rather than failing the server,
since an installation without the page still has the API.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable

from fastapi.responses import Response

WEB_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}

PLACEHOLDER_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>groundqa</title></head>
<body><h1>groundqa</h1>
<p>The server is running, but this installation has no web page.
The API is described by its <a href="/openapi.json">OpenAPI spec</a>.</p>
</body></html>
"""
PLACEHOLDERS = {
    "index.html": PLACEHOLDER_PAGE,
    "app.js": b"// groundqa: this installation has no web page script.\n",
    "style.css": b"/* groundqa: this installation has no web page styles. */\n",
}


def load_web() -> dict[str, tuple[bytes, str]]:
    """The page's files by route, read once; a missing one is a placeholder, not a failure."""
    folder = importlib.resources.files("groundqa.serve") / "web"
    files: dict[str, tuple[bytes, str]] = {}
    for route, (name, media_type) in WEB_FILES.items():
        try:
            body = (folder / name).read_bytes()
        except OSError:
            body = PLACEHOLDERS[name]
        files[route] = (body, media_type)
    return files


def static_route(body: bytes, media_type: str) -> Callable[[], Response]:
    def serve_file() -> Response:
        # no-cache: a browser revalidates, so an upgraded server's page shows at once.
        headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
        return Response(content=body, media_type=media_type, headers=headers)

    return serve_file
