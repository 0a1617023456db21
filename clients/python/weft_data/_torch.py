"""torch when it imports, else None: the package works without it."""

try:
    import torch
    import torch.utils.data
except ImportError:
    torch = None
