"""The embedded broker's messages through a real kombu connection: whole files only, each
durable when its send returns, or a block's published together (flushed, then renamed into the
queue) when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from kombu import Connection, Exchange, Queue

from bot.queue import file_broker

file_broker.register()


@pytest.fixture
def connection(tmp_path: Path):
    folder = tmp_path / "broker"
    folder.mkdir()
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder)}
    with Connection("durable-files://localhost/", transport_options=options) as conn:
        yield conn, folder


def _send(conn: Connection, bodies: list[str], name: str = "work") -> None:
    # A name per test: kombu keeps exchanges and bindings in class-level state, across
    # connections, so a second test's folder would get the first's routes.
    exchange = Exchange(f"tasks-{name}", type="direct")
    queue = Queue(name, exchange, routing_key=name)
    with conn.Producer() as producer:
        for body in bodies:
            producer.publish(body, exchange=exchange, routing_key=name, declare=[queue])


def _receive(conn: Connection, name: str = "work") -> list[str]:
    got: list[str] = []
    queue = conn.SimpleQueue(name)
    try:
        while True:
            message = queue.get(block=False)
            got.append(message.payload)
            message.ack()
    except queue.Empty:
        return got
    finally:
        queue.close()


def test_messages_sent_in_one_sync_reach_the_queue_together_when_it_ends(connection) -> None:
    conn, folder = connection
    with file_broker.one_sync():
        _send(conn, ["first", "second"])
        with file_broker.one_sync():  # nested: published with the outer block
            _send(conn, ["third"])
        # Written, not yet in the queue: a consumer sees nothing until they are flushed.
        assert len(list(folder.glob("*.part"))) == 3 and not list(folder.glob("*.work.msg"))
        assert _receive(conn) == []
    assert not list(folder.glob("*.part"))
    assert _receive(conn) == ["first", "second", "third"]  # in order, though in one ms


def test_a_message_outside_a_block_is_in_the_queue_when_its_send_returns(connection) -> None:
    conn, folder = connection
    _send(conn, ["alone"], "alone")
    assert len(list(folder.glob("*.alone.msg"))) == 1 and not list(folder.glob("*.part"))
    assert _receive(conn, "alone") == ["alone"]


def test_publishing_renames_each_message_after_the_flush(tmp_path: Path) -> None:
    partials = [tmp_path / f"{n}.work.msg.part" for n in range(3)]
    for partial in partials:
        partial.write_text("{}")
    file_broker.publish([(str(p), str(p.with_suffix(""))) for p in partials])
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{n}.work.msg" for n in range(3)]
    file_broker.publish([])  # nothing sent in a block: nothing to do


def test_a_flush_that_fails_is_raised_not_lost(tmp_path: Path) -> None:
    # A message whose bytes could not be flushed must not be renamed into the queue.
    gone = tmp_path / "gone.work.msg.part"
    with pytest.raises(FileNotFoundError):
        file_broker.publish([(str(gone), str(tmp_path / "gone.work.msg"))])
    assert list(tmp_path.iterdir()) == []
