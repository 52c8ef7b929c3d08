"""The REST API: the WSGI pipeline (``app``), Pecan hooks, microversions,
links, the threaded server, and the controllers, schemas and views of each
resource.
"""
