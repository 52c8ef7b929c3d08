"""cyborg-dbsync: upgrade the database schema, or print its revision.

``cyborg-dbsync [--config-file F] upgrade [--revision R]`` runs the alembic
migrations up to ``R`` (default ``head``); ``cyborg-dbsync version`` prints
the current revision, or ``None`` for an empty database.
"""

import logging
import sys

from oslo_config import cfg
from oslo_log import log

from cyborg import conf
from cyborg.db import api as db_api
from cyborg.db import migration

LOG = log.getLogger(__name__)


def upgrade():
    """Upgrade the configured database to ``--revision``."""
    revision = conf.CONF.command.revision
    LOG.info('Upgrading the database schema to %s', revision)
    migration.upgrade(revision)
    LOG.info('The database schema is at %s', migration.current_revision())


def version():
    """Print the configured database's revision, or None."""
    # Keep standard output to the one answer; alembic chats at INFO.
    logging.getLogger('alembic').setLevel(logging.WARNING)
    print(migration.current_revision())


def add_command_parsers(subparsers):
    """Declare the sub-commands and their options."""
    parser = subparsers.add_parser(
        'upgrade', help='Upgrade the database schema (to head by default).')
    parser.add_argument('--revision', default='head',
                        help='Revision to upgrade to (default: head).')
    parser.set_defaults(function=upgrade)

    parser = subparsers.add_parser(
        'version', help='Print the current schema revision, or None.')
    parser.set_defaults(function=version)


command_opt = cfg.SubCommandOpt('command', title='Commands',
                                help='Available commands',
                                handler=add_command_parsers)


def main(argv=None):
    """Parse the command line and run the sub-command; return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    conf.CONF.register_cli_opt(command_opt)
    log.register_options(conf.CONF)
    conf.CONF(argv, project='cyborg')
    log.setup(conf.CONF, 'cyborg')
    db_api.configure(conf.CONF)
    try:
        conf.CONF.command.function()
    except Exception:
        LOG.exception('cyborg-dbsync %s failed', conf.CONF.command.name)
        return 1
    return 0
