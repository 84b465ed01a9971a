"""Celery settings derived from repairbot's settings (imported by Celery on first use)."""

from __future__ import annotations

from bot.config import get_settings
from bot.queue.names import REPAIR_QUEUE as _REPAIR_QUEUE

_settings = get_settings()

broker_url = _settings.resolved_broker_url
broker_transport_options = _settings.broker_transport_options
broker_connection_retry_on_startup = True
task_acks_late = True
task_reject_on_worker_lost = True
worker_prefetch_multiplier = 1
task_default_queue = _REPAIR_QUEUE
task_ignore_result = True
task_routes = {"repairbot.*": {"queue": _REPAIR_QUEUE}}
worker_hijack_root_logger = False
broker_connection_max_retries = None
broker_connection_timeout = _settings.broker_connect_timeout_s
task_publish_retry_policy = {
    "max_retries": _settings.broker_publish_retries,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.2,
}
