"""``python -m benchmarks``: the same program as ``tensorium bench`` (:mod:`tensorium.cli.bench`)."""

import sys

from tensorium.cli.bench import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m benchmarks"))
