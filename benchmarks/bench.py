"""What every benchmark script here shares: its --quick run, its percentiles.

The scripts run as ``python benchmarks/<script>.py``, so this folder is the
first entry of ``sys.path`` and they import this module as ``bench``.
"""

import math


def percentile(values, fraction):
    """The nearest-rank ``fraction`` percentile of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * fraction) - 1)]


def parse_arguments(parser, argv, quick, quick_help):
    """The arguments of ``argv``; ``--quick`` sets each value of ``quick``.

    ``quick_help`` is formatted with ``quick`` (``%(name)d`` names a value).
    """
    parser.add_argument('--quick', action='store_true',
                        help=quick_help % quick)
    arguments = parser.parse_args(argv)
    if arguments.quick:
        for name, value in quick.items():
            setattr(arguments, name, value)
    return arguments
