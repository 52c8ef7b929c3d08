"""Options of the [quota] group, and oslo.limit's [oslo_limit] group.

Quotas are off by default. ``driver = unified_limits`` reads Keystone's
unified limits through oslo.limit, which takes its Keystone credentials
and the accelerator endpoint from [oslo_limit] (listed in the sample under
oslo.limit's own namespace). ``driver = local`` reads the limits from
``local_limits`` instead, for an all-in-one without Keystone. What is
limited and how usage is counted: ``cyborg.conductor.quota``.
"""

from oslo_config import cfg
from oslo_config import types
from oslo_limit import opts as limit_opts

NOOP = 'noop'
UNIFIED_LIMITS = 'unified_limits'
LOCAL = 'local'

group = cfg.OptGroup('quota', title='Per-project limits (quotas)')

opts = [
    cfg.StrOpt(
        'driver', default=NOOP,
        choices=[
            (NOOP, 'No limit is enforced.'),
            (UNIFIED_LIMITS, "Keystone's unified limits, read with "
                             'oslo.limit ([oslo_limit] options): the '
                             "registered limits of the accelerator "
                             "service's endpoint and the project limits "
                             'that override them.'),
            (LOCAL, 'The limits of local_limits, for every project, '
                    'without Keystone (an all-in-one or a test).'),
        ],
        help='Where the limits on what each project holds come from. A '
             'resource without a limit is not limited. The resources are '
             '"class:<RESOURCE_CLASS>" (accelerators held by the ARQs of a '
             'project, e.g. class:FPGA, class:PGPU, class:VGPU, or that of a '
             'custom resource class) and "device_profiles" (device '
             'profiles, counted over all projects).'),
    cfg.Opt(
        'local_limits', default={},
        type=types.Dict(value_type=types.Integer(min=-1),
                        key_value_separator='='),
        sample_default='class:FPGA=2,device_profiles=10',
        help='Limits used when driver is "local": comma-separated '
             'resource=limit pairs applying to every project, like '
             "Keystone's registered limits (-1 is unlimited). A resource "
             'not listed is not limited.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)
    limit_opts.register_opts(conf)


def list_opts():
    return {group: opts}
