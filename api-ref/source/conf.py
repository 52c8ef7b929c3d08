"""Sphinx configuration of the accelerator API reference (tox -e api-ref)."""

project = 'Accelerator API Reference'
copyright = 'The cyborg developers'
extensions = ['os_api_ref']
try:
    import openstackdocstheme  # noqa: F401
except ImportError:
    html_theme = 'alabaster'
else:
    extensions.append('openstackdocstheme')
    html_theme = 'openstackdocs'
master_doc = 'index'
