"""Static analyses over gast function trees: which names a statement binds and reads
(``activity``) and which names are live after each statement (``liveness``).

Results are returned as side tables keyed by node, never stored on the nodes.
"""
