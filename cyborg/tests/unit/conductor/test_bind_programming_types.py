"""A bind that asks for programming on a deployable that is not an FPGA.

The binding fixture of ``test_bind_programming`` with a GPU added to its
fleet: a profile group naming ``accel:bitstream_id`` or
``accel:function_id`` on the GPU fails its ARQ saying that only FPGA
regions can be programmed, before Glance or the agent is asked, and the
GPU is left as it was.
"""

import uuid

import fixtures
import sqlalchemy as sa

from cyborg.clients import glance as glance_client
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_programming as programming
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.db import records

Device = models.Device.__table__
Deployable = models.Deployable.__table__
FLEET = programming.FLEET + """
gpus:
  - model: Tesla T4
    product_id: "0x1eb8"
"""


class GPUProgrammingBindTests(programming.ProgrammingBindTestsBase):

    inventory = FLEET

    def gpu(self):
        """The GPU's deployable row (its provider's)."""
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Deployable).join(
                Device, Device.c.id == Deployable.c.device_id).where(
                Device.c.type == 'GPU',
                Deployable.c.rp_uuid.is_not(None))).one()

    def gpu_arq(self, **keys):
        gpu = self.gpu()
        profile = records.make_device_profile(
            self.context, groups=[dict({'resources:PGPU': '1'}, **keys)])
        return records.make_arq(
            self.context, profile, state='BindStarted', hostname=cases.HOST,
            device_rp_uuid=gpu.rp_uuid, instance_uuid=str(uuid.uuid4()),
            project_id='project-1').uuid

    def test_a_bitstream_on_a_gpu_fails_saying_only_fpgas_program(self):
        image = self.upload()
        glance_asked = self.useFixture(fixtures.MockPatchObject(
            glance_client.GlanceClient, 'get_image',
            side_effect=AssertionError('Glance was asked')))
        for keys, named in (
                ({'accel:bitstream_id': image}, 'accel:bitstream_id'),
                ({'accel:function_id': str(uuid.uuid4())},
                 'accel:function_id')):
            with self.subTest(named=named):
                arq_uuid = self.gpu_arq(**keys)

                self.assertEqual({arq_uuid: 'BindFailed'},
                                 self.binder.bind([arq_uuid]))

                self.assertEqual(
                    'deployable %s is on a GPU device: only FPGA regions '
                    'can be programmed (the profile names %s)'
                    % (self.gpu().name, named), self.reason(arq_uuid))
                self.assertEqual([], self.driver.programs)
                self.assertEqual(0, self.handles_in_use())
                gpu = self.gpu()
                self.assertEqual((None, None), (gpu.bitstream_id,
                                                gpu.programming_owner))
        self.assertFalse(glance_asked.mock.called)

    def test_a_gpu_without_programming_keys_still_binds(self):
        arq_uuid = self.gpu_arq()

        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))


class SQLiteGPUProgrammingBindTests(GPUProgrammingBindTests, base.TestCase):
    pass
