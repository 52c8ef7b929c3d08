"""This process's RPC over a RabbitMQ fixture, for the scripts that call
a conductor from the benchmark's own process."""

from oslo_messaging import conffixture

from cyborg import conf
from cyborg import rpc


class RabbitRPC:
    """``start`` sends this process's RPC over ``rabbit`` (a
    ``cyborg.tests.fixtures.messaging`` RabbitMQ fixture already set up)
    instead of local dispatch; ``stop`` puts it back."""

    def __init__(self, rabbit):
        self.rabbit = rabbit
        self._fixture = None

    def start(self):
        rpc.cleanup()
        self._fixture = conffixture.ConfFixture(conf.CONF)
        self._fixture.setUp()
        self._fixture.transport_url = self.rabbit.transport_url
        conf.CONF.set_override('control_exchange',
                               self.rabbit.control_exchange)
        rpc.init(conf.CONF)

    def stop(self):
        if self._fixture is not None:
            rpc.cleanup()
            self._fixture.cleanUp()
            self._fixture = None
