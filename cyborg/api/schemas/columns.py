"""The limits of the database columns that request values end up in.

A request value the API accepts must fit its column on every backend, so
the declarations of ``cyborg.api.schemas.declarations`` take their string
lengths and integer ranges from here, and here reads them from the column
types of the SQLAlchemy models (``cyborg/db/models.py``). The API does
not import ``cyborg.db`` (``test_layering``): the columns are reached
through the objects (``TableObject.column``).
"""

import dataclasses

import sqlalchemy as sa

from cyborg.objects import arq
from cyborg.objects import attribute
from cyborg.objects import deployable
from cyborg.objects import device
from cyborg.objects import device_profile

# What MariaDB's TEXT holds, in bytes (PostgreSQL's text holds more).
TEXT_BYTES = 65535
# The ranges of the integer types on MariaDB and PostgreSQL (signed).
INTEGER_RANGES = (
    (sa.SmallInteger, 2 ** 15 - 1),
    (sa.BigInteger, 2 ** 63 - 1),
    (sa.Integer, 2 ** 31 - 1),
)

_OBJECTS = {
    'ARQ': arq.ARQ,
    'Attribute': attribute.Attribute,
    'Deployable': deployable.Deployable,
    'Device': device.Device,
    'DeviceProfile': device_profile.DeviceProfile,
}


@dataclasses.dataclass(frozen=True)
class Column:
    """What a column holds: characters or bytes of text, or an integer range."""

    table: str
    name: str
    max_length: int = None
    max_bytes: int = None
    minimum: int = None
    maximum: int = None
    nullable: bool = True

    @property
    def is_text(self):
        """Whether the column holds text (it cannot hold a NUL on PostgreSQL)."""
        return self.max_length is not None or self.max_bytes is not None


def _limits(column_type):
    if isinstance(column_type, sa.Text):
        return {'max_bytes': TEXT_BYTES}
    if isinstance(column_type, sa.String):
        return {'max_length': column_type.length}
    for integer_type, maximum in INTEGER_RANGES:
        if isinstance(column_type, integer_type):
            return {'minimum': -maximum - 1, 'maximum': maximum}
    raise TypeError('No request value is stored in a %s column'
                    % column_type)


def of(object_name, field):
    """The Column behind ``field`` of the object ``object_name`` (``'Attribute'``).

    :raises: KeyError for an unknown object or field
    """
    column = _OBJECTS[object_name].column(field)
    return Column(table=column.table.name, name=column.name,
                  nullable=column.nullable, **_limits(column.type))
