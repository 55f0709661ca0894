"""``stagecraft.random``: seeded, reproducible random tensors; stateless ops and
``Generator``."""
from stagecraft.ops.random_ops import normal, set_seed, truncated_normal, uniform
from stagecraft.state.random_generator import (Generator, get_global_generator, set_global_generator,
                                         stateless_normal, stateless_truncated_normal,
                                         stateless_uniform)

__all__ = ["normal", "set_seed", "truncated_normal", "uniform", "Generator",
           "get_global_generator", "set_global_generator", "stateless_normal",
           "stateless_truncated_normal", "stateless_uniform"]
from stagecraft.ops.sampling_ops import (categorical, gamma, poisson, shuffle,
                                         stateless_categorical, stateless_gamma,
                                         stateless_poisson)
from stagecraft.ops.sampling_ops import stateless_binomial

__all__ += ["categorical", "gamma", "poisson", "shuffle", "stateless_categorical",
            "stateless_gamma", "stateless_poisson", "stateless_binomial"]
