"""cyborg-dbsync: upgrade the database schema, or print its revision.

``cyborg-dbsync [--config-file F] upgrade [--revision R]`` runs the alembic
migrations up to ``R`` (default ``head``); ``cyborg-dbsync version`` prints
the current revision, or ``None`` for an empty database;
``cyborg-dbsync import-upstream --from URL [--dry-run]`` imports an
OpenStack Cyborg database into the configured one (``cyborg.upstream``;
doc/source/admin/switching-from-cyborg.rst). A refused import prints why
and exits with 2, having written nothing.
"""

import logging
import sys

from oslo_config import cfg
from oslo_log import log

from cyborg import conf
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.upstream import importing

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


def import_upstream():
    """Import the OpenStack Cyborg database at ``--from``; 2 when refused."""
    logging.getLogger('alembic').setLevel(logging.WARNING)
    command = conf.CONF.command
    try:
        importing.run(command.source, dry_run=command.dry_run)
    except importing.Refused as refused:
        print('Import refused: %s' % refused, file=sys.stderr)
        return 2
    return 0


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

    parser = subparsers.add_parser(
        'import-upstream',
        help='Import an OpenStack Cyborg database into the configured one.')
    parser.add_argument('--from', dest='source', required=True,
                        metavar='URL',
                        help='SQLAlchemy URL of the OpenStack Cyborg '
                             'database to read.')
    parser.add_argument('--dry-run', action='store_true',
                        help='Print what would be imported; write nothing.')
    parser.set_defaults(function=import_upstream)


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
        return conf.CONF.command.function() or 0
    except Exception:
        LOG.exception('cyborg-dbsync %s failed', conf.CONF.command.name)
        return 1
