"""cyborg-status: ``cyborg-status upgrade check`` says whether this node can run.

The checks use oslo.upgradecheck; exit code 0 means success, 1 warning,
2 failure, 255 an error while checking.
"""

import sys

from oslo_upgradecheck import upgradecheck

from cyborg import conf
from cyborg.db import api as db_api
from cyborg.db import migration


def check_database_schema(engine=None):
    """Whether the database schema is at this code's head revision."""
    try:
        if engine is None:
            if not db_api.main_context_manager.is_started:
                db_api.configure(conf.CONF)
            engine = db_api.get_engine()
        current = migration.current_revision(engine)
    except Exception as error:
        return upgradecheck.Result(
            upgradecheck.Code.FAILURE,
            'Cannot read the database schema revision (%s: %s). Check '
            '[database] connection, then run "cyborg-dbsync upgrade".'
            % (type(error).__name__, error))
    head = migration.head_revision()
    if current == head:
        return upgradecheck.Result(upgradecheck.Code.SUCCESS,
                                   'The database schema is at %s.' % head)
    if current is None:
        return upgradecheck.Result(
            upgradecheck.Code.FAILURE,
            'The database has no cyborg schema; run "cyborg-dbsync upgrade".')
    return upgradecheck.Result(
        upgradecheck.Code.FAILURE,
        'The database schema is at %s but this code needs %s; run '
        '"cyborg-dbsync upgrade" (if the database is newer than this code, '
        'upgrade cyborg instead).' % (current, head))


class Checks(upgradecheck.UpgradeCommands):
    """cyborg's upgrade checks."""

    def _check_database_schema(self):
        return check_database_schema()

    _upgrade_checks = (
        ('Database schema', _check_database_schema),
    )


def main(argv=None):
    """Run ``upgrade check``; return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    return upgradecheck.main(conf.CONF, project='cyborg',
                             upgrade_command=Checks(), argv=argv)
