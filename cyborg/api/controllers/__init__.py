"""Pecan controllers: ``root`` (GET /), ``v2`` (the v2 route table and one
module per resource) and ``versions`` (the version documents).
"""
