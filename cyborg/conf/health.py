"""Options of the [health] group: how the conductor treats what the
drivers report of a device's health (``cyborg.conductor.health``).

A device reported ``degraded`` leaves Placement's offer at once and comes
back after ``recovery_reports`` healthy reports in a row; one reported
``failed`` stays out until an operator clears it
(``POST /v2/devices/{uuid}/clear_health``).
"""

from oslo_config import cfg

group = cfg.OptGroup('health', title='Device and deployable health')

opts = [
    cfg.IntOpt(
        'recovery_reports', default=3, min=1,
        help='How many inventory reports in a row must find a degraded '
             'device healthy before it is healthy again and offered to the '
             'scheduler. A deployable degraded by a failed verification of '
             'its programming recovers after as many healthy reports of '
             'its device. A failed device or deployable never recovers by '
             'itself: an operator clears it. With [agent] report_interval '
             'of 60 seconds, the default brings a device back three '
             'minutes after its last fault.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}
