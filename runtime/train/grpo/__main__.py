"""``python -m runtime.train.grpo``: what a grpo stage's ``launch.sh`` runs (see :mod:`.cli`)."""

import sys

from runtime.train.grpo.cli import main

if __name__ == "__main__":
    sys.exit(main())
