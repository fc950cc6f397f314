"""``nn.DataParallel``: split the batch over devices, run a replica of the module on each, and
gather the outputs on ``output_device``.

Replicas are shallow copies of the module tree whose parameters are differentiable copies
(``param.to(device)``) of the original ones, so ``backward`` accumulates into the original
parameters' ``.grad``. On the module's own device the replica uses the original parameters and
buffers (BatchNorm's running statistics are updated there, as with PyTorch's first replica).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import _device
from ...accelerator._device_module import DeviceModule
from ..._ops.joining import cat, stack
from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel", "scatter", "replicate", "gather"]


def _as_devices(ids: Sequence[Any], default_type: str) -> list[Any]:
    out = []
    for d in ids:
        if isinstance(d, int) and not isinstance(d, bool):
            out.append(_device.device(default_type, d))
        else:
            out.append(_device.as_device(d))
    return out


def scatter(inputs: Any, target_devices: Sequence[Any], dim: int = 0) -> list[Any]:
    """Split tensors along ``dim`` into one chunk per device (other objects are repeated)."""
    n = len(target_devices)

    def scatter_map(obj: Any) -> list[Any]:
        if isinstance(obj, Tensor):
            chunks = obj.chunk(n, dim) if obj.dim() else (obj,) * n
            return [c.to(d) for c, d in zip(chunks, target_devices)]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # type: ignore[assignment]  # break the closure's reference cycle


def _scatter_kwargs(inputs: tuple, kwargs: dict | None, devices: Sequence[Any], dim: int
                    ) -> tuple[tuple, tuple]:
    scattered_inputs = scatter(inputs, devices, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, devices, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def replicate(network: Module, devices: Sequence[Any], detach: bool = False) -> list[Module]:
    """One replica of ``network`` per device; parameters are (differentiable) copies."""
    modules = list(network.modules())
    replicas = []
    for dev in devices:
        memo: dict[int, Module] = {}
        for m in modules:
            r = m._replicate_for_data_parallel()
            memo[id(m)] = r
        for m in modules:
            r = memo[id(m)]
            for key, child in m._modules.items():
                r._modules[key] = None if child is None else memo[id(child)]
            for key, p in m._parameters.items():
                if p is None:
                    continue
                if p.device == dev:
                    r._parameters[key] = p
                else:
                    q = p.to(dev)
                    # a replica holds plain tensors where the module has Parameters (as PyTorch's)
                    r._parameters[key] = q.detach() if detach else q  # type: ignore[assignment]
            for key, b in m._buffers.items():
                if b is not None and b.device != dev:
                    r._buffers[key] = b.to(dev)
        replicas.append(memo[id(network)])
    return replicas


def gather(outputs: Sequence[Any], target_device: Any, dim: int = 0) -> Any:
    """Concatenate the replicas' outputs along ``dim`` on ``target_device`` (recursively)."""
    dev = _device.as_device(target_device)

    def gather_map(outs: Sequence[Any]) -> Any:
        out = outs[0]
        if isinstance(out, Tensor):
            if out.dim() == 0:
                return stack([o.to(dev) for o in outs], 0)
            return cat([o.to(dev) for o in outs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        return type(out)(map(gather_map, zip(*outs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None  # type: ignore[assignment]


def _module_device(module: Module) -> Any:
    for t in module.parameters():
        return t.device
    for b in module.buffers():
        return b.device
    return _device.device("cpu")


class DataParallel(Module):
    """Data parallelism over several devices (``torch.nn.DataParallel``).

    ``device_ids=None`` uses every device of the module's device type (a CPU module runs as is).
    The module's parameters must be on ``device_ids[0]``; outputs are gathered on
    ``output_device`` (``device_ids[0]`` by default)."""

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.dim = dim
        home = _module_device(module)
        dtype = home.type if home.type != "cpu" else "opencl"
        if device_ids is None:
            if home.type == "cpu":
                self.device_ids: list[Any] = []
                self.output_device = None
                self.src_device_obj = home
                return
            n = DeviceModule(home.type).device_count()
            device_ids = list(range(n))
        self.device_ids = _as_devices(device_ids, dtype)
        self.output_device = (self.device_ids[0] if output_device is None else
                              _as_devices([output_device], dtype)[0])
        self.src_device_obj = self.device_ids[0]

    def _check_home(self) -> None:
        for t in self.module.parameters():
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them "
                                   f"on device: {t.device}")
        for b in self.module.buffers():
            if b.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them "
                                   f"on device: {b.device}")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        self._check_home()
        inputs, module_kwargs = _scatter_kwargs(inputs, kwargs, self.device_ids, self.dim)
        if not inputs and not module_kwargs:
            inputs = ((),)
            module_kwargs = ({},)
        if len(self.device_ids) == 1 or len(inputs) == 1:
            return gather([self.module(*inputs[0], **module_kwargs[0])], self.output_device,
                          self.dim)
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module: Module, device_ids: Sequence[Any]) -> list[Module]:
        return replicate(module, device_ids)

    def scatter(self, inputs: Any, kwargs: Any, device_ids: Sequence[Any]) -> Any:
        return _scatter_kwargs(inputs, kwargs, device_ids, self.dim)

    def parallel_apply(self, replicas: Sequence[Module], inputs: Sequence[Any],
                       kwargs: Sequence[Any]) -> list[Any]:
        # each device's queue runs asynchronously, so launching the replicas one after the other
        # already overlaps their device work
        return [r(*i, **k) for r, i, k in zip(replicas, inputs, kwargs)]

    def gather(self, outputs: Sequence[Any], output_device: Any) -> Any:
        return gather(outputs, output_device, self.dim)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None,
                  output_device: Any = None, dim: int = 0, module_kwargs: Any = None) -> Any:
    """The functional form of :class:`DataParallel`."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dp = DataParallel(module, device_ids, output_device, dim)
    return dp(*inputs, **(module_kwargs or {}))
