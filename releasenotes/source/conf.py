"""Sphinx configuration of the release notes (tox -e releasenotes)."""

project = 'cyborg release notes'
extensions = ['reno.sphinxext']
master_doc = 'index'
html_theme = 'alabaster'
