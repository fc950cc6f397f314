"""Optimizers (``torch.optim``)."""
