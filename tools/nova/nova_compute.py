"""nova-compute with the recording fake driver of ``cyborg_fake_virt``.

Nova loads ``[DEFAULT] compute_driver`` from its ``nova.virt`` package
only, so this runs nova-compute (``nova.cmd.compute.main``, same command
line) with ``cyborg_fake_virt`` (beside this file) known as
``nova.virt.cyborg_fake_virt``: ``compute_driver =
cyborg_fake_virt.RecordingFakeDriver``. Run with the Nova virtualenv's
Python.
"""

import os
import sys

# Nova's own entry point first: it sets up the concurrency mode before
# anything of Nova's is imported.
from nova.cmd import compute

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cyborg_fake_virt  # noqa: E402

sys.modules['nova.virt.cyborg_fake_virt'] = cyborg_fake_virt

if __name__ == '__main__':
    sys.exit(compute.main())
