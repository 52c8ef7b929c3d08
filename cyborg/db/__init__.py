"""The SQL database: models, migrations, transactions and query functions.

Only the conductor (and cyborg-dbsync) writes; the API reads through
``cyborg.objects``. Agents never touch the database.
"""
