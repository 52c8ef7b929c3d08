"""The one module the benchmark scripts share: a package the scripts import,
never each other.

The scripts run as ``python benchmarks/<script>.py``, so this folder's
parent is the first entry of ``sys.path`` and they import this package as
``bench``. Here: a script's ``--quick`` run, percentiles and the MariaDB
server URL; in its modules, what more than one script uses (``api``,
``fleet``, ``deployment``) and the modes one script runs
(``bind_latency``, ``fleet_reports``).
"""

import importlib.util
import math


def mariadb_server_url():
    """The URL of the local MariaDB server (no database) through the
    driver production deployments use (README, Deploying for real):
    mysqlclient, or PyMySQL where it is not installed."""
    if importlib.util.find_spec('MySQLdb') is None:
        return 'mysql+pymysql://root@127.0.0.1:3306/'
    return 'mysql+mysqldb://root@127.0.0.1:3306/'


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
