"""The AST conversion passes: each module has ``convert(node, ctx) -> node``."""
