"""octavia-worker with the three fully-populated-create fixes of Octavia 11.0.1 (opt-in).

Debian 12 ships Octavia 11.0.0 (Zed). A fully-populated create (one POST with listeners,
pools, members, policies and rules) does not work there: the load balancer goes ACTIVE and its
children stay PENDING_CREATE for good. Three bugs, all fixed upstream in 11.0.1 (and later):

- Story 2010335 (Change-Id Id328b27db1ec9c8e17bf18120259e41e75dab3b9): with the jobboard
  disabled, ControllerWorker.run_flow handed every keyword argument to taskflow instead of to
  the flow factory, so the create flow was built without the listeners.
- Story 2010488 (Change-Id I98cce51a2536bcf204e5753ce4984af57e7e69e3): the listeners part of
  that flow (SINGLE topology) lacked the task that provides `amphorae_network_config`, so with
  the first fix alone taskflow refuses the flow (MissingDependencies).
- Story 2010426 (Change-Id Ie5fb25e292461baca38499091e8f9b9a53e3ddcd): pools that no listener
  or policy references were never marked ACTIVE.

This launcher applies the same three behaviours in memory, then runs Debian's octavia-worker.
Nothing on disk is modified. functional/openstack.sh keeps Debian's unpatched worker by default,
because the driver must cope with it too (it detects the stuck children and rebuilds object by
object); `openstack.sh octavia-fixes on` restarts the worker with this launcher, i.e. behaving
like a Zed cloud on 11.0.1 or later.
"""
import sys

from octavia.common import constants
from octavia.controller.worker.v2 import controller_worker
from octavia.controller.worker.v2.flows import load_balancer_flows
from octavia.controller.worker.v2.tasks import amphora_driver_tasks
from octavia.controller.worker.v2.tasks import database_tasks
from octavia.controller.worker.v2.tasks import network_tasks
from octavia.db import api as db_apis
from taskflow.listeners import logging as tf_logging

# -- Story 2010335: flow-factory arguments go to the factory, only `store` to taskflow.
_run_flow = controller_worker.ControllerWorker.run_flow


def run_flow(self, func, *args, **kwargs):
    if controller_worker.CONF.task_flow.jobboard_enabled:
        return _run_flow(self, func, *args, **kwargs)
    store = kwargs.pop('store', None)
    engine = self.tf_engine.taskflow_load(func(*args, **kwargs), store=store)
    with tf_logging.DynamicLoggingListener(engine, log=controller_worker.LOG):
        engine.run()


# -- Story 2010488: provide amphorae_network_config before the post-network-plug task.
_create_listeners_flow = load_balancer_flows.LoadBalancerFlows._create_listeners_flow


def create_listeners_flow(self):
    tasks = []
    for task in _create_listeners_flow(self):
        if isinstance(task, amphora_driver_tasks.AmphoraePostNetworkPlug):
            tasks.append(network_tasks.GetAmphoraeNetworkConfigs(
                requires=constants.LOADBALANCER_ID,
                provides=constants.AMPHORAE_NETWORK_CONFIG))
        tasks.append(task)
    return tasks


# -- Story 2010426: pools of the load balancer are marked ACTIVE too (before the load
#    balancer itself, so that a client that sees the load balancer ACTIVE sees its pools ACTIVE).
_mark_lb_active = database_tasks.MarkLBActiveInDB.execute


def mark_lb_active(self, loadbalancer):
    if self.mark_subobjects:
        db_lb = self.loadbalancer_repo.get(
            db_apis.get_session(), id=loadbalancer[constants.LOADBALANCER_ID])
        for pool in db_lb.pools:
            self._mark_pool_status(pool, constants.ACTIVE)
    return _mark_lb_active(self, loadbalancer)


controller_worker.ControllerWorker.run_flow = run_flow
load_balancer_flows.LoadBalancerFlows._create_listeners_flow = create_listeners_flow
database_tasks.MarkLBActiveInDB.execute = mark_lb_active

if __name__ == '__main__':
    from octavia.cmd.octavia_worker import main
    sys.argv[0] = 'octavia-worker'
    sys.exit(main())
