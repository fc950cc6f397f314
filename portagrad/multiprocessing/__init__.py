"""``portagrad.multiprocessing``: Python's multiprocessing, with tensors that pickle by value."""
from multiprocessing import *  # noqa: F401,F403

from .reductions import rebuild_tensor, reduce_tensor  # noqa: F401
