"""``python -m evroute``: the command-line interface."""

import sys

from evroute.cli import main

if __name__ == "__main__":
    sys.exit(main())
