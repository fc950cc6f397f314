"""``torch.nn.utils.spectral_norm``, the hook form of spectral normalisation (the
parametrization form is :func:`.parametrizations.spectral_norm`).

``spectral_norm(module)`` moves the parameter ``weight`` to ``weight_orig`` and adds the buffers
``weight_u`` / ``weight_v``, unit vectors estimating the top singular vectors of ``weight_orig``
seen as a matrix (rows along ``dim``). A :class:`SpectralNorm` forward pre-hook then sets the
plain attribute ``weight = weight_orig / (u^T W v)`` before each call, refining ``u`` and ``v``
by power iteration first in training mode.

The state dict's metadata records ``spectral_norm: {"weight.version": 1}``; version-0
checkpoints (which stored ``weight`` and ``weight_u`` but no ``weight_v``) are converted on
load."""
from __future__ import annotations

from typing import Any, TypeVar

from ..._ops.matmul import dot, mv
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..functional import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook",
           "spectral_norm", "remove_spectral_norm"]

T_module = TypeVar("T_module", bound=Module)

_METADATA_KEY = "spectral_norm"


class SpectralNorm:
    """The forward pre-hook normalising one parameter by its spectral norm.

    ``name`` is the normalised attribute, ``dim`` the dimension that becomes the matrix rows,
    ``n_power_iterations`` the power-iteration steps per training call, ``eps`` the
    normalisation's epsilon."""

    _version: int = 1  # 1: weight_v is stored; 0: it was not
    name: str
    dim: int
    n_power_iterations: int
    eps: float

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    # -- the tensors on the module
    def _key(self, suffix: str) -> str:
        return self.name + suffix

    def _state(self, module: Module) -> tuple[Tensor, Tensor, Tensor]:
        return (getattr(module, self._key("_orig")), getattr(module, self._key("_u")),
                getattr(module, self._key("_v")))

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as a matrix: dimension ``dim`` along the rows, the rest flattened."""
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.size(0), -1)

    def _unit(self, vector: Tensor, out: Tensor) -> None:
        normalize(vector, dim=0, eps=self.eps, out=out)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        """``weight_orig / sigma``; with ``do_power_iteration`` the buffers ``u`` and ``v`` are
        first refined in place (``v <- W^T u``, then ``u <- W v``, both normalised)."""
        original, u, v = self._state(module)
        matrix = self.reshape_weight_to_matrix(original)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    self._unit(mv(matrix.t(), u), out=v)
                    self._unit(mv(matrix, v), out=u)
            # the backward pass must see these values, not the next call's
            u, v = u.clone(), v.clone()
        return original / dot(u, mv(matrix, v))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    def remove(self, module: Module) -> None:
        """Replace the normalisation's tensors by a parameter ``name`` holding the current
        normalised weight."""
        with no_grad():
            final = self.compute_weight(module, do_power_iteration=False)
        for key in (self.name, self._key("_u"), self._key("_v"), self._key("_orig")):
            delattr(module, key)
        module.register_parameter(self.name, Parameter(final.detach()))

    # -- version-0 checkpoints
    def _direction_for(self, matrix: Tensor, u: Tensor, sigma: Tensor) -> Tensor:
        """A ``v`` with ``W v`` along ``u`` (least squares) scaled so that ``u^T W v`` is
        ``sigma``."""
        v = mv(matrix.pinverse(), u)
        return v * (sigma / dot(u, mv(matrix, v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float
              ) -> SpectralNorm:
        """Set up spectral normalisation of ``module.<name>``; returns the registered hook."""
        if any(isinstance(h, SpectralNorm) and h.name == name
               for h in module._forward_pre_hooks.values()):
            raise RuntimeError("Cannot register two spectral_norm hooks on the same parameter "
                               f"{name}")
        hook = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying spectral normalization")
        with no_grad():
            rows, cols = hook.reshape_weight_to_matrix(weight).shape
            u = normalize(weight.new_empty(rows).normal_(0, 1), dim=0, eps=eps)
            v = normalize(weight.new_empty(cols).normal_(0, 1), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(hook._key("_orig"), weight)
        # until the first call recomputes it, the attribute is the unnormalised weight's data
        setattr(module, name, weight.data)
        module.register_buffer(hook._key("_u"), u)
        module.register_buffer(hook._key("_v"), v)
        module.register_forward_pre_hook(hook)
        module._register_state_dict_hook(SpectralNormStateDictHook(hook))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(hook))
        return hook


class SpectralNormLoadStateDictPreHook:
    """Converts a version-0 checkpoint (``<name>``, ``<name>_orig`` and ``<name>_u`` without
    ``<name>_v``) while it loads: ``sigma`` is recovered from ``<name>_orig / <name>`` and a
    matching ``<name>_v`` is solved for."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                 missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        fn = self.fn
        version = local_metadata.get(_METADATA_KEY, {}).get(fn.name + ".version")
        if version is not None and version >= 1:
            return
        base = prefix + fn.name
        current_layout = all(base + s in state_dict for s in ("_orig", "_u", "_v"))
        if version is None and current_layout and base not in state_dict:
            return  # saved by this version, only without metadata
        needed = [base + s for s in ("_orig", "", "_u")]
        absent = [key for key in needed if key not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        with no_grad():
            original = state_dict[base + "_orig"]
            sigma = (original / state_dict.pop(base)).mean()
            matrix = fn.reshape_weight_to_matrix(original)
            state_dict[base + "_v"] = fn._direction_for(matrix, state_dict[base + "_u"], sigma)


class SpectralNormStateDictHook:
    """Writes the spectral-norm layout version into the state dict's metadata."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: dict, prefix: str, local_metadata: dict
                 ) -> None:
        versions = local_metadata.setdefault(_METADATA_KEY, {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> T_module:
    """Normalise ``module.<name>`` by its spectral norm before every call (parameter
    ``<name>_orig``, buffers ``<name>_u`` / ``<name>_v``, refreshed by
    ``n_power_iterations`` power-iteration steps per training call). ``dim`` is the output
    dimension: 1 for transposed convolutions, else 0, by default. Returns ``module``."""
    if dim is None:
        transposed = isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))
        dim = 1 if transposed else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def _pop_hook(hooks: Any, matches: Any) -> Any:
    """Remove and return the first hook of the ordered mapping ``hooks`` for which
    ``matches(hook)``, or ``matches(hook.fn)`` for the wrapper load pre-hooks are stored in;
    ``None`` when there is none."""
    for key, hook in list(hooks.items()):
        if matches(hook) or matches(getattr(hook, "fn", None)):
            del hooks[key]
            return hook
    return None


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`spectral_norm` on ``module.<name>``, which becomes a parameter again
    holding the current normalised weight (its state-dict hooks go too). Returns ``module``."""
    hook = _pop_hook(module._forward_pre_hooks,
                     lambda h: isinstance(h, SpectralNorm) and h.name == name)
    if hook is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hook.remove(module)
    _pop_hook(module._state_dict_hooks,
              lambda h: isinstance(h, SpectralNormStateDictHook) and h.fn.name == name)
    # (PyTorch 2.13 leaves this one behind, after which the module cannot load its own
    # state_dict; it is removed here)
    _pop_hook(module._load_state_dict_pre_hooks,
              lambda h: isinstance(h, SpectralNormLoadStateDictPreHook) and h.fn.name == name)
    return module
