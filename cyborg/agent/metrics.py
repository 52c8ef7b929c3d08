"""cyborg-agent's metrics: inventory report timings, prepared ARQs and
programming results, the bitstream cache (hits, misses, bytes downloaded
from Glance), and the exceptions its RPC endpoints raise.

``counting_endpoints`` wraps the agent's manager as its RPC endpoint and
reads the answers of prepare_arqs and program; ``timed_report`` wraps the
periodic report.
"""


import prometheus_client

from cyborg.common import vocabulary
from cyborg import metrics

REGISTRY = metrics.process_registry()

REPORT_SECONDS = prometheus_client.Histogram(
    'cyborg_agent_inventory_report_duration_seconds',
    'Time an inventory report took, discovery and the conductor\'s answer '
    'included, by outcome: sent, skipped (a driver failed to discover) or '
    'failed (the conductor refused it or could not be reached).',
    ['outcome'], registry=REGISTRY)
PREPARED_ARQS = prometheus_client.Counter(
    'cyborg_agent_prepared_arqs',
    'ARQs the agent answered a prepare call for, by result: prepared, '
    'failed or pending (still preparing when the call had to answer).',
    ['result'], registry=REGISTRY)
PROGRAMMING = prometheus_client.Counter(
    'cyborg_agent_programming',
    'Requests to program a deployable, by result code (SUCCESS or the '
    'reason it failed).',
    ['result'], registry=REGISTRY)
CACHE_LOOKUPS = prometheus_client.Counter(
    'cyborg_agent_bitstream_cache_lookups',
    'Bitstreams looked up in the agent\'s cache before a program, a bind '
    'or a prefetch, by result: hit (used without a download), miss '
    '(downloaded) or corrupted (the cached file no longer had its hash: '
    'dropped and downloaded).',
    ['result'], registry=REGISTRY)
CACHE_EVICTIONS = prometheus_client.Counter(
    'cyborg_agent_bitstream_cache_evictions',
    'Cached bitstreams removed, least recently used first, to keep the '
    'cache within [agent] bitstream_cache_size.',
    registry=REGISTRY)
DOWNLOADED_BYTES = prometheus_client.Counter(
    'cyborg_agent_bitstream_downloaded_bytes',
    'Bytes of bitstreams the agent downloaded from Glance (verified).',
    registry=REGISTRY)
RPC_ERRORS = prometheus_client.Counter(
    'cyborg_agent_rpc_errors',
    'Exceptions raised by the agent\'s RPC endpoints, by method and '
    'exception class.',
    ['method', 'error'], registry=REGISTRY)


def count_prepared(answer):
    """Count the ARQs of a prepare_arqs answer by result."""
    for result in answer.values():
        if result.get('pending'):
            PREPARED_ARQS.labels('pending').inc()
        elif result.get('prepared'):
            PREPARED_ARQS.labels('prepared').inc()
        else:
            PREPARED_ARQS.labels('failed').inc()


def count_programmed(answer):
    """Count a program answer by its result code's name."""
    try:
        result = vocabulary.ProgramResult(answer['code']).name
    except (KeyError, TypeError, ValueError):
        result = 'unknown'
    PROGRAMMING.labels(result).inc()


def count_lookup(result):
    """Count one look-up of the bitstream cache: hit, miss or corrupted."""
    CACHE_LOOKUPS.labels(result).inc()


def count_downloaded(size):
    """Count ``size`` bytes downloaded from Glance."""
    DOWNLOADED_BYTES.inc(size)


def counting_endpoints(manager):
    """``manager`` as the RPC endpoint: exceptions, prepared ARQs and
    programming results counted."""
    return metrics.CountingEndpoints(
        manager, RPC_ERRORS,
        on_result={'prepare_arqs': count_prepared,
                   'program': count_programmed})


# Time a report_inventory call; its result says whether it was sent.
timed_report = metrics.timed(
    REPORT_SECONDS, lambda sent: 'sent' if sent else 'skipped')


def scrape_registry():
    """What a scrape of the agent reads."""
    return metrics.scrape_registry(REGISTRY)


def exporter(host, port):
    """The agent's metrics server on (host, port), not yet started."""
    return metrics.Exporter(host, port, scrape_registry(), 'cyborg-agent',
                            '[metrics] agent_port')
