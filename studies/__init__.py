"""The studies: the experiments behind ``docs/results/`` and the benchmark pages, one folder per study.

Not part of the ``evroute`` wheel (``[tool.setuptools.packages.find]`` includes only ``evroute*``) and never imported
by it (a rule of ``tests/test_layers.py``).  Each study folder holds its runner, its report builder and its commands,
run from the repository root as ``python -m studies.<study>.<command>``; ``studies.common`` holds the helpers several
studies share.  ``studies/README.md`` lists them.
"""
