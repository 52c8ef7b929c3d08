"""Switching from OpenStack Cyborg: import its database into this service's.

``cyborg-dbsync import-upstream --from URL [--dry-run]`` reads a database
that OpenStack Cyborg's own migrations built (``source``: which revisions
are accepted, and the rows), turns its rows into this service's
(``mapping``: what is carried over, and why a row is not) and writes them
into the configured database in one transaction (``writing``: what is
there already, what conflicts, the inserts). ``importing`` ties the three
together and words the outcome. doc/source/admin/switching-from-cyborg.rst
says what is carried and how the imported deployables keep their resource
providers' identity in Placement.
"""
