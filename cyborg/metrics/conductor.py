"""TRANSITIONAL: until the bind-path refactor lands.

cyborg-conductor's metrics live in ``cyborg.conductor.metrics``; this name
is the same module for the conductor modules that still import it here.
"""

import sys

from cyborg.conductor import metrics

sys.modules[__name__] = metrics
