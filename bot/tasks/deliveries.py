"""GitHub deliveries: dispatch a stored webhook to the handlers registered for its event."""

from __future__ import annotations

from bot.db.models import Delivery
from bot.tasks.base import RepairbotTask
from bot.tasks.celery_app import app


@app.task(name="repairbot.process_delivery", base=RepairbotTask, bind=True)
def process_delivery(self: RepairbotTask, delivery_id: int) -> None:
    """Mark a stored delivery processed; event handlers (``/bot``, PR state) plug in here."""
    with self.session() as session:
        delivery = session.get(Delivery, delivery_id)
        if delivery is None or delivery.outcome != "stored":
            return
        delivery.outcome = "processed"
