"""The layers' nodes: the autograd Functions behind ``portagrad.nn.functional``.

Each hot layer is one recorded node whose forward calls ``_raw``'s primitives (one backend call
where the backend has the optional fused primitive) and whose backward is written with ops, so it
runs on every backend and can be differentiated again: ``linear`` (one GEMM each way), ``conv``
(the backend's ``conv2d`` or im2col and one GEMM), ``norm`` (``layer_norm``, training-mode
``batch_norm``; ``sync_norm``: batch norm over the batches of several processes, given a
gather function by ``nn.SyncBatchNorm``; ``unshard``: sharded parameters gathered whole,
given the collectives by ``distributed.fsdp``), ``loss`` (cross entropy against class indices, binary
cross entropy),
``softmax``, ``attention`` (fused scaled dot-product attention), ``pool`` (max over a window
axis, 2-D max pooling) and ``activation`` (hardtanh, hardsigmoid, hardswish with PyTorch's
derivatives at their kinks). ``im2col`` holds the window
gathers behind conv, pooling, ``pad``, ``interpolate``, ``unfold`` and ``fold``.

``portagrad.nn.functional`` checks arguments and composes; it reaches the backend only through
these modules and the rest of the op layer.
"""
from . import (activation, attention, conv, embedding, im2col, linear, loss, norm, pool, softmax,
               sync_norm, unshard)

__all__ = ["activation", "attention", "conv", "embedding", "im2col", "linear", "loss", "norm", "pool",
           "softmax", "sync_norm", "unshard"]
