"""``python -m scalesim.calibration`` (also ``torchrun ... -m scalesim.calibration``)."""

import sys

from scalesim.calibration.runner import main

sys.exit(main())
