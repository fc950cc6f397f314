"""Stand-in ``torch`` for processes started from a ``python -m portagrad.compat`` run.

multiprocessing's spawn and forkserver start methods re-import the script in a new interpreter,
where the compat hook is not installed yet; this directory is on that interpreter's ``sys.path``,
so ``import torch`` lands here, installs the hook, and hands over portagrad's ``torch`` alias.
"""
import importlib
import sys

__portagrad_compat_shim__ = True

from portagrad.compat import install

install()
sys.modules[__name__] = importlib.import_module(__name__)
