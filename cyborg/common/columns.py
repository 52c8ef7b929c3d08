"""The limits of the database columns that request values end up in.

``cyborg/db/models.py`` gives the columns of the tables requests reach
their types from these limits, and the API's schemas bound request values
by the same limits, so that a value the API accepts fits its column on
every backend.
"""

import dataclasses

# What MariaDB's TEXT holds, in bytes (PostgreSQL's text holds more).
TEXT_BYTES = 65535
# The largest INTEGER of MariaDB and PostgreSQL (signed, 32 bits).
INTEGER_MAX = 2 ** 31 - 1

# Lengths several tables share.
UUID_LENGTH = 36
NAME_LENGTH = 255
HOST_LENGTH = 255


@dataclasses.dataclass(frozen=True)
class Column:
    """What a column holds: characters or bytes of text, or an integer range."""

    max_length: int = None
    max_bytes: int = None
    minimum: int = None
    maximum: int = None

    @property
    def is_text(self):
        """Whether the column holds text (it cannot hold a NUL on PostgreSQL)."""
        return self.max_length is not None or self.max_bytes is not None


def string(length):
    """A column of at most ``length`` characters."""
    return Column(max_length=length)


TEXT = Column(max_bytes=TEXT_BYTES)
INTEGER = Column(minimum=-INTEGER_MAX - 1, maximum=INTEGER_MAX)
UUID = string(UUID_LENGTH)

# The columns of each table a request reaches, by the name of its object,
# timestamps and flags aside (no request value is stored in them).
TABLES = {
    'Device': {
        'id': INTEGER, 'uuid': UUID, 'type': string(30),
        'vendor': string(255), 'model': string(255),
        'std_board_info': TEXT, 'vendor_board_info': TEXT,
        'hostname': string(HOST_LENGTH), 'status': string(30),
        'status_reason': string(255),
        'health': string(16), 'health_reason': string(255),
        'healthy_reports': INTEGER,
    },
    'Deployable': {
        'id': INTEGER, 'uuid': UUID, 'parent_id': INTEGER,
        'root_id': INTEGER, 'name': string(NAME_LENGTH),
        'num_accelerators': INTEGER, 'device_id': INTEGER,
        'driver_name': string(100), 'rp_uuid': UUID, 'bitstream_id': UUID,
        'provider_name': string(NAME_LENGTH),
        'programming_owner': string(HOST_LENGTH),
        'health': string(16), 'health_reason': string(255),
        'healthy_reports': INTEGER,
    },
    'Attribute': {
        'id': INTEGER, 'uuid': UUID, 'deployable_id': INTEGER,
        'parent_attribute_id': INTEGER, 'key': string(255), 'value': TEXT,
    },
    'DeviceProfile': {
        'id': INTEGER, 'uuid': UUID, 'name': string(NAME_LENGTH),
        'description': TEXT, 'profile_json': TEXT,
    },
    'ARQ': {
        'id': INTEGER, 'uuid': UUID, 'state': string(20),
        'device_profile_id': INTEGER, 'device_profile_group_id': INTEGER,
        'hostname': string(HOST_LENGTH), 'device_rp_uuid': UUID,
        'instance_uuid': UUID, 'project_id': string(255),
        'attach_handle_id': INTEGER, 'deployable_id': INTEGER,
        'bind_owner': string(HOST_LENGTH), 'state_reason': string(255),
        'bind_user_id': string(255), 'bind_project_id': string(255),
        'bind_request_id': string(255),
    },
    # The history of devices and deployables (no request value is stored
    # in it; its limits are the columns' all the same).
    'HistoryEntry': {
        'device_id': INTEGER, 'deployable_id': INTEGER,
        'device_uuid': UUID, 'deployable_uuid': UUID,
        'event': string(30), 'outcome': string(30), 'reason': string(255),
        'image_id': UUID, 'image_hash': string(128), 'arq_uuid': UUID,
        'instance_uuid': UUID, 'arq_project_id': string(255),
        'user_id': string(255), 'project_id': string(255),
        'request_id': string(255), 'agent': string(HOST_LENGTH),
    },
}


def of(table, name):
    """The limits of column ``name`` of ``table`` (its object's name, e.g.
    ``'Attribute'``).

    :raises: KeyError for an unknown table or column
    """
    return TABLES[table][name]
