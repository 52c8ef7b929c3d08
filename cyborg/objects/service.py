"""Service: a conductor or agent process and its last heartbeat."""

import datetime

from oslo_utils import timeutils

from cyborg import exception
from cyborg.db.queries import services as service_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Service(base.CyborgObject):
    """One row of the services table; ``is_up`` reads the heartbeat's age."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'host': fields.StringField(),
        'binary': fields.StringField(),
        'topic': fields.StringField(nullable=True),
        'report_count': fields.IntegerField(),
        'last_seen_up': fields.DateTimeField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def record_heartbeat(cls, context, host, binary, topic):
        """Count one heartbeat of ``binary`` on ``host``; return the service."""
        now = timeutils.utcnow()
        row = service_queries.record_heartbeat(context, host, binary, topic,
                                               now)
        return cls._from_row(context, row)

    @classmethod
    def get_by_host_and_binary(cls, context, host, binary):
        """The service of ``binary`` on ``host``.

        :raises: cyborg.exception.ResourceNotFound
        """
        row = service_queries.service_for(context, host, binary)
        if row is None:
            raise exception.ResourceNotFound(
                resource='Service', key='host/binary',
                value='%s/%s' % (host, binary))
        return cls._from_row(context, row)

    @classmethod
    def list(cls, context):
        """Every service, ordered by binary then host."""
        return [cls._from_row(context, row)
                for row in service_queries.all_services(context)]

    def is_up(self, down_time):
        """Whether the last heartbeat is at most ``down_time`` seconds old.

        The caller hands in its [DEFAULT] service_down_time.
        """
        last_seen = self.last_seen_up
        if last_seen is None:
            return False
        down_time = datetime.timedelta(seconds=down_time)
        now = timeutils.utcnow(with_timezone=True)
        if last_seen.tzinfo is None:
            last_seen = last_seen.replace(tzinfo=datetime.timezone.utc)
        return now - last_seen <= down_time

    @classmethod
    def _from_row(cls, context, row):
        service = cls(context)
        for name in cls.fields:
            setattr(service, name, getattr(row, name))
        service.obj_reset_changes()
        return service
