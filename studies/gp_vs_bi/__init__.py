"""The GP versus BI study (``docs/results/gp_vs_bi.md``): ``python -m studies.gp_vs_bi.run``."""
