"""``python -m rota.openapi_document [--check] [PATH]``: the API's OpenAPI document as it is
committed (docs/openapi.json), so that a change to the API shows up in review and the
clients are generated from the same file.

The document is the production server's (no development routes), with no handlers
registered: nothing in it depends on the app it serves.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_PATH = Path("docs/openapi.json")
# Only used to build the application in memory; never a real key.
_DOCUMENT_KEY = "document-only-signing-key-" + "x" * 32


def document() -> dict[str, Any]:
    from rota.api.settings import ApiSettings
    from rota.app import App
    from rota.asgi import create_api

    api = create_api(App(), ApiSettings(env="production", signing_key=_DOCUMENT_KEY))
    return api.openapi()


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rota.openapi_document")
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument(
        "--check", action="store_true", help="fail if PATH differs from the served document"
    )
    args = parser.parse_args(argv)
    text = render(document())
    if args.check:
        if not args.path.exists() or args.path.read_text(encoding="utf-8") != text:
            print(f"{args.path} is out of date: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(text, encoding="utf-8")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
