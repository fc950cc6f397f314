"""The backend conformance kit: a pytest plugin (:mod:`.plugin`) and its tests (:mod:`.conformance`).

Run it against an installed backend::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance --portagrad-backend mydev

It also holds ``assert_close``, ``make_tensor`` and the deprecated ``assert_allclose``
(``torch.testing``), in :mod:`.comparison`.
"""
from .comparison import assert_allclose, assert_close, make_tensor

__all__: list[str] = ["assert_allclose", "assert_close", "make_tensor"]
