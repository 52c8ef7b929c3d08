"""``cyborg-dbsync import-upstream``: check, read, plan, write, and say so.

The target is this service's configured database, which must be at this
code's head revision; the source is read once, then everything is written
in one transaction (``writing.apply``). What is printed: the source's
revision, per table the rows to insert (or inserted), those already there
and those not carried over, then each row not carried with its reason.
"""

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg.db import migration
from cyborg.upstream import mapping
from cyborg.upstream import source
from cyborg.upstream import writing

Refused = source.Refused


def run(source_url, dry_run=False, out=print):
    """Import the upstream database at ``source_url``; return the Comparison.

    :raises: Refused when the import cannot run (target not at head,
        source revision not accepted, conflicting rows); nothing is
        written then.
    """
    _check_target()
    engine = source.connect(source_url)
    try:
        with engine.connect() as connection:
            revision = source.check_revision(connection)
            rows = source.read(connection)
    except sa.exc.SQLAlchemyError as error:
        raise Refused('Cannot read the source database %s: %s' % (
            _shown(source_url), getattr(error, 'orig', None) or error))
    finally:
        engine.dispose()
    plan = mapping.plan(rows)
    comparison = writing.apply(cyborg_context.get_admin_context(), plan,
                               dry_run=dry_run)
    for line in report(revision, plan, comparison, dry_run):
        out(line)
    return comparison


def _check_target():
    current, head = migration.current_revision(), migration.head_revision()
    if current != head:
        raise Refused('The target database is at revision %s, not at this '
                      'service\'s head %s: run "cyborg-dbsync upgrade" '
                      'first.' % (current, head))


def _shown(url):
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return '(an invalid URL)'


def report(revision, plan, comparison, dry_run):
    """The lines that tell the operator what the import did (or would)."""
    verb = 'to insert' if dry_run else 'inserted'
    lines = ['Source: OpenStack Cyborg database at revision %s.' % revision]
    for table, (new, present, skipped) in writing.counts(
            comparison, plan).items():
        lines.append('%s: %d %s, %d already there, %d not carried over'
                     % (table, new, verb, present, skipped))
    if plan.skipped:
        lines.append('Not carried over:')
        lines.extend('  %s %s: %s' % skipped for skipped in plan.skipped)
    if comparison.nothing_to_do():
        lines.append('Nothing to do: every row that can be carried over is '
                     'in the target already.')
    elif dry_run:
        lines.append('Dry run: nothing was written.')
    else:
        lines.append('Imported %d rows in one transaction.' % sum(
            len(rows) for rows in comparison.new.values()))
    return lines
