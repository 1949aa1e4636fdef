"""Write the routing API's OpenAPI schema (``evroute serve``) to ``docs/api/openapi.json``.

Run from the repository root after changing a request or response model of :mod:`evroute.service.schemas` or an
endpoint of :mod:`evroute.service.app`; ``tests/test_service.py`` checks the committed file is current::

    python scripts/tools/openapi_schema.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evroute.io import atomic_write_text
from evroute.service.app import openapi_schema


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/api/openapi.json", help="file to write (default: %(default)s)")
    args = p.parse_args()
    atomic_write_text(Path(args.out), json.dumps(openapi_schema(), indent=2, sort_keys=True) + "\n")
    print(f"OpenAPI schema: {args.out}")


if __name__ == "__main__":
    main()
