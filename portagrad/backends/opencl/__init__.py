"""The OpenCL backend (pyopencl)."""
