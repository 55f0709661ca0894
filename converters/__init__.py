"""AutoGraph for stagecraft: rewrites Python control flow on tensors into graph control flow.

Filled by the AutoGraph issue; the package exists now so the folder-to-package mapping of
pyproject.toml is complete.
"""
