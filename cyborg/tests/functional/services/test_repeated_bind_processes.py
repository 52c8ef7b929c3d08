"""A bind sent again, end to end (issue 33, point 3).

cyborg-api, -conductor and -agent run as separate processes over RabbitMQ
and MariaDB, with a real Placement. Nova sends a bind, and sends it again
as a client does whose first answer was lost (a 503 that said the outcome
is unknown): both are answered 202, while the bind is under way and once
it is Bound, and the ARQ is bound once, with one history entry. Another
binding of that ARQ is still refused with 409.
"""

import uuid

from cyborg.tests import base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

FLEET = {'fpgas': [cases.FPGA_A, cases.FPGA_B], 'gpus': [cases.T4_GPU]}
# The history of a deployable is shown from microversion 2.6.
VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}


class RepeatedBindProcessesTest(cases.ArqProcessesMixin, base.TestCase):

    backend = 'mysql'

    def _patch(self, body):
        status, _answer = self._api('PATCH', '/v2/accelerator_requests', body)
        return status

    def test_the_same_bind_twice_is_202_and_binds_once(self):
        deployables = self._start_services(FLEET, None)
        region = deployables[cases.REGION_A]
        profile = self._create_profile('repeat-%s' % self.suffix,
                                       cases.region_trait(cases.REGION_A_ID))
        arq_uuid = self._create_arq(profile['name'])['uuid']
        instance_uuid = str(uuid.uuid4())
        bind = {arq_uuid: cases.bind_ops(self.host, region['rp_uuid'],
                                         instance_uuid)}
        other = {arq_uuid: cases.bind_ops(self.host, region['rp_uuid'],
                                          str(uuid.uuid4()))}

        # The first, its retry while the bind may be under way, and a
        # different binding.
        statuses = [self._patch(bind), self._patch(bind), self._patch(other)]
        self.assertEqual([202, 202, 409], statuses, self._logs())
        [bound] = self._resolved(instance_uuid)
        self.assertEqual('Bound', bound['state'], bound)
        self._assert_bound(bound, region['rp_uuid'], instance_uuid)

        # Once Bound: the same bind is still 202 and changes nothing.
        self.assertEqual([202, 409], [self._patch(bind), self._patch(other)])
        self.assertEqual(bound, self._get_arq(arq_uuid))
        status, history = deployment.api_request(
            self.api_port, 'GET', '/v2/deployables/%s/history'
            % region['uuid'], headers=VERSION)
        self.assertEqual(200, status, history)
        history = history['history']
        self.assertEqual(['bind'], [entry['event'] for entry in history
                                    if entry['arq_uuid'] == arq_uuid])
        handles = self._handles(region['rp_uuid'])
        self.assertEqual(1, sum(handle[3] for handle in handles.values()))
        log = self.conductor.log()
        self.assertEqual(1, log.count('Binds recorded: %s' % arq_uuid), log)
        self.assertEqual(2, log.count('Bind repeated, recorded already; '
                                      'nothing changed: %s' % arq_uuid), log)
        self._assert_clean_stop(self.services)
