"""Graph passes: each is a function ``graph -> (changed, graph)``; ``prune`` is the shared
reachability helper."""
