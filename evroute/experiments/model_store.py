"""Wiring of the model store into runs: each seed's final edge model saved as ``OUT/seed_<s>/model.npz``
(:mod:`evroute.models.store`; format documented there).  Models the format cannot hold (the sparse variational GP,
``gp-tv``, ``kr``) and whole-loop learners (``routeset``) are not saved; the seed's summary says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evroute.energy import VehicleProfile
from evroute.errors import ParameterError
from evroute.experiments.config import ExperimentConfig

MODEL_FILE = "model.npz"


def save_seed_model(cfg: ExperimentConfig, bandit: Any, linegraph: Any, seed: int, seed_dir: Path) -> dict[str, Any]:
    """Save ``bandit``'s edge model to ``seed_dir/model.npz``; returns the summary entry
    ``{"file": "model.npz" | None, "note": ...}``."""
    from evroute.models.store import save_model

    model = getattr(bandit, "model", None)
    if model is None:
        return {"file": None, "note": f"{cfg.model} is a whole-loop learner without an edge model"}
    if cfg.arms != "edge":  # the store and `evroute route` read one value per edge
        return {"file": None, "note": f"models of {cfg.arms} arms are not saved (the model store holds edge models)"}
    meta = {"config": cfg.to_dict(), "seed": int(seed), "rounds": int(bandit.t)}
    if getattr(getattr(bandit, "env", None), "reduced_energies", False):
        # the environment's energies are reduced (battery energy minus kinetic and potential energy, e.g.
        # sumo-replay): a route's battery energy is the model's sum plus m g dz between its ends (see
        # evroute.cli.driver), so the file says so
        from evroute.sumo.vehicle import SUMO_GRAVITY_MPS2

        meta["energies"] = {"kind": "reduced", "gravity_mps2": SUMO_GRAVITY_MPS2}
    try:
        save_model(seed_dir / MODEL_FILE, model, linegraph, vehicle=VehicleProfile.load(cfg.vehicle), meta=meta)
    except ParameterError as exc:
        return {"file": None, "note": str(exc)}
    return {"file": MODEL_FILE, "note": ""}
