"""``python -m benchmarks``: the same program as ``tensorium bench``."""

import sys

from tensorium.bench import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m benchmarks"))
