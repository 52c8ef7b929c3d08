"""The clear_health action of devices and deployables (2.6) and the values
of the ``?health=`` list filter.

``POST .../clear_health`` takes no body (an empty object is accepted too):
it only makes its target healthy again.
"""

from cyborg.api.schemas import body as body_schemas
from cyborg.api.schemas import declarations
from cyborg.api.schemas import resources
from cyborg.common import vocabulary

BODY = declarations.Object(
    fields={}, description='Optional: no body, or an empty object.')

# The values of ?health=, and its declaration (from 2.6).
FILTER_VALUES = vocabulary.Health.ALL
FILTER = declarations.Enum(
    FILTER_VALUES,
    messages={'choice': '{name} must be one of {choices}, not {value!r}'},
    extensions={resources.MICROVERSION: '2.6'})


def check_body(request):
    """Refuse a clear_health body other than none or ``{}``.

    :raises: exception.InvalidParameterValue (400) naming the unknown
        field; the errors of ``body.json_body``
    """
    if body_schemas.ENVIRON_KEY in request.environ or request.content_length:
        BODY.parse('body', body_schemas.json_body(request))
