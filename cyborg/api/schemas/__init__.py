"""Validation of request bodies and queries, one module per resource.

Each is built from the declarations of ``declarations.py`` (a check and a
JSON Schema in one object), whose limits come from the database columns
(``cyborg.common.columns``). ``routes.py`` is the table of every operation and
``resources.py`` declares the response bodies; ``cyborg.api.openapi``
renders the OpenAPI document from them.
"""
