"""Options of the [database] group: oslo.db's options with cyborg's default."""

from oslo_db import options as db_options

DEFAULT_CONNECTION = 'sqlite:///$state_path/cyborg.sqlite'


def register_opts(conf):
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    return {'database': db_options.database_opts}
