"""What a forward does on the host, beside the kernels it launches: seen while counting, on tensors without values.

- ``reads.py``: reads of a tensor's value back to the host (``.item()``, ``mask.all()``, ``nonzero``), answered
  with one documented assumption or refused;
- ``data.py``: tensors the forward makes on the host (a factory with no device), which launch no kernel;
- ``copies.py``: copies from pageable host memory to the device, on which CUDA-graph capture fails.
"""
