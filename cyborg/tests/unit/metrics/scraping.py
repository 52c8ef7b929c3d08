"""Reading Prometheus text the way a Prometheus server scrapes it."""

from prometheus_client import parser
import requests


class Scrape(dict):
    """``{(sample name, ((label, value), ...)): value}`` of one scrape."""

    def value(self, name, **labels):
        """The sample ``name`` with exactly ``labels``, or 0 when absent."""
        return self.get((name, tuple(sorted(labels.items()))), 0)

    def labels_of(self, name):
        """The label dicts of every sample called ``name``."""
        return [dict(labels) for sample, labels in self if sample == name]


def parse(text):
    """The samples of the exposition ``text``."""
    scrape = Scrape()
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            scrape[(sample.name, tuple(sorted(sample.labels.items())))] = (
                sample.value)
    return scrape


def scrape(port, host='127.0.0.1'):
    """GET /metrics of the server on ``port``, parsed."""
    response = requests.get('http://%s:%d/metrics' % (host, port), timeout=10)
    response.raise_for_status()
    return parse(response.text)
