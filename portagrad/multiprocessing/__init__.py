"""``portagrad.multiprocessing``: Python's ``multiprocessing`` with tensor sharing.

Everything from :mod:`multiprocessing` is re-exported. Tensors in shared memory (``share_memory_()``,
``Module.share_memory()``) cross queues, pipes and process arguments as handles to the same memory
(Hogwild training); other tensors are sent by value. OpenCL device tensors are copied through the
host, and ``share_memory_()`` refuses them (the backends have no inter-process device memory
handles). Use the ``spawn`` or ``forkserver`` start method when child processes use OpenCL, since
an OpenCL context does not survive ``fork``.
"""
from multiprocessing import *  # noqa: F403
from multiprocessing import get_context, set_start_method  # noqa: F401

from .reductions import (  # noqa: F401
    SHM_PREFIX,
    SharedBlockFreedError,
    init_reductions,
    rebuild_tensor,
    reduce_tensor,
    share_storage,
)
from .spawn import (  # noqa: F401
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

init_reductions()
