"""cyborg-api as the benchmarks call it over HTTP, and what they find there.

``Api`` sends requests with one keep-alive session per thread;
``fpga_regions`` finds the FPGA regions a deployment's devices report;
``free_port`` picks a port for a server a benchmark starts.
"""

import socket
import threading

import requests


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class Api:
    """HTTP calls to cyborg-api, one keep-alive session per thread."""

    def __init__(self, endpoint):
        self.endpoint = endpoint.rstrip('/')
        if self.endpoint.endswith('/v2'):
            self.endpoint = self.endpoint[:-len('/v2')]
        self._local = threading.local()

    def call(self, method, path, body=None, expected=(200,)):
        session = getattr(self._local, 'session', None)
        if session is None:
            session = self._local.session = requests.Session()
        response = session.request(method, self.endpoint + path, json=body,
                                   timeout=60)
        if response.status_code not in expected:
            raise RuntimeError('%s %s answered %d: %s' % (
                method, path, response.status_code, response.text[:500]))
        return response

    def every(self, path, key):
        """Every row of a listing, following its ``next`` links."""
        rows = []
        while path:
            body = self.call('GET', path).json()
            rows += body[key]
            path = body.get('next')
            if path and path.startswith(self.endpoint):
                path = path[len(self.endpoint):]
        return rows


def fpga_regions(api):
    """{rp_uuid: (hostname, handles)} of the FPGA regions with a provider."""
    regions = {}
    hostnames = {device['hostname']
                 for device in api.every('/v2/devices?type=FPGA', 'devices')}
    for hostname in sorted(hostnames):
        for deployable in api.every(
                '/v2/deployables?hostname=%s&attribute=rc:FPGA' % hostname,
                'deployables'):
            if deployable['rp_uuid'] and deployable['num_accelerators']:
                regions[deployable['rp_uuid']] = (
                    hostname, deployable['num_accelerators'])
    return regions
