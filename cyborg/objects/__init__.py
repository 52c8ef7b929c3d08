"""oslo.versionedobjects: one versioned object per table.

``register_all()`` imports every object module so the registry knows them;
services call it at start-up before any RPC traffic.
"""


def register_all():
    """Import every object module (each registers its classes)."""
    import importlib
    import pkgutil

    package = importlib.import_module(__name__)
    for module in pkgutil.iter_modules(package.__path__):
        if module.name not in ('base', 'fields'):
            importlib.import_module('%s.%s' % (__name__, module.name))
