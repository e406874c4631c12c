"""``python -m scalesim.calibration`` (also ``torchrun ... -m scalesim.calibration``)."""

import sys

from scalesim.calibration.runner import main

code = main()
if "torch" not in sys.modules:  # torch is missing: main said so in one line
    sys.exit(code)
from scalesim.calibration.dist import exit_process  # noqa: E402 - it imports torch

exit_process(code)
