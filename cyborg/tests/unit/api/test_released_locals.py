"""An answer is freed as soon as it has been sent, not at the garbage
collector's next pass (``cyborg.api.app.ReleasedLocals``)."""

import gc

import webob

from cyborg import context as cyborg_context
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records


class TestReleasedLocals(real_app.RealAppTestCase):

    def test_no_cycle_keeps_the_response(self):
        context = cyborg_context.get_admin_context()
        for _ in range(3):
            records.make_device(context)
        request = webob.Request.blank('/v2/devices?limit=2', headers={
            'OpenStack-API-Version': 'accelerator 2.4'})
        enabled = gc.isenabled()
        gc.disable()
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            response = request.get_response(self.application)
            del request
            gc.collect()
            kept = [found for found in gc.garbage
                    if isinstance(found, webob.Response)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if enabled:
                gc.enable()
        self.assertEqual(200, response.status_int)
        self.assertEqual(2, len(response.json_body['devices']))
        # Pecan's response (and the body it holds) was freed when the
        # request was done with, by reference counting: no cycle held it.
        self.assertEqual([], kept)
