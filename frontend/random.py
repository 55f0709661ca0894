"""``stagecraft.random``: seeded, reproducible random tensors."""
from stagecraft.random_ops import normal, set_seed, uniform

__all__ = ["normal", "set_seed", "uniform"]
