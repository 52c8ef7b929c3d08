"""The conductor's RPC endpoints; each hands off to a workflow module."""

import functools
import threading

import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.clients import glance as glance_client
from cyborg.clients import nova as nova_client
from cyborg.clients import placement as placement_client
from cyborg.conductor import arqs
from cyborg.conductor import attributes
from cyborg.conductor import binder
from cyborg.conductor import device_profiles
from cyborg.conductor import devices
from cyborg.conductor import drain as drain_workflow
from cyborg.conductor import health
from cyborg.conductor import heartbeats
from cyborg.conductor import history
from cyborg.conductor import os_acc_calls
from cyborg.conductor import prefetching
from cyborg.conductor import programming
from cyborg.conductor import quota
from cyborg.conductor import releasing
from cyborg.conductor import report_digest
from cyborg.conductor import rpcapi
from cyborg.conductor import metrics as conductor_metrics

BINARY = 'cyborg-conductor'


class ConductorManager:
    """Endpoints of the cyborg-conductor topic."""

    target = oslo_messaging.Target(version='1.6')

    def __init__(self, host=None):
        self.host = host or conf.CONF.host
        self._placement = None
        self._placement_lock = threading.Lock()
        agents = agent_rpcapi.AgentAPI(
            version_cap=conf.CONF.upgrade_levels.agent)
        # The process's NovaClient, made from this configuration when the
        # binder first sends events (after the service forked); a
        # GlanceClient with the service's own [glance] credentials for each
        # bind that programs.
        self.binder = binder.Binder(
            self.host, binder.BindSettings.from_conf(conf.CONF),
            nova=functools.partial(nova_client.get_client, conf.CONF),
            agents=agents,
            glance=functools.partial(glance_client.GlanceClient, conf.CONF))
        self.programmer = programming.Programmer(
            self.host, programming.ProgramSettings.from_conf(conf.CONF),
            agents=agents,
            glance_for=functools.partial(glance_client.GlanceClient,
                                         conf.CONF),
            placement_for=lambda: self.placement)
        self.releaser = releasing.Releaser(agents)
        self.prefetcher = prefetching.Prefetcher(
            agents, functools.partial(glance_client.GlanceClient, conf.CONF))
        # [quota]: limits read from Keystone (or [quota] local_limits).
        self.quotas = quota.Quotas.from_conf(conf.CONF)
        # os-acc: plugs bind with this conductor's binder, in the caller's
        # thread, and create ARQs within its quotas; host_status calls wait
        # for the reports noted here.
        self.plugger = os_acc_calls.Plugger(self.binder, self.releaser,
                                            self.quotas)
        self.host_reports = os_acc_calls.HostReports()
        # [health] recovery_reports, [conductor] report_resync_interval.
        self.report_settings = report_digest.ReportSettings.from_conf(
            conf.CONF)
        # Deletes history entries past [conductor] history_retention_days.
        self.pruner = history.Pruner(
            cyborg_context.get_admin_context(),
            history.PruneSettings.from_conf(conf.CONF))

    @property
    def placement(self):
        """The process's Placement client, made on first use."""
        with self._placement_lock:
            if self._placement is None:
                self._placement = placement_client.PlacementClient(conf.CONF)
            return self._placement

    @oslo_messaging.expose
    def report_heartbeat(self, context, host, binary, topic):
        """Record a heartbeat an agent sent; return the Service."""
        return heartbeats.record(context, host, binary, topic)

    @oslo_messaging.expose
    def ping(self, context):
        """Answer with this conductor's host name."""
        return self.host

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    @conductor_metrics.timed_report
    def report_inventory(self, context, host, devices):
        """Record an agent's full inventory, then bring Placement in step
        (an unchanged report: neither, ``report_digest``)."""
        # Once applied (or found unchanged), host_status calls waiting for
        # it look again.
        applied = report_digest.receive(
            context, self.placement, host, devices, self.report_settings,
            on_applied=self.host_reports.reported)
        conductor_metrics.count_report(applied)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def set_device_status(self, context, device_uuid, status, reason=None):
        """Enable or disable a device; return the Device."""
        return devices.set_status(context, self.placement, device_uuid,
                                  status, reason)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def clear_health(self, context, kind, uuid):
        """Clear the health of a device or deployable (RPC 1.6); return
        whether it changed."""
        return health.clear(context, self.placement, kind, uuid)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def set_drain(self, context, kind, uuid, drain, reason=None):
        """Drain or undrain a device or deployable (RPC 1.6); return
        whether its drain mark changed."""
        return drain_workflow.set_drain(context, self.placement, kind, uuid,
                                        drain, reason)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def create_attribute(self, context, values):
        """Add an attribute to a deployable; return the Attribute."""
        return attributes.create(context, self.placement, values)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def delete_attribute(self, context, attribute_uuid):
        """Delete an attribute."""
        attributes.delete(context, self.placement, attribute_uuid)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def create_device_profiles(self, context, profiles):
        """Create every profile of ``profiles`` or none; return DeviceProfiles."""
        return device_profiles.create(context, profiles, self.quotas)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def delete_device_profiles(self, context, refs):
        """Delete the profiles named by ``refs`` (uuids or names), all or none."""
        device_profiles.delete(context, refs)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def create_arqs(self, context, device_profile_name,
                    device_profile_group_id=None):
        """Create the ARQs a device profile asks for; return them."""
        return arqs.create(context, device_profile_name,
                           device_profile_group_id, self.quotas)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def bind_arqs(self, context, bindings):
        """Record the bindings, leased to the binder and claimed in the
        same transaction, then hand them to the binder and return.

        A repeat of a recorded bind (a retry whose first answer was lost)
        returns as the first did, and starts no second bind."""
        recorded = arqs.record_bind(context, bindings,
                                    lease=self.binder.lease,
                                    claim=self.binder.claim_for_recording)
        if not recorded.repeated:
            self.binder.submit(recorded.arq_uuids, recorded.claimed)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def unbind_arqs(self, context, arq_uuids):
        """Unbind ARQs, freeing their attach handles; then the agents
        release them."""
        arqs.unbind(context, arq_uuids, self.releaser)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def delete_arqs(self, context, arq_uuids=None, instance_uuid=None):
        """Delete ARQs by uuid (all or none) or all those of an instance;
        then the agents release the handles they held."""
        arqs.delete(context, arq_uuids, instance_uuid, self.releaser)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def program_deployable(self, context, deployable_uuid, image_id,
                           row_options=None):
        """Program a Glance bitstream into a deployable; return it, with
        what the API shows of it at ``row_options`` (RPC 1.5)."""
        return self.programmer.program(context, deployable_uuid, image_id,
                                       row_options)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def prefetch_bitstream(self, context, image_id):
        """Send a Glance bitstream to the caches of the hosts it fits
        (RPC 1.6); return the hosts asked."""
        return self.prefetcher.prefetch(context, image_id)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def plug_instance(self, context, instance_uuid, hostname, device_rp_uuid,
                      device_profile_name=None, groups=None):
        """Bind an instance's accelerators now (os-acc); return the outcome."""
        return self.plugger.plug(context, instance_uuid, hostname,
                                 device_rp_uuid, device_profile_name, groups)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def unplug_instance(self, context, instance_uuid):
        """Unbind and delete an instance's ARQs; return how many attach
        handles were released."""
        return self.plugger.unplug(context, instance_uuid)

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def host_status(self, context, host, wait=0):
        """Whether ``host``'s agent is up, reported and published."""
        return os_acc_calls.host_status(
            context, self.placement, self.host_reports, host,
            conf.CONF.service_down_time, wait)

    def start_periodic_tasks(self):
        """Start the binder (it resumes recorded binds and times out stuck
        ones) and the pruning of old history entries."""
        self.binder.start()
        self.pruner.start()

    def stop_periodic_tasks(self):
        """Stop the binder and the pruning; recorded work survives in the
        database."""
        self.pruner.stop()
        self.binder.stop()

    def heartbeat(self, context):
        """Record this conductor's own heartbeat (not an RPC endpoint)."""
        heartbeats.record(context, self.host, BINARY, rpcapi.TOPIC)
