"""The shipped weights are what `dev/build_weights.py` builds (about three minutes)."""
import torch

from dev import build_weights
from lessons import REPO


def test_rebuild_matches_the_shipped_weights(tmp_path):
    build_weights.build(tmp_path)
    for kind in ("encoder", "decoder"):
        shipped = torch.load(REPO / "headlab" / "weights" / f"{kind}.pt", weights_only=True)
        rebuilt = torch.load(tmp_path / f"{kind}.pt", weights_only=True)
        assert shipped["config"] == rebuilt["config"]
        for name, tensor in shipped["state_dict"].items():
            # Bit-identical on the machine that built them; a tolerance allows other CPUs' rounding.
            assert torch.allclose(tensor, rebuilt["state_dict"][name], atol=1e-3), f"{kind}.{name}"
        assert abs(shipped["final_loss"] - rebuilt["final_loss"]) < 0.05
