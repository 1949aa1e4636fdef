"""The live-routes study (``docs/results/sumo_live_routes.md``): ``python -m studies.sumo_live_routes.run``."""
