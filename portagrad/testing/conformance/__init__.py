"""Conformance tests for a portagrad backend: every method of the backend contract against the
numpy reference, then the public API (autograd, optimizers) on the device.

Run with the plugin (see :mod:`portagrad.testing.plugin`)::

    pytest -p portagrad.testing.plugin --pyargs portagrad.testing.conformance --portagrad-backend mydev

The modules, one per family of primitives (select one with ``-k``): ``test_contract`` (the
contract, devices, memory, pinned memory, events, several devices), ``test_elementwise`` (unary,
binary, where, copy, fill), ``test_reductions`` (reduce, arg_reduce, cumsum, sort),
``test_indexing`` (matmul, gather, scatter), ``test_random`` (the Philox streams),
``test_complex`` (complex64/complex128 in the primitives, or the backend's clean decline),
``test_fast_paths`` (softmax, conv2d, max_pool2d and their gradients), ``test_norms``
(softmax_backward, layer_norm, batch_norm, cross_entropy and their gradients),
``test_attention`` (fused attention and its gradients), ``test_linalg`` (eigh, svd) and
``test_autograd``
(gradcheck and optimizer steps through the public API against the cpu device).

Each primitive runs on twin views (same offset, shape and strides) of the backend under test and
of the numpy backend, with the layouts the core really passes: offsets, transposed and broadcast
(stride-0) inputs, strided outputs where the contract allows them, zero-size and 0-d shapes, and
every dtype the backend stores.
"""
