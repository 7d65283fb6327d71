"""Check a prediction against a measurement on the local device.

``measure`` (imports torch) times a model file eagerly and replayed as a CUDA graph and profiles its kernels
per ATen operator; ``compare`` (pure) puts a measurement beside predictions and lines up kernel time per
operator kind. Import the submodules directly: this package imports nothing at import time.
"""
