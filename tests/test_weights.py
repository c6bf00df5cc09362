"""The shipped weights are what `dev/build_weights.py` builds (about three minutes)."""
import importlib.util
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]


def test_rebuild_matches_the_shipped_weights(tmp_path):
    spec = importlib.util.spec_from_file_location("build_weights", REPO / "dev" / "build_weights.py")
    build_weights = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_weights)
    build_weights.build(tmp_path)
    for kind in ("encoder", "decoder"):
        shipped = torch.load(REPO / "headlab" / "weights" / f"{kind}.pt", weights_only=True)
        rebuilt = torch.load(tmp_path / f"{kind}.pt", weights_only=True)
        assert shipped["config"] == rebuilt["config"]
        for name, tensor in shipped["state_dict"].items():
            # Bit-identical on the machine that built them; a tolerance allows other CPUs' rounding.
            assert torch.allclose(tensor, rebuilt["state_dict"][name], atol=1e-3), f"{kind}.{name}"
        assert abs(shipped["final_loss"] - rebuilt["final_loss"]) < 0.05
