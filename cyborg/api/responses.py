"""How answers are written: JSON bodies (Pecan's ``json`` renderer) and
answers without a body, which Pecan would otherwise rewrite."""

import datetime
import json

import pecan
from pecan import jsonify

try:
    import orjson
except ImportError:  # no wheel: the standard library's encoder only
    orjson = None


def empty(status):
    """The current response with ``status`` and an empty body.

    Pecan turns an empty 200 into a 204, except when the body is a
    generator it cannot see the end of; this one yields no bytes. The
    content type is left out, as there is no body to describe.
    """
    response = pecan.response
    response.status = status
    response.content_type = None
    response.app_iter = (chunk for chunk in [b''])
    return response


# The encoder of every JSON answer: orjson when its wheel is installed,
# else the standard library's (pecan's own encoder). Both give the same
# JSON values; orjson writes them without spaces and non-ASCII text as
# UTF-8 rather than \u escapes, several times faster. Both write a naive
# datetime (UTC) as the API's timestamps read: ISO 8601 to whole seconds,
# ``+00:00`` (``cyborg.api.views.listing.timestamp``).
ORJSON = 'orjson'
STDLIB = 'json'


def iso_seconds(value):
    """The answer's text of a datetime: ``YYYY-MM-DDTHH:MM:SS+00:00``,
    seconds cut (a naive datetime is UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value.isoformat(timespec='seconds') + '+00:00'


jsonify.jsonify.register(datetime.datetime)(iso_seconds)


def _orjson_encoder():
    """orjson's ``dumps`` for what it encodes exactly as pecan would, or
    None when the wheel is missing."""
    try:
        import orjson
    except ImportError:
        return None
    # Anything but str/int/float/bool/None/dict/list or a datetime (a str
    # subclass, a date, a key that is not text, an integer past 64 bits)
    # raises, and goes to pecan's encoder, whose text for it may differ.
    # A datetime is written as ``iso_seconds`` writes it: UTC when naive,
    # microseconds left out (cut, as isoformat cuts them).
    options = (orjson.OPT_NAIVE_UTC
               | orjson.OPT_OMIT_MICROSECONDS
               | orjson.OPT_PASSTHROUGH_SUBCLASS
               | orjson.OPT_PASSTHROUGH_DATACLASS)

    def encode(body):
        try:
            return orjson.dumps(body, option=options)
        except TypeError:
            return jsonify.encode(body)
    return encode


def select_encoder(name=None):
    """(name, function) of the encoder ``name`` (``ORJSON`` or ``STDLIB``),
    or of the fastest one installed when ``name`` is None.

    :raises: ValueError when orjson is asked for but not installed
    """
    if name in (None, ORJSON):
        encode = _orjson_encoder()
        if encode is not None:
            return ORJSON, encode
        if name == ORJSON:
            raise ValueError('orjson is not installed')
    elif name != STDLIB:
        raise ValueError('unknown JSON encoder %r' % (name,))
    return STDLIB, jsonify.encode


_encoder_name, _encode = select_encoder()


def embedded(text):
    """The JSON value of ``text``, JSON a writer stored (a column holding a
    canonical JSON document), to be put into an answer as it is.

    With orjson it is not parsed: an ``orjson.Fragment`` is written into
    the answer as its text (a list's every row otherwise parsed and
    rebuilt its object, only for the encoder to write it back). With the
    standard library's encoder it is the parsed value.
    """
    return embedder()(text)


def embedder():
    """The function ``embedded`` calls, for a list to call on each row."""
    return orjson.Fragment if _encoder_name == ORJSON else json.loads


if orjson is not None:
    # An answer orjson refuses goes to pecan's encoder whole (see
    # _orjson_encoder): there a fragment is the value of its text.
    jsonify.jsonify.register(orjson.Fragment)(
        lambda fragment: json.loads(orjson.dumps(fragment)))


def use_encoder(name):
    """Encode answers with ``name`` from now on (None: the fastest one);
    for benchmarks and tests."""
    global _encoder_name, _encode
    _encoder_name, _encode = select_encoder(name)


def encoder_name():
    """The name of the encoder answers are encoded with."""
    return _encoder_name


class JsonRenderer:
    """Pecan's ``json`` renderer, with the encoder chosen here."""

    def __init__(self, path, extra_vars):
        pass

    def render(self, template_path, namespace):
        """The JSON text of what a controller exposed as ``json`` returned."""
        return _encode(namespace)
