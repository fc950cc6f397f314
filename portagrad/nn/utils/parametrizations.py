"""``torch.nn.utils.parametrizations``: ready-made parametrizations registered through
:mod:`.parametrize`.

* :func:`orthogonal` keeps a matrix (or a batch of them) orthogonal / unitary;
* :func:`weight_norm` splits a tensor into a magnitude and a direction;
* :func:`spectral_norm` divides a tensor by its largest singular value, estimated by power
  iteration.

The state_dict layout is PyTorch's: ``parametrizations.<name>.original`` (or ``original0`` /
``original1`` for weight norm) plus the parametrization's own buffers (``0.base``, ``0._u``,
``0._v``). The modules keep PyTorch's class names, which show in a module's repr."""
from __future__ import annotations

from typing import Any

from ... import _creation, _dtype, _random
from ..._ops.elementwise import add
from ..._ops.joining import cat
from ..._ops.linalg import matrix_exp, solve
from ..._ops.linalg_ex import geqrf, householder_product
from ..._ops.matmul import mv, vdot
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..functional import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import magnitude, rescale

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")
_TRANSPOSED_CONVS = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)


def _tensor_named(module: Module, name: str) -> Tensor:
    value = getattr(module, name, None)
    if not isinstance(value, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    return value


# ------------------------------------------------------------------------------ orthogonal
def _tall(X: Tensor) -> tuple[Tensor, bool]:
    """``X`` with at least as many rows as columns (transposing when needed), and whether it
    was transposed."""
    if X.size(-2) < X.size(-1):
        return X.mT, True
    return X, False


def _orthonormalize(A: Tensor) -> Tensor:
    """The orthonormal factor Q of ``A = QR``, normalised so that R has a positive diagonal."""
    reflectors, tau = geqrf(A)
    Q = householder_product(reflectors, tau)
    # geqrf leaves R on and above the diagonal: flip the columns where R's diagonal is negative
    return Q * reflectors.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _looks_orthogonal(Q: Tensor) -> bool:
    """Whether the tall matrix ``Q`` has orthonormal columns (up to rounding)."""
    rows, cols = Q.size(-2), Q.size(-1)
    eye = _creation.eye(cols, dtype=Q.dtype, device=Q.device)
    # allclose(Q^H Q, I) with atol 10 n eps and the default rtol
    tolerance = 10.0 * rows * _dtype.finfo(Q.dtype).eps + 1e-5 * eye
    return bool(((Q.mH @ Q - eye).abs() <= tolerance).all().item())


class _Orthogonal(Module):
    """Maps an unconstrained tall ``n x k`` matrix ``X`` to one with orthonormal columns.

    ``"matrix_exp"`` / ``"cayley"`` build the skew-symmetric (skew-Hermitian) matrix
    ``A = L - L^H`` from the lower triangle ``L`` of ``X`` padded to ``n x n`` and
    take ``exp(A)`` or ``(I - A/2)^{-1} (I + A/2)``, keeping the first ``k`` columns;
    ``"householder"`` multiplies the reflectors stored below ``X``'s diagonal, the diagonal's
    signs choosing the column signs. With ``use_trivialization`` the result is further
    multiplied by the buffer ``base``, which assignments set (the stored tensor is then reset
    so that the map gives the identity)."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        self.use_trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def _from_skew(self, X: Tensor) -> Tensor:
        rows, cols = X.size(-2), X.size(-1)
        L = X.tril()
        if cols < rows:
            padding = L.new_zeros(rows, rows - cols).expand(*L.shape[:-2], -1, -1)
            L = cat([L, padding], dim=-1)
        A = L - L.mH
        if self.orthogonal_map == "matrix_exp":
            Q = matrix_exp(A)
        else:
            eye = _creation.eye(rows, dtype=A.dtype, device=A.device)
            Q = solve(add(eye, A, alpha=-0.5), add(eye, A, alpha=0.5))
        return Q[..., :cols] if cols < rows else Q

    @staticmethod
    def _from_reflectors(X: Tensor) -> Tensor:
        below = X.tril(diagonal=-1)
        # the reflector of column j is e_j + below[:, j]: tau = 2 / ||e_j + below[:, j]||^2
        tau = 2.0 / (1.0 + (below * below).sum(dim=-2))
        Q = householder_product(below, tau)
        # the diagonal holds +-1: integers, so that no gradient flows through it
        return Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)

    def forward(self, X: Tensor) -> Tensor:
        X, flipped = _tall(X)
        if self.orthogonal_map == "householder":
            Q = self._from_reflectors(X)
        else:
            Q = self._from_skew(X)
        if self.use_trivialization:
            Q = self.base @ Q
        return Q.mT if flipped else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """The stored tensor that gives ``Q`` (which must have orthonormal rows or columns)."""
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        with no_grad():
            if self.use_trivialization:
                return self._move_into_base(Q)
            if self.orthogonal_map != "householder":
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential "
                    "or the Cayley parametrizations when use_trivialization=False.")
            return self._reflectors_of(Q)

    def _move_into_base(self, Q: Tensor) -> Tensor:
        tall, _ = _tall(Q)
        rows, cols = tall.size(-2), tall.size(-1)
        if rows == cols:
            base = tall.clone() if _looks_orthogonal(tall) else _orthonormalize(tall)
        else:
            # complete the columns to a square orthogonal matrix with random directions
            extra = _random.randn(*tall.shape[:-2], rows, rows - cols, dtype=tall.dtype,
                                  device=tall.device)
            base = _orthonormalize(cat([tall, extra], dim=-1))
        self.base = base
        # minus the identity: every map sends it to the identity, so the output is `base`
        stored = _creation.zeros_like(Q)
        stored.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return stored

    @staticmethod
    def _reflectors_of(Q: Tensor) -> Tensor:
        tall, flipped = _tall(Q)
        reflectors, tau = geqrf(tall)
        diagonal = reflectors.diagonal(dim1=-2, dim2=-1)
        # the diagonal keeps only R's signs; a skipped reflection (tau == 0) flips its sign
        diagonal.sign_()
        diagonal[tau == 0.0] *= -1
        return reflectors.mT if flipped else reflectors


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or a batch of matrices) to be orthogonal, or
    unitary when complex.

    ``orthogonal_map`` is ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; by default the
    matrix exponential for square or complex matrices, Householder reflectors otherwise.
    ``use_trivialization`` adds a ``base`` buffer so that any orthogonal matrix can be
    assigned. Returns ``module``."""
    weight = _tensor_named(module, name)
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, parametrization, unsafe=True)
    return module


# ----------------------------------------------------------------------------- weight norm
class _WeightNorm(Module):
    """``(g, v) -> g * v / ||v||`` with the norm over every dimension but ``dim`` (``-1``: the
    whole tensor); its right inverse splits a tensor into that norm and itself."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return rescale(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return magnitude(weight, self.dim), weight


class _HookFormKeys:
    """A ``load_state_dict`` pre-hook renaming the hook form's ``<name>_g`` / ``<name>_v``
    entries to the parametrization's ``original0`` / ``original1``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, state_dict: dict, prefix: str, local_metadata: Any, strict: bool,
                 missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        old = (f"{prefix}{self.name}_g", f"{prefix}{self.name}_v")
        if all(key in state_dict for key in old):
            for index, key in enumerate(old):
                state_dict[f"{prefix}parametrizations.{self.name}.original{index}"] = \
                    state_dict.pop(key)


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``: ``original0`` holds ``g``, the
    norm over every dimension but ``dim`` (kept with size 1; ``None``: the whole tensor's norm),
    ``original1`` holds ``v``. State dicts saved with the hook form
    (:func:`..weight_norm`, keys ``<name>_g`` / ``<name>_v``) load as well. Returns
    ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    module._register_load_state_dict_pre_hook(_HookFormKeys(name))
    return module


# --------------------------------------------------------------------------- spectral norm
class _SpectralNorm(Module):
    """``W -> W / sigma(W)``, ``sigma`` the largest singular value of ``W`` seen as a matrix
    whose rows follow dimension ``dim``.

    ``sigma`` is estimated as ``u^H W v`` from the buffers ``_u`` and ``_v``, which power
    iteration refines (in place, without gradient) on every call in training mode. A vector is
    simply divided by its norm."""

    _u: Tensor
    _v: Tensor

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        rank = weight.ndim
        if not -rank <= dim < rank:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{rank}, {rank - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim % rank
        self.eps = eps
        if rank < 2:
            return
        self.n_power_iterations = n_power_iterations
        matrix = self._as_matrix(weight)
        rows, cols = matrix.shape
        with no_grad():
            self.register_buffer("_u", self._unit(matrix.new_empty(rows).normal_(0, 1)))
            self.register_buffer("_v", self._unit(matrix.new_empty(cols).normal_(0, 1)))
        # start from a good estimate
        self._iterate(matrix, 15)

    def _unit(self, vector: Tensor, out: Tensor | None = None) -> Tensor:
        return normalize(vector, dim=0, eps=self.eps, out=out)

    def _as_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` with dimension ``dim`` first and the others flattened."""
        if self.dim:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _iterate(self, matrix: Tensor, steps: int) -> None:
        # u <- W v / |W v|, v <- W^H u / |W^H u|, written into the buffers themselves
        with no_grad():
            for _ in range(steps):
                self._unit(mv(matrix, self._v), out=self._u)
                self._unit(mv(matrix.H, self._u), out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return self._unit(weight)
        matrix = self._as_matrix(weight)
        if self.training:
            self._iterate(matrix, self.n_power_iterations)
        # copies, since later calls overwrite the buffers the backward pass would read
        sigma = vdot(self._u.clone(), mv(matrix, self._v.clone()))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as itself divided by its spectral norm.

    The norm is estimated by ``n_power_iterations`` steps of power iteration per call in
    training mode (the buffers ``_u`` / ``_v`` of the parametrization keep the estimate); in
    eval mode the last estimate is used. ``dim`` (default 1 for transposed convolutions, else
    0) is the dimension of the output features. Returns ``module``."""
    weight = _tensor_named(module, name)
    if dim is None:
        dim = 1 if isinstance(module, _TRANSPOSED_CONVS) else 0
    parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module
