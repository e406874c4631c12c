"""scalesim: an analytical scaling simulator and what-if planner for data-parallel training.

The model and the CLI import no torch; torch is only needed by ``scalesim.calibration``.
"""

from scalesim.errors import ScalesimError

__version__ = "0.1.0"

__all__ = ["ScalesimError", "__version__"]
