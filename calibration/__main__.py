"""``python -m scalesim.calibration`` (also ``torchrun ... -m scalesim.calibration``)."""

from scalesim.calibration.dist import exit_process
from scalesim.calibration.runner import main

exit_process(main())
