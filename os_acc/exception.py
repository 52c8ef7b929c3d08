"""The exceptions os-acc raises, besides ``ValueError`` and ``TypeError``
for malformed arguments (their message names the key at fault).

Every one derives from ``OsAccError``; those saying Cyborg could not be
reached derive from ``CyborgUnavailable`` (whether the operation was carried
out is then unknown: plug and unplug may be called again, they are
idempotent).
"""


class OsAccError(Exception):
    """Base of os-acc's exceptions."""


class CyborgUnavailable(OsAccError):
    """The conductor did not answer in time, the message bus cannot be
    reached, or the conductors are of an older release ([upgrade_levels]
    conductor pins a version without os-acc's calls)."""


class CyborgAgentUnavailable(CyborgUnavailable):
    """``initialize``: the agent of this host is not up, has not reported
    its devices, or they are not published to Placement yet, or the
    conductor did not answer, within the timeout."""

    def __init__(self, host, reason):
        self.host = host
        self.reason = reason
        super().__init__('Cyborg agent of %s unavailable: %s'
                         % (host, reason))


class PlugFailed(OsAccError):
    """``plug`` could not bind every accelerator the flavor asks for on the
    selected resource provider (no free attach handle, a device that failed
    to prepare or to be programmed, a bind that timed out...).

    Nothing is held for the instance afterwards. ``reasons`` lists why, one
    entry per accelerator that failed.
    """

    def __init__(self, instance_uuid, reasons):
        self.instance_uuid = instance_uuid
        self.reasons = list(reasons)
        super().__init__('Accelerators of instance %s could not be plugged: %s'
                         % (instance_uuid, '; '.join(self.reasons)))


class PlugConflict(OsAccError):
    """``plug``: the instance has accelerators on another resource provider
    or host, or from another device profile (unplug it first), or another
    conductor is plugging it right now."""


class DeviceProfileNotFound(OsAccError, ValueError):
    """``plug``: the flavor's ``accel:device_profile`` names no profile."""

    def __init__(self, name):
        self.name = name
        super().__init__("flavor_extra_specs['accel:device_profile'] names "
                         "no device profile: %r" % (name,))


class Unsupported(OsAccError):
    """An instance operation that cannot keep its accelerators:
    live migration (``live_migrate``), and snapshots to boot from
    (``snapshot``). Raised before anything changes: the instance keeps
    its accelerators. ``operation`` names it."""

    def __init__(self, operation, instance_uuid, reason):
        self.operation = operation
        self.instance_uuid = instance_uuid
        self.reason = reason
        super().__init__('%s of instance %s is not supported with '
                         'accelerators: %s' % (operation, instance_uuid,
                                               reason))
