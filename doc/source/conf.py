"""Sphinx configuration of cyborg's documentation (tox -e docs)."""

project = 'cyborg'
copyright = 'The cyborg developers'
extensions = ['oslo_config.sphinxext', 'oslo_policy.sphinxext']
try:
    import openstackdocstheme  # noqa: F401
except ImportError:
    html_theme = 'alabaster'
else:
    extensions.append('openstackdocstheme')
    html_theme = 'openstackdocs'
    openstackdocs_repo_name = 'openstack/cyborg'
master_doc = 'index'
exclude_patterns = ['_build']
config_generator_config_file = '../../etc/cyborg/cyborg-config-generator.conf'
policy_generator_config_file = '../../etc/cyborg/cyborg-policy-generator.conf'
