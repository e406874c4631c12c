"""``python -m scalesim.calibration`` (also ``torchrun ... -m scalesim.calibration``)."""

from scalesim.calibration.options import exit_calibration
from scalesim.calibration.runner import main

exit_calibration(main())
