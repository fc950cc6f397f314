"""Neural-network modules (``torch.nn``)."""
