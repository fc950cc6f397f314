"""All ``nn`` layer classes."""
from .activation import *  # noqa: F403
from .activation import __all__ as _a
from .batchnorm import *  # noqa: F403
from .batchnorm import __all__ as _b
from .container import *  # noqa: F403
from .container import __all__ as _c
from .conv import *  # noqa: F403
from .conv import __all__ as _cv
from .dropout import *  # noqa: F403
from .dropout import __all__ as _d
from .flatten import *  # noqa: F403
from .flatten import __all__ as _f
from .linear import *  # noqa: F403
from .linear import __all__ as _li
from .loss import *  # noqa: F403
from .loss import __all__ as _lo
from .misc import *  # noqa: F403
from .misc import __all__ as _mi
from .module import Module
from .normalization import *  # noqa: F403
from .normalization import __all__ as _n
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .rnn import __all__ as _r
from .transformer import *  # noqa: F403
from .transformer import __all__ as _t
from .pooling import __all__ as _p
from .sparse import *  # noqa: F403
from .sparse import __all__ as _s

__all__ = ["Module", *_a, *_b, *_c, *_cv, *_d, *_f, *_li, *_lo, *_mi, *_n, *_p, *_r, *_s, *_t]
