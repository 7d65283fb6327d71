"""tops-advisor: which accelerator to buy or rent for a model, and what it will really deliver there.

Nothing is loaded at import time; see ``tops_advisor.api`` for the Python API.
"""

__version__ = "0.1.0"
