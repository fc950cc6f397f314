"""The backend conformance kit: a pytest plugin (:mod:`.plugin`) and its tests (:mod:`.conformance`).

Run it against an installed backend::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance --portagrad-backend mydev
"""
__all__: list[str] = []
