"""python -m studies.reproduce.run: see :mod:`studies.reproduce.run`."""

import sys

from studies.reproduce.run import main

sys.exit(main())
