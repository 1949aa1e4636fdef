"""The SUMO bandit study (``docs/results/sumo_bandit.md``): ``python -m studies.sumo_bandit.run`` and ``.live``."""
