"""os-acc's plug in the history: the bind entry names the plug's call.

A plug is recorded by the conductor in os-acc's call and ended by the
binder; the entry of the bind's end carries the project and request id of
the context os-acc sent (the compute node's service, acting for the
instance's project), not the binder's.
"""

import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests.unit.os_acc import compute_node
from cyborg.tests.unit.os_acc import test_plug
import os_acc
from os_acc import api as os_acc_api

HISTORY = models.HistoryEntry.__table__


class PlugHistoryTests(compute_node.ComputeNodeTestsBase):

    def test_the_bind_entry_names_the_plug_call(self):
        sent = []
        original = os_acc_api._context

        def recording_context(*args, **kwargs):
            context = original(*args, **kwargs)
            sent.append(context)
            return context

        self.patch(os_acc_api, '_context', recording_context)
        instance = test_plug.instance_info()
        os_acc.plug(instance, {'uuid': self.providers[0]},
                    test_plug.FPGA_SPECS)

        rows = self.query(sa.select(HISTORY).where(
            HISTORY.c.event == 'bind'))
        self.assertEqual(1, len(rows), rows)
        entry = rows[0]
        self.assertIn(entry.request_id,
                      [context.request_id for context in sent])
        self.assertEqual(('ok', 'project-1', 'project-1', instance['uuid']),
                         (entry.outcome, entry.project_id,
                          entry.arq_project_id, entry.instance_uuid))
