"""Graph passes: each is a function ``graph -> (changed, graph)``, one verb per module.

``fold_constants``, ``fold_constant_cond``, ``simplify_algebra``,
``eliminate_common_subexpressions``, ``eliminate_dead_code``, ``eliminate_unused_operands``
``eliminate_dead_loop_vars`` and ``merge_equal_loop_vars``; ``manager`` runs them to a
fixpoint (``PassManager``, ``optimize``). ``prune`` holds the one backward liveness walk
(``live``) and ``rewrite`` the shared renaming/region plumbing.
"""
from stagecraft.ir.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from stagecraft.ir.passes.eliminate_dead_code import eliminate_dead_code
from stagecraft.ir.passes.eliminate_dead_loop_vars import eliminate_dead_loop_vars
from stagecraft.ir.passes.eliminate_unused_operands import eliminate_unused_operands
from stagecraft.ir.passes.fold_constant_cond import fold_constant_cond
from stagecraft.ir.passes.fold_constants import fold_constants
from stagecraft.ir.passes.manager import DEFAULT_PIPELINE, PassManager, optimize
from stagecraft.ir.passes.merge_equal_loop_vars import merge_equal_loop_vars
from stagecraft.ir.passes.simplify_algebra import simplify_algebra

__all__ = ["eliminate_common_subexpressions", "eliminate_dead_code", "eliminate_dead_loop_vars",
           "eliminate_unused_operands", "fold_constant_cond",
           "fold_constants", "merge_equal_loop_vars", "simplify_algebra", "PassManager",
           "DEFAULT_PIPELINE", "optimize"]
