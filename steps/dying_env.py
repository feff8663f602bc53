"""An environment whose first step ends its own process: the environment pool's actor dies
(for the runtime's checks of how a run ends on that fault)."""

import os
from typing import Any

from rlsched.envs.grid import GridWalk


class DyingGrid(GridWalk):
    """GridWalk, except that a step kills the process it runs in."""

    def step(self, action: str) -> Any:
        os._exit(1)
