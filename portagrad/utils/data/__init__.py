"""Datasets and loaders (``torch.utils.data``)."""
